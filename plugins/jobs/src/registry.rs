//! The registry itself: every session's jobs under ids `<kind>-<n>`, their output (a stream
//! job's since the last read, a final job's result), their status, the waits on them, and the
//! one notice an owner gets when a job it has not collected or killed ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::RString;
use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_jobs_seam::{JOBS_CHANGED, JobControlBox};
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::{Channel, Context, EmitEvent, LogLevel, lock};
use dsh_protocol::{
    ContentBlock, JobEnd, JobOutputMode, JobStart, JobStatus, JobSummary, Message, MessageSource,
    PluginSource, job_status_line,
};
use tokio::sync::Notify;

use crate::error::JobsError;

/// Bytes of a stream job's unread output kept (the oldest go first).
const KEPT: usize = 64_000;
/// Characters of a notice's summary (the one-line form pages show).
const SUMMARY_CHARS: usize = 120;

struct State {
    status: JobStatus,
    detail: Option<String>,
    /// A stream job's output not read yet; a final job's result once it settled.
    unread: String,
    /// Unread bytes dropped to keep `unread` under [`KEPT`].
    dropped: usize,
    /// A final job's result, kept after reads (they are idempotent).
    result: Option<String>,
    /// The owner learnt how it ended (a terminal read, a kill, or the notice): no notice more.
    reported: bool,
    /// `job_output` calls waiting on it with `wait: true`: one of them reads the end, so no
    /// notice is sent beside it.
    waiters: usize,
    /// It settled and its notice is still being sent: its result is not settled yet for a
    /// runner waiting on it.
    noticing: bool,
}

pub(crate) struct Job {
    pub(crate) id: String,
    /// When it started, among all jobs: lists are oldest first.
    order: u64,
    pub(crate) start: JobStart,
    /// Dropped once the job settled: what it holds (a process) is the producer's to let go.
    control: Mutex<Option<Arc<JobControlBox>>>,
    state: Mutex<State>,
    done: Notify,
}

/// What a read found.
pub(crate) struct Read {
    pub(crate) text: String,
    pub(crate) status_line: String,
}

/// What `job_kill` did.
pub(crate) enum Killed {
    Requested,
    AlreadyFinished(String),
}

pub(crate) struct Registry {
    ctx: Context,
    jobs: Mutex<BTreeMap<String, Arc<Job>>>,
    counters: Mutex<HashMap<String, u64>>,
    /// Told after every settlement (its notice already sent).
    settled: Notify,
    /// Turns each idle session was woken for since a person last wrote to it: a woken turn
    /// may start the job whose end wakes it again, so waking is bounded.
    wakes: Mutex<HashMap<String, u32>>,
    max_wakes: u32,
    /// Jobs a session keeps listed (finished ones beyond it are forgotten, oldest first).
    kept: usize,
    /// `jobs/changed`, resolved once.
    changed: Option<Channel<EmitEvent<RString>>>,
    /// Notices of idle sessions whose wakes were spent: they enter the session's next turn.
    deferred: Mutex<HashMap<String, Vec<Message>>>,
}

impl Registry {
    pub(crate) fn new(ctx: Context, max_wakes: u32, kept: usize) -> Self {
        Self {
            changed: ctx.channel(&JOBS_CHANGED).ok(),
            ctx,
            jobs: Mutex::default(),
            counters: Mutex::default(),
            settled: Notify::new(),
            wakes: Mutex::default(),
            max_wakes,
            kept,
            deferred: Mutex::default(),
        }
    }

    /// A person wrote to `session`: it may be woken again, and the notices held back for it
    /// enter the turn the person opened (answered).
    pub(crate) fn person_wrote(&self, session: &str) -> Vec<Message> {
        lock(&self.wakes).remove(session);
        lock(&self.deferred).remove(session).unwrap_or_default()
    }

    /// Opens a turn with the notices held back for `session` (a runner standing in for the
    /// person, with nothing else left to wait for); answers how many there were.
    pub(crate) fn release_deferred(&self, session: &str) -> usize {
        let held = lock(&self.deferred).remove(session).unwrap_or_default();
        lock(&self.wakes).remove(session);
        let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS_SERVICE) else {
            return 0;
        };
        let mut sent = 0;
        for message in &held {
            match agents.followup(session, message) {
                Ok(_) => sent += 1,
                Err(error) => self.ctx.log(
                    LogLevel::Warn,
                    &format!("a held-back job notice did not reach `{session}`: {error}"),
                ),
            }
        }
        sent
    }

    /// A session went away: its running jobs are asked to stop (no notices follow) and its
    /// jobs are forgotten.
    pub(crate) fn forget_session(&self, session: &str) {
        self.cancel_where(|job| job.start.session == session, "its session went away");
        lock(&self.jobs).retain(|_, job| job.start.session != session);
        lock(&self.wakes).remove(session);
        lock(&self.deferred).remove(session);
        self.changed(session);
    }

    /// Whether an idle `session` may be woken once more (and counts it).
    fn may_wake(&self, session: &str) -> bool {
        let mut wakes = lock(&self.wakes);
        let spent = wakes.entry(session.to_owned()).or_insert(0);
        let may = *spent < self.max_wakes;
        if may {
            *spent += 1;
        }
        may
    }

    pub(crate) fn start(
        &self,
        start: JobStart,
        control: JobControlBox,
    ) -> Result<String, JobsError> {
        if start.session.is_empty() {
            return Err(JobsError::NoSession);
        }
        let kind = start.kind.trim();
        if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(JobsError::Kind(kind.to_owned()));
        }
        let (id, order) = {
            let mut counters = lock(&self.counters);
            let next = counters.entry(kind.to_owned()).or_insert(0);
            *next += 1;
            let id = format!("{kind}-{next}");
            let all = counters.entry(String::new()).or_insert(0);
            *all += 1;
            (id, *all)
        };
        let session = start.session.clone();
        let job = Arc::new(Job {
            id: id.clone(),
            order,
            start,
            control: Mutex::new(Some(Arc::new(control))),
            state: Mutex::new(State {
                status: JobStatus::Running,
                detail: None,
                unread: String::new(),
                dropped: 0,
                result: None,
                reported: false,
                waiters: 0,
                noticing: false,
            }),
            done: Notify::new(),
        });
        lock(&self.jobs).insert(id.clone(), job);
        self.evict(&session);
        self.changed(&session);
        Ok(id)
    }

    /// Forgets `session`'s oldest jobs beyond [`Registry::kept`] that ended and were reported:
    /// a long session's finished jobs do not pile up; running ones are never dropped.
    fn evict(&self, session: &str) {
        let mut jobs = lock(&self.jobs);
        let mut ended: Vec<(u64, String)> = jobs
            .values()
            .filter(|job| job.start.session == session)
            .filter(|job| {
                let state = lock(&job.state);
                state.status.is_terminal() && state.reported && !state.noticing
            })
            .map(|job| (job.order, job.id.clone()))
            .collect();
        let total = jobs
            .values()
            .filter(|job| job.start.session == session)
            .count();
        ended.sort();
        for (_, id) in ended.into_iter().take(total.saturating_sub(self.kept)) {
            jobs.remove(&id);
        }
    }

    fn job(&self, id: &str) -> Option<Arc<Job>> {
        lock(&self.jobs).get(id).cloned()
    }

    /// The job `id` as `session` may see it: only its owner does.
    pub(crate) fn owned(&self, session: &str, id: &str) -> Result<Arc<Job>, JobsError> {
        self.job(id.trim())
            .filter(|job| job.start.session == session)
            .ok_or_else(|| JobsError::NotFound(id.to_owned()))
    }

    pub(crate) fn append(&self, id: &str, output: &str) {
        let Some(job) = self.job(id) else { return };
        let mut state = lock(&job.state);
        if state.status.is_terminal() {
            return;
        }
        state.unread.push_str(output);
        if state.unread.len() > KEPT {
            let mut cut = state.unread.len() - KEPT;
            while !state.unread.is_char_boundary(cut) {
                cut += 1;
            }
            state.unread.drain(..cut);
            state.dropped += cut;
        }
    }

    pub(crate) fn settle(&self, id: &str, end: JobEnd) {
        let Some(job) = self.job(id) else { return };
        let quiet = end.quiet;
        let notify = {
            let mut state = lock(&job.state);
            if state.status.is_terminal() {
                return;
            }
            state.status = match end.status {
                JobStatus::Completed | JobStatus::Killed => end.status,
                _ => JobStatus::Failed,
            };
            state.detail = end.detail.filter(|detail| !detail.is_empty());
            if job.start.output == JobOutputMode::Final {
                state.result = end.output.clone();
            } else if let Some(output) = end.output {
                state.unread.push_str(&output);
            }
            let notify = !state.reported && !quiet && state.waiters == 0;
            state.reported = true;
            state.noticing = notify;
            notify
        };
        lock(&job.control).take();
        job.done.notify_waiters();
        if notify {
            self.tell_owner(&job);
            lock(&job.state).noticing = false;
        }
        self.settled.notify_waiters();
        self.changed(&job.start.session);
    }

    /// The final-output jobs of `session` still running (or whose notice is on its way), and
    /// the notices held back for it.
    pub(crate) fn pending_results(&self, session: &str) -> usize {
        self.running_results(session) + lock(&self.deferred).get(session).map_or(0, Vec::len)
    }

    /// The final-output jobs of `session` still running, or whose notice is on its way.
    fn running_results(&self, session: &str) -> usize {
        lock(&self.jobs)
            .values()
            .filter(|job| job.start.session == session && job.start.output == JobOutputMode::Final)
            .filter(|job| {
                let state = lock(&job.state);
                !state.status.is_terminal() || state.noticing
            })
            .count()
    }

    pub(crate) async fn results_settled(&self, session: &str) {
        loop {
            // Registered before the check, so a settlement in between wakes it.
            let settled = self.settled.notified();
            if self.running_results(session) == 0 {
                return;
            }
            settled.await;
        }
    }

    /// Asks every running job of `session` to stop (its run is being ended): no notices follow.
    pub(crate) fn cancel_session(&self, session: &str, reason: &str) {
        self.cancel_where(|job| job.start.session == session, reason);
    }

    /// Asks every running job `which` selects to stop; none of them sends a notice.
    fn cancel_where(&self, which: impl Fn(&Job) -> bool, reason: &str) {
        let jobs: Vec<Arc<Job>> = lock(&self.jobs)
            .values()
            .filter(|job| which(job))
            .cloned()
            .collect();
        for job in jobs {
            let running = {
                let mut state = lock(&job.state);
                state.reported = true;
                let running = !state.status.is_terminal();
                if running {
                    state.status = JobStatus::Stopping;
                }
                running
            };
            let control = lock(&job.control).clone();
            if let (true, Some(control)) = (running, control) {
                control.cancel(reason.into());
                self.changed(&job.start.session);
            }
        }
    }

    /// Reads what is new, marking a terminal job reported.
    pub(crate) fn read(&self, job: &Job) -> Read {
        let mut state = lock(&job.state);
        let terminal = state.status.is_terminal();
        let mut text = match job.start.output {
            JobOutputMode::Stream => std::mem::take(&mut state.unread),
            JobOutputMode::Final if terminal => state.result.clone().unwrap_or_default(),
            JobOutputMode::Final => String::new(),
        };
        if state.dropped > 0 {
            text = format!(
                "[{} earlier bytes were dropped to keep the last {KEPT}]\n{text}",
                state.dropped
            );
            state.dropped = 0;
        }
        if terminal {
            state.reported = true;
        }
        Read {
            text,
            status_line: job_status_line(state.status, state.detail.as_deref()),
        }
    }

    /// Waits until `job` is terminal or `timeout` passed.
    pub(crate) async fn wait(&self, job: &Job, timeout: Duration) {
        /// Counts the wait on its job for as long as it lasts (a cancelled call included).
        struct Waiting<'a>(&'a Job);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                let mut state = lock(&self.0.state);
                state.waiters = state.waiters.saturating_sub(1);
            }
        }
        lock(&job.state).waiters += 1;
        let _waiting = Waiting(job);
        let deadline = self.ctx.sleep(timeout);
        let mut deadline = std::pin::pin!(deadline);
        loop {
            let done = job.done.notified();
            if lock(&job.state).status.is_terminal() {
                return;
            }
            if let Either::Right(()) = first_of(done, deadline.as_mut()).await {
                return;
            }
        }
    }

    pub(crate) fn kill(&self, job: &Job, reason: &str) -> Killed {
        {
            let mut state = lock(&job.state);
            if state.status.is_terminal() {
                state.reported = true;
                return Killed::AlreadyFinished(job_status_line(
                    state.status,
                    state.detail.as_deref(),
                ));
            }
            state.status = JobStatus::Stopping;
            state.reported = true;
        }
        if let Some(control) = lock(&job.control).clone() {
            control.cancel(reason.into());
        }
        self.changed(&job.start.session);
        Killed::Requested
    }

    /// The jobs of `session`, oldest first.
    pub(crate) fn list(&self, session: &str) -> Vec<JobSummary> {
        let mut jobs: Vec<Arc<Job>> = lock(&self.jobs)
            .values()
            .filter(|job| job.start.session == session)
            .cloned()
            .collect();
        jobs.sort_by_key(|job| job.order);
        jobs.iter()
            .map(|job| {
                let state = lock(&job.state);
                JobSummary {
                    id: job.id.clone(),
                    kind: job.start.kind.clone(),
                    label: job.start.label.clone(),
                    status: state.status,
                    detail: state.detail.clone(),
                }
            })
            .collect()
    }

    /// Tells whoever shows `session`'s jobs that they changed.
    fn changed(&self, session: &str) {
        if let Some(channel) = &self.changed {
            let _ = channel.emit(&RString::from(session));
        }
    }

    /// Asks every running job to stop (the registry goes away); no notices follow.
    pub(crate) fn cancel_all(&self, reason: &str) {
        self.cancel_where(|_| true, reason);
    }

    /// The owner learns the job ended: into its running turn's next step, or, idle, as a
    /// turn of its own (unless it was woken `max_wakes` times since a person last wrote: then
    /// the notice is held back for the turn the person opens).
    fn tell_owner(&self, job: &Job) {
        let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS_SERVICE) else {
            return;
        };
        let status_line = {
            let state = lock(&job.state);
            job_status_line(state.status, state.detail.as_deref())
        };
        let (kind, label) = (&job.start.kind, &job.start.label);
        let text = format!(
            "background job {} ({kind}: {label}) finished {status_line}. Read its output with job_output.",
            job.id
        );
        let mut source = PluginSource {
            plugin: Some("tool-jobs".to_owned()),
            form: Some("notice".to_owned()),
            ..PluginSource::default()
        };
        source.extra.insert(
            "summary".to_owned(),
            bounded(&format!("{kind} {label} {status_line}")).into(),
        );
        let message = Message::user(
            "",
            vec![ContentBlock::text(text)],
            MessageSource::Plugin(source),
        );
        let owner = &job.start.session;
        // Steered, not injected, into a running turn: the wake is a no-op while it runs and
        // opens a turn if it ended in between, so the notice is never left with nothing to
        // claim it.
        let sent = if agents.is_running(owner) {
            agents.steer(owner, &message)
        } else if self.may_wake(owner) {
            agents.followup(owner, &message)
        } else {
            lock(&self.deferred)
                .entry(owner.clone())
                .or_default()
                .push(message);
            return;
        };
        if let Err(error) = sent {
            self.ctx.log(
                LogLevel::Warn,
                &format!(
                    "the end of background job {} did not reach its session: {error}",
                    job.id
                ),
            );
        }
    }
}

/// `text` cut to [`SUMMARY_CHARS`] characters, the cut marked with `…`.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(SUMMARY_CHARS - 1) {
        Some((cut, _)) if text.chars().count() > SUMMARY_CHARS => format!("{}…", &text[..cut]),
        _ => text.to_owned(),
    }
}
