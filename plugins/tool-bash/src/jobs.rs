//! Background jobs: `bash` with `run_in_background` starts the command (confined like any
//! other) and answers at once with a job id; the job's output is kept (the last 64 KB of both
//! streams, interleaved), `job_list`, `job_output` and `job_kill` reach it, and when it ends
//! its session's agent is told with a steering message (which wakes an idle agent). Jobs end
//! with the row that started them: unloading it, or the host exiting, kills every one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::RSome;
use dsh_agent_seam::{AGENTS, AgentsExt, AgentsService};
use dsh_plugin_api::io::subprocess::ProcessBox;
use dsh_plugin_api::{Context, lock};
use dsh_protocol::{ContentBlock, Message, MessageSource, PluginSource};

use crate::output::Tail;

/// Bytes of output kept per job.
const KEPT: usize = 64_000;
/// Lines of output the completion message quotes.
const QUOTED_LINES: usize = 20;

/// Where a job stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    Running,
    Exited(i32),
    Killed(String),
}

impl State {
    fn describe(&self) -> String {
        match self {
            Self::Running => "running".to_owned(),
            Self::Exited(code) => format!("exited with code {code}"),
            Self::Killed(how) => format!("killed ({how})"),
        }
    }
}

struct Job {
    session: String,
    command: String,
    output: Mutex<Tail>,
    state: Mutex<State>,
    process: Arc<ProcessBox>,
}

/// The jobs of one `tool-bash` row.
#[derive(Default)]
pub(crate) struct Jobs {
    jobs: Mutex<BTreeMap<u64, Arc<Job>>>,
    next: Mutex<u64>,
}

fn id_text(id: u64) -> String {
    format!("job-{id}")
}

/// `job-3` → 3.
fn parse_id(text: &str) -> Option<u64> {
    text.trim()
        .strip_prefix("job-")
        .unwrap_or(text.trim())
        .parse()
        .ok()
}

impl Jobs {
    /// Keeps `process` as a job of `session` and follows it to its end; answers the job id.
    pub(crate) fn start(
        self: &Arc<Self>,
        ctx: &Context,
        session: &str,
        command: &str,
        process: ProcessBox,
    ) -> String {
        let id = {
            let mut next = lock(&self.next);
            *next += 1;
            *next
        };
        let job = Arc::new(Job {
            session: session.to_owned(),
            command: command.to_owned(),
            output: Mutex::new(Tail::new(KEPT)),
            state: Mutex::new(State::Running),
            process: Arc::new(process),
        });
        lock(&self.jobs).insert(id, job.clone());
        let notify = ctx.clone();
        let _ = ctx.spawn(async move {
            while let RSome(chunk) = job.process.next_output().await {
                lock(&job.output).push(&chunk.bytes);
            }
            let status = job.process.wait().await.into_result();
            let ended = {
                let mut state = lock(&job.state);
                if *state == State::Running {
                    *state = match status {
                        Ok(status) => {
                            match (status.code.into_option(), status.signal.into_option()) {
                                (Some(code), _) => State::Exited(code),
                                (None, Some(signal)) => State::Killed(format!("signal {signal}")),
                                (None, None) => State::Exited(-1),
                            }
                        }
                        Err(error) => State::Killed(error.to_string()),
                    };
                }
                state.clone()
            };
            tell(&notify, id, &job, &ended);
        });
        id_text(id)
    }

    /// One line per job of `session`.
    pub(crate) fn list(&self, session: &str) -> String {
        let jobs = lock(&self.jobs);
        let lines: Vec<String> = jobs
            .iter()
            .filter(|(_, job)| job.session == session)
            .map(|(id, job)| {
                format!(
                    "{} [{}] {}",
                    id_text(*id),
                    lock(&job.state).describe(),
                    job.command
                )
            })
            .collect();
        match lines.is_empty() {
            true => "No background jobs.".to_owned(),
            false => lines.join("\n"),
        }
    }

    fn find(&self, session: &str, id: &str) -> Result<Arc<Job>, String> {
        let number = parse_id(id).ok_or_else(|| format!("`{id}` is not a job id (job-N)"))?;
        lock(&self.jobs)
            .get(&number)
            .filter(|job| job.session == session)
            .cloned()
            .ok_or_else(|| format!("no job {id} in this session"))
    }

    /// A job's state and the output kept so far.
    pub(crate) fn output(&self, session: &str, id: &str) -> Result<String, String> {
        let job = self.find(session, id)?;
        let output = lock(&job.output).collect().rendered();
        let state = lock(&job.state).describe();
        Ok(format!(
            "{id} [{state}] {}\n{}",
            job.command,
            if output.is_empty() {
                "(no output yet)"
            } else {
                &output
            }
        ))
    }

    /// Kills a running job (its whole process group).
    pub(crate) async fn kill(&self, session: &str, id: &str) -> Result<String, String> {
        let job = self.find(session, id)?;
        {
            let mut state = lock(&job.state);
            if *state != State::Running {
                return Ok(format!("{id} already {}", state.describe()));
            }
            *state = State::Killed("job_kill".to_owned());
        }
        let _ = job.process.terminate(2_000).await;
        Ok(format!("{id} killed"))
    }
}

/// Tells the job's agent that it ended, quoting the end of its output.
fn tell(ctx: &Context, id: u64, job: &Job, state: &State) {
    let Ok(Some(agents)) = ctx.get::<AgentsService>(AGENTS) else {
        return;
    };
    let output = lock(&job.output).collect().text;
    let lines: Vec<&str> = output.lines().collect();
    let quoted = lines[lines.len().saturating_sub(QUOTED_LINES)..].join("\n");
    let text = format!(
        "Background job {} (`{}`) {}. The end of its output:\n{}\n(job_output {} shows all that was kept.)",
        id_text(id),
        job.command,
        state.describe(),
        if quoted.is_empty() {
            "(no output)"
        } else {
            &quoted
        },
        id_text(id)
    );
    let message = Message::user(
        "",
        vec![ContentBlock::text(text)],
        MessageSource::Plugin(PluginSource {
            plugin: Some("tool-bash".to_owned()),
            form: Some("job-ended".to_owned()),
            ..PluginSource::default()
        }),
    );
    if let Err(error) = agents.steer(&job.session, &message) {
        ctx.log(
            dsh_plugin_api::LogLevel::Warn,
            &format!(
                "background {}: its agent was not told it ended: {error}",
                id_text(id)
            ),
        );
    }
}

/// Kills every job still running (the row is going away).
pub(crate) fn kill_all(jobs: &Jobs) {
    let all: Vec<Arc<Job>> = lock(&jobs.jobs).values().cloned().collect();
    for job in all {
        *lock(&job.state) = State::Killed("the row unloaded".to_owned());
    }
    // Dropping the processes terminates their groups.
    lock(&jobs.jobs).clear();
}
