//! `terminal_send` with `run_in_background`: the text is typed at once and the send becomes a
//! stream job of the `jobs` registry (id `terminal-N`): what the terminal shows is appended as
//! it arrives, and the job settles when the shell is back at its prompt (`completed`), when the
//! shell exits (`failed`), or as `killed` after a `job_kill` (which interrupts the terminal's
//! foreground command with `SIGINT`). The terminal stays open either way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use dsh_jobs_seam::{JOBS_SERVICE, JobControl, JobControl_TO, JobsService};
use dsh_plugin_api::{Json, Service};
use dsh_protocol::{JobEnd, JobOutputMode, JobStart, JobStatus};

use crate::terminal::{Sending, Terminal, describe_exit};
use crate::{Refusal, Shared};

/// How often the job looks at the terminal.
const POLL: Duration = Duration::from_millis(20);

struct Control {
    terminal: Arc<Terminal>,
    killed: Arc<AtomicBool>,
}

impl JobControl for Control {
    fn cancel(&self, _reason: RString) {
        self.killed.store(true, Ordering::Release);
        let _ = self.terminal.signal(2);
    }
}

/// Types `input` into `terminal` (`id`) of `session` as a background job; answers its id.
pub(crate) async fn send(
    shared: &Shared,
    session: &str,
    id: &str,
    terminal: Arc<Terminal>,
    input: &str,
    sending: Sending,
) -> Result<String, Refusal> {
    let jobs: Service<JobsService> = shared
        .ctx
        .get::<JobsService>(JOBS_SERVICE)
        .ok()
        .flatten()
        .ok_or_else(|| Refusal("run_in_background needs the background job registry (a `jobs` row), and none is loaded; send in the foreground".to_owned()))?;
    let from = terminal.position();
    let prompts = terminal.prompts();
    let killed = Arc::new(AtomicBool::new(false));
    let start = JobStart {
        session: session.to_owned(),
        kind: "terminal".to_owned(),
        label: format!("{id}: {}", input.trim_end()),
        output: JobOutputMode::Stream,
    };
    let control = Control {
        terminal: terminal.clone(),
        killed: killed.clone(),
    };
    let job = jobs
        .start(
            Json::encode(&start),
            JobControl_TO::from_value(control, TD_Opaque),
        )
        .into_result()
        .map_err(|error| Refusal(format!("the background job did not start: {error}")))?
        .into_string();
    terminal
        .type_text(input)
        .await
        .map_err(|error| Refusal(error.message.to_string()))?;
    let (ctx, name) = (shared.ctx.clone(), job.clone());
    let spawned = shared.ctx.spawn(async move {
        // The terminal is this job's until it settles.
        let _sending = sending;
        let mut shown = from;
        let end = loop {
            ctx.sleep(POLL).await;
            let (text, end) = terminal.with_screen(|screen| {
                let end = screen.position();
                (screen.since(shown, Some(end)).0, end)
            });
            shown = end;
            if !text.is_empty() {
                jobs.append(RString::from(name.as_str()), RString::from(text));
            }
            if killed.load(Ordering::Acquire) {
                break JobEnd::new(JobStatus::Killed, None);
            }
            if terminal.prompts() > prompts {
                break JobEnd::new(JobStatus::Completed, Some("[wait: stdin_read]".to_owned()));
            }
            if let Some(status) = terminal.exited() {
                break JobEnd::new(
                    JobStatus::Failed,
                    Some(format!("[session: {}]", describe_exit(status))),
                );
            }
        };
        jobs.settle(RString::from(name.as_str()), Json::encode(&end));
    });
    spawned.map_err(|error| Refusal(error.to_string()))?;
    Ok(job)
}
