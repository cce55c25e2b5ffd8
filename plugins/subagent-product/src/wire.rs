//! A product's process and its line-delimited JSON: the product starts through the host's
//! piped launcher (stdin kept open), a reader task splits stdout into JSON values and keeps a
//! short tail of stderr (forwarded to the host's log at debug level), and when stdout ends the
//! process's exit is the last thing read.

use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RNone, RSome, RString, RVec};
use dsh_plugin_api::io::piped::{PipedProcess, PipedSubprocessService};
use dsh_plugin_api::io::subprocess::{
    EnvVar, ExitStatus, OutputStream, SpawnRequest, SubprocessError,
};
use dsh_plugin_api::{Context, LogLevel, PluginError, Serialize, Service, lock};
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Characters of stderr kept (enough to match the products' fixed permission lines).
const STDERR_TAIL: usize = 4_096;

/// Bytes of one stdout line kept (a longer one is cut, and then does not read as JSON).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Why the product's process could not be started or written to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    #[error("`{program}` did not start: {error}")]
    Spawn {
        program: String,
        error: SubprocessError,
    },
    /// The task reading its output could not be started (the plugin is unloading).
    #[error("{0}")]
    Reader(PluginError),
    #[error("a message that does not encode: {0}")]
    Encode(serde_json::Error),
    #[error("{0}")]
    Write(SubprocessError),
}

/// How a process ended, as far as it was seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Exit {
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
}

impl Exit {
    /// How a wait for the process answered (a failed wait says nothing).
    fn of(waited: Result<ExitStatus, SubprocessError>) -> Self {
        match waited {
            Ok(status) => Self {
                code: status.code.into_option(),
                signal: status.signal.into_option(),
            },
            Err(_) => Self::default(),
        }
    }
}

/// What the reader hands over.
pub(crate) enum Line {
    Message(Value),
    /// Stdout ended; the process exited so.
    Closed(Exit),
}

/// What to start.
pub(crate) struct Launch {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: String,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) remove_env: Vec<String>,
}

pub(crate) struct Wire {
    ctx: Context,
    process: Arc<PipedProcess>,
    lines: tokio::sync::Mutex<UnboundedReceiver<Line>>,
    stderr: Arc<Mutex<String>>,
    /// How the process ended, once read: every later read answers it again.
    ended: Mutex<Option<Exit>>,
}

impl Wire {
    pub(crate) fn start(
        ctx: &Context,
        launcher: &Service<PipedSubprocessService>,
        launch: Launch,
        product: &'static str,
    ) -> Result<Self, WireError> {
        let request = SpawnRequest {
            program: RString::from(launch.program.as_str()),
            args: launch
                .args
                .iter()
                .map(|arg| RString::from(arg.as_str()))
                .collect(),
            cwd: RSome(RString::from(launch.cwd.as_str())),
            env: launch
                .env
                .iter()
                .map(|(name, value)| EnvVar {
                    name: RString::from(name.as_str()),
                    value: RString::from(value.as_str()),
                })
                .collect::<RVec<_>>(),
            remove_env: launch
                .remove_env
                .iter()
                .map(|name| RString::from(name.as_str()))
                .collect(),
            stdin: RNone,
        };
        let process = launcher
            .spawn_piped(request)
            .into_result()
            .map_err(|error| WireError::Spawn {
                program: launch.program.clone(),
                error,
            })?;
        let process = Arc::new(process);
        let stderr = Arc::new(Mutex::new(String::new()));
        let (sender, lines) = unbounded_channel();
        let reader = read(
            ctx.clone(),
            product,
            process.clone(),
            stderr.clone(),
            sender,
        );
        ctx.spawn(reader).map_err(WireError::Reader)?;
        Ok(Self {
            ctx: ctx.clone(),
            process,
            lines: tokio::sync::Mutex::new(lines),
            stderr,
            ended: Mutex::default(),
        })
    }

    pub(crate) async fn send<M: Serialize>(&self, message: &M) -> Result<(), WireError> {
        let mut bytes = serde_json::to_vec(message).map_err(WireError::Encode)?;
        bytes.push(b'\n');
        self.process
            .stdin
            .write(RVec::from(bytes))
            .await
            .into_result()
            .map_err(WireError::Write)
    }

    /// The next message, or how the process ended (again and again once it has).
    pub(crate) async fn next(&self) -> Line {
        if let Some(exit) = *lock(&self.ended) {
            return Line::Closed(exit);
        }
        let mut lines = self.lines.lock().await;
        match lines.recv().await {
            Some(Line::Closed(exit)) => {
                *lock(&self.ended) = Some(exit);
                Line::Closed(exit)
            }
            Some(line) => line,
            None => Line::Closed(lock(&self.ended).unwrap_or_default()),
        }
    }

    /// Waits `duration` (for a product's bounded goodbyes).
    pub(crate) async fn sleep(&self, duration: std::time::Duration) {
        self.ctx.sleep(duration).await;
    }

    /// The stderr seen so far (its last [`STDERR_TAIL`] characters).
    pub(crate) fn stderr(&self) -> String {
        lock(&self.stderr).clone()
    }

    pub(crate) async fn close_stdin(&self) {
        self.process.stdin.close().await;
    }

    /// Ends the process and everything it started: end of input, then SIGTERM and, after
    /// `grace_ms`, SIGKILL to its group.
    pub(crate) async fn shutdown(&self, grace_ms: u64) -> Exit {
        self.process.stdin.close().await;
        Exit::of(self.process.process.terminate(grace_ms).await.into_result())
    }
}

async fn read(
    ctx: Context,
    product: &'static str,
    process: Arc<PipedProcess>,
    stderr: Arc<Mutex<String>>,
    sender: UnboundedSender<Line>,
) {
    let mut line = Vec::new();
    let hand_over = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line).into_owned();
        line.clear();
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(value) => {
                let _ = sender.send(Line::Message(value));
            }
            // Products print a banner or a warning on stdout now and then.
            Err(_) if !text.trim().is_empty() => ctx.log(
                LogLevel::Debug,
                &format!("{product} printed a line that is not JSON: {}", text.trim()),
            ),
            Err(_) => {}
        }
    };
    while let RSome(chunk) = process.process.next_output().await {
        match chunk.stream {
            OutputStream::Stdout => {
                for byte in chunk.bytes.iter().copied() {
                    if byte == b'\n' {
                        hand_over(&mut line);
                    } else if line.len() < MAX_LINE {
                        line.push(byte);
                    }
                }
            }
            OutputStream::Stderr => {
                let text = String::from_utf8_lossy(&chunk.bytes);
                ctx.log(
                    LogLevel::Debug,
                    &format!("{product} stderr: {}", text.trim_end()),
                );
                let mut tail = lock(&stderr);
                tail.push_str(&text);
                if tail.len() > STDERR_TAIL {
                    let mut cut = tail.len() - STDERR_TAIL;
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
            }
        }
    }
    // A last message the product did not end with a newline.
    hand_over(&mut line);
    let exit = Exit::of(process.process.wait().await.into_result());
    let _ = sender.send(Line::Closed(exit));
}
