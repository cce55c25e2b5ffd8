//! The stdio transport: the server is a process started through the sandbox's piped launcher
//! (confined like a tool's process, with its stdin kept open); messages are lines of JSON on
//! its stdin and stdout. Its stderr is the server's log: kept as a short tail, which says why
//! when the process dies, and logged at debug level.

use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RNone, RSome, RString, RVec};
use dsh_plugin_api::io::piped::PipedProcess;
use dsh_plugin_api::io::subprocess::{EnvVar, OutputStream, SpawnRequest};
use dsh_plugin_api::{Context, LogLevel, Service, lock};
use dsh_sandbox_seam::SandboxPipedService;

use crate::error::StartError;
use crate::transport::{BoxFuture, Event, Inbox, Transport, TransportError};

/// How long a server gets between SIGTERM and SIGKILL when it is stopped.
const KILL_GRACE_MS: u64 = 2_000;

/// Bytes of stderr kept to explain an exit.
const STDERR_TAIL: usize = 2_048;

pub(crate) struct Stdio {
    process: Arc<PipedProcess>,
}

/// What to start, resolved against the workspace.
pub(crate) struct Launch<'a> {
    pub(crate) server: &'a str,
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a [(String, String)],
    pub(crate) cwd: &'a str,
    pub(crate) workspace: &'a str,
    pub(crate) sandbox_mode: &'a str,
}

/// Starts the server and its reader; the pid is the host's (for the log).
pub(crate) fn start(
    ctx: &Context,
    sandbox: &Service<SandboxPipedService>,
    launch: &Launch<'_>,
    inbox: Inbox,
) -> Result<(Stdio, u32), StartError> {
    let request = SpawnRequest {
        program: RString::from(launch.command),
        args: launch
            .args
            .iter()
            .map(|arg| RString::from(arg.as_str()))
            .collect(),
        cwd: RSome(RString::from(launch.cwd)),
        env: launch
            .env
            .iter()
            .map(|(name, value)| EnvVar {
                name: RString::from(name.as_str()),
                value: RString::from(value.as_str()),
            })
            .collect::<RVec<_>>(),
        // The harness's own variables are not the server's business.
        remove_env: RVec::from(vec![RString::from("DSH_*")]),
        stdin: RNone,
    };
    let process = sandbox
        .spawn_piped(
            RString::new(),
            RString::from(launch.workspace),
            RString::new(),
            RString::from(launch.sandbox_mode),
            request,
        )
        .into_result()
        .map_err(StartError::Refused)?;
    let pid = process.process.pid();
    let process = Arc::new(process);
    let reader = process.clone();
    let (log, server) = (ctx.clone(), launch.server.to_owned());
    ctx.spawn(async move { read(log, server, reader, inbox).await })
        .map_err(StartError::Reader)?;
    Ok((Stdio { process }, pid))
}

/// The longest line a server's stdout may send (as the ACP and SDK readers cap theirs): the rest
/// of a longer line is dropped, so the line fails to read as JSON and is reported, and a
/// server that never ends a line cannot grow the host's memory without bound.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Adds `bytes` to the `line` being read; answers the lines they complete (lossy UTF-8, trimmed,
/// blank ones dropped).
pub(crate) fn split_lines(line: &mut Vec<u8>, bytes: &[u8]) -> Vec<String> {
    split_lines_capped(line, bytes, MAX_LINE)
}

/// [`split_lines`] with lines cut at `max` bytes.
fn split_lines_capped(line: &mut Vec<u8>, bytes: &[u8], max: usize) -> Vec<String> {
    let mut complete = Vec::new();
    for byte in bytes.iter().copied() {
        if byte != b'\n' {
            if line.len() < max {
                line.push(byte);
            }
            continue;
        }
        let text = String::from_utf8_lossy(line).trim().to_owned();
        line.clear();
        if !text.is_empty() {
            complete.push(text);
        }
    }
    complete
}

/// Splits stdout into lines for the inbox until the process's output ends, then says how it
/// ended.
async fn read(ctx: Context, server: String, process: Arc<PipedProcess>, inbox: Inbox) {
    let mut line = Vec::new();
    let tail = Mutex::new(Vec::<u8>::new());
    while let RSome(chunk) = process.process.next_output().await {
        match chunk.stream {
            OutputStream::Stdout => {
                for text in split_lines(&mut line, &chunk.bytes) {
                    if inbox.send(Event::Message(text)).is_err() {
                        return;
                    }
                }
            }
            OutputStream::Stderr => {
                ctx.log(
                    LogLevel::Debug,
                    &format!(
                        "mcp `{server}` stderr: {}",
                        String::from_utf8_lossy(&chunk.bytes).trim_end()
                    ),
                );
                let mut tail = lock(&tail);
                tail.extend_from_slice(&chunk.bytes);
                let excess = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..excess);
            }
        }
    }
    let status = match process.process.wait().await.into_result() {
        Ok(status) => match (status.code.into_option(), status.signal.into_option()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            (None, None) => "ended".to_owned(),
        },
        Err(error) => format!("could not be waited for: {error}"),
    };
    let stderr = String::from_utf8_lossy(&lock(&tail)).trim().to_owned();
    let why = match stderr.lines().last() {
        Some(last) => format!("the server process {status} (its stderr last said: {last})"),
        None => format!("the server process {status}"),
    };
    let _ = inbox.send(Event::Closed(why));
}

impl Transport for Stdio {
    fn send(&self, message: String) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let mut bytes = message.into_bytes();
            bytes.push(b'\n');
            self.process
                .stdin
                .write(RVec::from(bytes))
                .await
                .into_result()
                .map_err(|error| TransportError(error.to_string()))
        })
    }

    fn negotiated(&self, _version: &str) {}

    fn ready(&self) {}

    fn close(&self) -> BoxFuture<'_, ()> {
        // The shutdown the specification asks for: end of input first, then the signals.
        Box::pin(async move {
            self.process.stdin.close().await;
            let _ = self.process.process.terminate(KILL_GRACE_MS).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_cap_is_cut_and_the_next_one_reads_whole() {
        let mut line = Vec::new();
        assert!(split_lines_capped(&mut line, b"0123456789", 8).is_empty());
        assert_eq!(line.len(), 8, "nothing past the cap is kept");
        let lines = split_lines_capped(&mut line, b"abc\n{\"a\":1}\n", 8);
        assert_eq!(lines, ["01234567", "{\"a\":1}"]);
        assert!(line.is_empty());
    }
}
