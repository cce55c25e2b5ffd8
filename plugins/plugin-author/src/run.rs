//! One confined process of a tool call: started through the `sandbox` service (so a build or a
//! check runs under the session's policy like any `bash` command), its two streams collected,
//! stopped at a deadline or when the call is cancelled.

use std::sync::Arc;
use std::time::{Duration, Instant};

use abi_stable::std_types::{RNone, RSome, RString, RVec};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::io::subprocess::{EnvVar, OutputStream, SpawnRequest};
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_sandbox_seam::SandboxService;
use dsh_tools_seam::CallView;

/// What ran, and how it ended.
pub(crate) struct Finished {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Why no exit was collected.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error("the sandbox refused to start `{program}`: {message}")]
    Refused { program: String, message: String },
    #[error("`{program}` did not finish within {seconds} s and was stopped")]
    TimedOut { program: String, seconds: u64 },
    #[error("the call was cancelled; `{program}` was stopped")]
    Cancelled { program: String },
    #[error("waiting for `{program}`: {message}")]
    Wait { program: String, message: String },
}

/// A process to run for `call`.
pub(crate) struct Command<'a> {
    pub program: &'a str,
    pub args: Vec<String>,
    pub cwd: &'a str,
    pub env: Vec<(&'a str, String)>,
    pub timeout: Duration,
}

/// Runs `command` confined by `call`'s policy; each stream keeps its first `cap` bytes (the
/// first compiler errors are the ones that matter; later ones are mostly their echoes).
pub(crate) async fn run(
    ctx: &Context,
    sandbox: &SandboxService,
    call: &CallView,
    command: Command<'_>,
    cancel: CancelBox,
    cap: usize,
) -> Result<Finished, RunError> {
    let program = command.program.to_owned();
    let started = Instant::now();
    let request = SpawnRequest {
        program: command.program.into(),
        args: command
            .args
            .iter()
            .map(|arg| RString::from(arg.as_str()))
            .collect::<RVec<_>>(),
        cwd: RSome(RString::from(command.cwd)),
        env: command
            .env
            .iter()
            .map(|(name, value)| EnvVar {
                name: (*name).into(),
                value: value.as_str().into(),
            })
            .collect::<RVec<_>>(),
        remove_env: RVec::from(vec![RString::from("DSH_*")]),
        stdin: RNone,
    };
    let process = sandbox
        .spawn(
            call.session.clone(),
            call.cwd.clone(),
            call.call_id.clone(),
            request,
        )
        .into_result()
        .map_err(|error| RunError::Refused {
            program: program.clone(),
            message: error.to_string(),
        })?;
    let stdout = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let stderr = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let reading = {
        let (stdout, stderr) = (stdout.clone(), stderr.clone());
        let process = &process;
        async move {
            while let RSome(chunk) = process.next_output().await {
                let buffer = match chunk.stream {
                    OutputStream::Stdout => &stdout,
                    OutputStream::Stderr => &stderr,
                };
                let mut buffer = lock(buffer);
                let room = cap.saturating_sub(buffer.len());
                buffer.extend_from_slice(&chunk.bytes[..chunk.bytes.len().min(room)]);
            }
            process.wait().await
        }
    };
    let deadline = ctx.sleep(command.timeout);
    let status = match first_of(reading, first_of(cancel.cancelled(), deadline)).await {
        Either::Left(status) => status,
        Either::Right(Either::Left(())) => {
            let _ = process.terminate(2_000).await;
            return Err(RunError::Cancelled { program });
        }
        Either::Right(Either::Right(())) => {
            let _ = process.terminate(2_000).await;
            return Err(RunError::TimedOut {
                program,
                seconds: command.timeout.as_secs(),
            });
        }
    };
    let status = status.into_result().map_err(|error| RunError::Wait {
        program: program.clone(),
        message: error.to_string(),
    })?;
    let text = |buffer: &Arc<std::sync::Mutex<Vec<u8>>>| {
        String::from_utf8_lossy(&lock(buffer)).into_owned()
    };
    Ok(Finished {
        code: status.code.into_option(),
        stdout: text(&stdout),
        stderr: text(&stderr),
        elapsed: started.elapsed(),
    })
}
