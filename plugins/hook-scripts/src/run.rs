//! One hook command, run as the tools run theirs: `bash -c` through the `sandbox` service,
//! confined by its session's policy (or refused where it cannot be), in the session's working
//! directory, with its JSON input on stdin and the inherited `DSH_*` variables stripped. Past
//! its limit the whole process group is terminated. A hook that cannot start or does not end by
//! itself has no exit code, which both formats treat as an error that blocks nothing; what
//! happened is put on its stderr so the record and the host log say so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use abi_stable::std_types::{RNone, RSome, RString, RVec};
use dsh_plugin_api::Context;
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::io::subprocess::{EnvVar, OutputStream, SpawnRequest};
use dsh_plugin_api::lock;
use dsh_sandbox_seam::SandboxService;

/// How much of each stream is kept (a hook's JSON is small; a chatty hook must not grow the
/// host without bound).
const KEEP: usize = 1 << 20;
/// How long a terminated group gets between SIGTERM and SIGKILL.
const KILL_GRACE_MS: u64 = 1_000;

/// What to run, and where.
pub(crate) struct Invocation<'a> {
    pub(crate) session: &'a str,
    pub(crate) cwd: &'a str,
    pub(crate) command: &'a str,
    pub(crate) stdin: Vec<u8>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) timeout_ms: u64,
}

/// How a run ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ran {
    pub(crate) exit_code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) duration_ms: f64,
}

pub(crate) async fn run(ctx: &Context, sandbox: &SandboxService, job: Invocation<'_>) -> Ran {
    let started = Instant::now();
    let mut env: Vec<EnvVar> = job
        .env
        .into_iter()
        .map(|(name, value)| EnvVar {
            name: name.into(),
            value: value.into(),
        })
        .collect();
    if !job.session.is_empty() {
        env.push(EnvVar {
            name: "DSH_SESSION_ID".into(),
            value: job.session.into(),
        });
    }
    let request = SpawnRequest {
        program: "bash".into(),
        args: RVec::from(vec![RString::from("-c"), RString::from(job.command)]),
        cwd: RSome(RString::from(job.cwd)),
        env: RVec::from(env),
        remove_env: RVec::from(vec![RString::from("DSH_*")]),
        stdin: RSome(RVec::from(job.stdin)),
    };
    // An empty call id asks for the session's own policy: a hook never gets a call's
    // escalation.
    let spawned = sandbox
        .spawn(job.session.into(), job.cwd.into(), RString::new(), request)
        .into_result();
    let process = match spawned {
        Ok(process) => process,
        Err(refusal) => {
            return Ran {
                stderr: format!("the hook could not start: {refusal}"),
                duration_ms: elapsed(started),
                ..Ran::default()
            };
        }
    };
    let streams = Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
    let reading = {
        let streams = streams.clone();
        let process = &process;
        async move {
            while let RSome(chunk) = process.next_output().await {
                let mut streams = lock(&streams);
                let kept = match chunk.stream {
                    OutputStream::Stdout => &mut streams.0,
                    OutputStream::Stderr => &mut streams.1,
                };
                let room = KEEP.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk.bytes[..chunk.bytes.len().min(room)]);
            }
            process.wait().await
        }
    };
    let deadline = ctx.sleep(Duration::from_millis(job.timeout_ms));
    let (status, timed_out) = match first_of(reading, deadline).await {
        Either::Left(status) => (status, false),
        Either::Right(()) => (process.terminate(KILL_GRACE_MS).await, true),
    };
    let (stdout, stderr) = {
        let streams = lock(&streams);
        (
            String::from_utf8_lossy(&streams.0).into_owned(),
            String::from_utf8_lossy(&streams.1).into_owned(),
        )
    };
    let mut ran = Ran {
        exit_code: None,
        stdout,
        stderr,
        duration_ms: 0.0,
    };
    match status.into_result() {
        _ if timed_out => append_line(
            &mut ran.stderr,
            &format!("the hook timed out after {} ms", job.timeout_ms),
        ),
        Ok(status) => match (status.code, status.signal) {
            (RSome(code), _) => ran.exit_code = Some(code),
            (RNone, RSome(signal)) => {
                append_line(
                    &mut ran.stderr,
                    &format!("the hook ended by signal {signal}"),
                );
            }
            (RNone, RNone) => {}
        },
        Err(error) => append_line(&mut ran.stderr, &format!("the hook's wait failed: {error}")),
    }
    ran.duration_ms = elapsed(started);
    ran
}

fn append_line(text: &mut String, line: &str) {
    if !text.trim().is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
}

fn elapsed(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}
