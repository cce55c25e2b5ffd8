//! The registry itself: every session's jobs under ids `<kind>-<n>`, their output (a stream
//! job's since the last read, a final job's result), their status, the waits on them, and the
//! one notice an owner gets when a job it has not collected or killed ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agent_seam::{AGENTS, AgentsExt, AgentsService};
use dsh_jobs_seam::JobControlBox;
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::{Context, LogLevel, lock};
use dsh_protocol::{
    AgentStatus, ContentBlock, JobEnd, JobOutputMode, JobStart, JobStatus, Message, MessageSource,
    PluginSource, job_status_line,
};
use tokio::sync::Notify;

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
}

pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) start: JobStart,
    control: JobControlBox,
    state: Mutex<State>,
    done: Notify,
}

/// What a read found.
pub(crate) struct Read {
    pub(crate) text: String,
    pub(crate) status_line: String,
}

/// One line of `job_list`.
pub(crate) struct Listed {
    pub(crate) id: String,
    pub(crate) kind: String,
    pub(crate) label: String,
    pub(crate) status: JobStatus,
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
}

impl Registry {
    pub(crate) fn new(ctx: Context, max_wakes: u32) -> Self {
        Self {
            ctx,
            jobs: Mutex::default(),
            counters: Mutex::default(),
            settled: Notify::new(),
            wakes: Mutex::default(),
            max_wakes,
        }
    }

    /// A person wrote to `session`: it may be woken again.
    pub(crate) fn person_wrote(&self, session: &str) {
        lock(&self.wakes).remove(session);
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

    pub(crate) fn start(&self, start: JobStart, control: JobControlBox) -> Result<String, String> {
        if start.session.is_empty() {
            return Err("a job needs the session that owns it".to_owned());
        }
        let kind = start.kind.trim();
        if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "job kind `{kind}` is not a plain word (it prefixes the job ids)"
            ));
        }
        let id = {
            let mut counters = lock(&self.counters);
            let next = counters.entry(kind.to_owned()).or_insert(0);
            *next += 1;
            format!("{kind}-{next}")
        };
        let job = Arc::new(Job {
            id: id.clone(),
            start,
            control,
            state: Mutex::new(State {
                status: JobStatus::Running,
                detail: None,
                unread: String::new(),
                dropped: 0,
                result: None,
                reported: false,
            }),
            done: Notify::new(),
        });
        lock(&self.jobs).insert(id.clone(), job);
        Ok(id)
    }

    fn job(&self, id: &str) -> Option<Arc<Job>> {
        lock(&self.jobs).get(id).cloned()
    }

    /// The job `id` as `session` may see it: only its owner does.
    pub(crate) fn owned(&self, session: &str, id: &str) -> Result<Arc<Job>, String> {
        self.job(id.trim())
            .filter(|job| job.start.session == session)
            .ok_or_else(|| {
                format!("no background job `{id}` in this session (job_list lists them)")
            })
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
            let notify = !state.reported;
            state.reported = true;
            notify
        };
        job.done.notify_waiters();
        if notify {
            self.tell_owner(&job);
        }
        self.settled.notify_waiters();
    }

    /// The final-output jobs of `session` still running.
    pub(crate) fn pending_results(&self, session: &str) -> usize {
        lock(&self.jobs)
            .values()
            .filter(|job| job.start.session == session && job.start.output == JobOutputMode::Final)
            .filter(|job| !lock(&job.state).status.is_terminal())
            .count()
    }

    pub(crate) async fn results_settled(&self, session: &str) {
        loop {
            // Registered before the check, so a settlement in between wakes it.
            let settled = self.settled.notified();
            if self.pending_results(session) == 0 {
                return;
            }
            settled.await;
        }
    }

    /// Asks every running job of `session` to stop (its run is being ended): no notices follow.
    pub(crate) fn cancel_session(&self, session: &str, reason: &str) {
        let jobs: Vec<Arc<Job>> = lock(&self.jobs)
            .values()
            .filter(|job| job.start.session == session)
            .cloned()
            .collect();
        for job in jobs {
            let running = {
                let mut state = lock(&job.state);
                let running = !state.status.is_terminal();
                if running {
                    state.status = JobStatus::Stopping;
                    state.reported = true;
                }
                running
            };
            if running {
                job.control.cancel(reason.into());
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
        job.control.cancel(reason.into());
        Killed::Requested
    }

    pub(crate) fn list(&self, session: &str) -> Vec<Listed> {
        lock(&self.jobs)
            .values()
            .filter(|job| job.start.session == session)
            .map(|job| Listed {
                id: job.id.clone(),
                kind: job.start.kind.clone(),
                label: job.start.label.clone(),
                status: lock(&job.state).status,
            })
            .collect()
    }

    /// Asks every running job to stop (the registry goes away); no notices follow.
    pub(crate) fn cancel_all(&self, reason: &str) {
        let jobs: Vec<Arc<Job>> = lock(&self.jobs).values().cloned().collect();
        for job in jobs {
            let running = {
                let mut state = lock(&job.state);
                state.reported = true;
                !state.status.is_terminal()
            };
            if running {
                job.control.cancel(reason.into());
            }
        }
    }

    /// The owner learns the job ended: into its running turn's next step, or, idle, as a
    /// turn of its own (unless it was woken `max_wakes` times since a person last wrote: then
    /// the notice waits for its next turn).
    fn tell_owner(&self, job: &Job) {
        let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS) else {
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
        let sent = match running(&agents, owner) || !self.may_wake(owner) {
            true => agents.inject(owner, &message),
            false => agents.followup(owner, &message),
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

fn running(agents: &AgentsService, id: &str) -> bool {
    agents
        .list()
        .decode()
        .unwrap_or_default()
        .iter()
        .any(|agent| agent.id == id && agent.status == AgentStatus::Running)
}

/// `text` cut to [`SUMMARY_CHARS`] characters, the cut marked with `…`.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(SUMMARY_CHARS - 1) {
        Some((cut, _)) if text.chars().count() > SUMMARY_CHARS => format!("{}…", &text[..cut]),
        _ => text.to_owned(),
    }
}
