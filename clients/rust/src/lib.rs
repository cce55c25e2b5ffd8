//! `dsh-client`: a small Rust client of the SDK runtime (`dsh-host --profile sdk`), speaking
//! newline-delimited JSON-RPC 2.0. It starts a child host (the caller gives the command) or
//! wraps any reader/writer pair, sends requests with ids and waits for their answers, and
//! delivers the server's notifications in the order they were written. One reader thread routes
//! what arrives: an answer to the request waiting for it, a notification to the queue, an answer
//! no request waits for (the server's reply to a line it could not read) to a queue of its own,
//! and a line that is not JSON to a list the caller can check (stdout must carry frames only).
//!
//! [`Client::run`] is the reference SDK's `session.run`: one prompt, the notifications of the
//! session's tree until the session is idle again, and its final answer.
#![allow(
    clippy::disallowed_methods,
    reason = "a client of its own process: its reader is a thread of its own, not a plugin's"
)]

mod run;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use run::{RunResult, final_response};

/// One notification from the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    /// The params object (`null` when the frame had none).
    pub params: Value,
}

/// An error answer of the server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error.
    #[error("the server answered: {0}")]
    Rpc(#[from] RpcError),
    /// Nothing arrived in time.
    #[error("{what}: nothing within {after:?}")]
    Timeout { what: String, after: Duration },
    /// The server's output ended (or the client closed its input) before the answer.
    #[error("the connection is closed")]
    Closed,
    #[error("the server answered outside the protocol: {0}")]
    Protocol(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

type Answer = Result<Value, RpcError>;

/// What the reader thread shares with the client.
#[derive(Default)]
struct Shared {
    pending: HashMap<u64, Sender<Answer>>,
    /// Lines of the server's output that were not JSON.
    stray: Vec<String>,
    closed: bool,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connection to an SDK runtime.
pub struct Client {
    writer: Mutex<Option<Box<dyn Write + Send>>>,
    shared: Arc<Mutex<Shared>>,
    notifications: Mutex<Receiver<Notification>>,
    unmatched: Mutex<Receiver<Value>>,
    next_id: AtomicU64,
    child: Mutex<Option<Child>>,
}

impl Client {
    /// Starts `command` (a `dsh-host --profile sdk ...`) with piped stdin and stdout; its
    /// stderr is what the command says (inherited unless set).
    pub fn spawn(mut command: Command) -> Result<Self, ClientError> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Protocol("the child has no stdio pipes".into()));
        };
        let client = Self::connect(stdout, Box::new(stdin) as Box<dyn Write + Send>);
        *locked(&client.child) = Some(child);
        Ok(client)
    }

    /// `host --profile sdk -- ARGS` (say `--replay FILE`), with the environment the caller
    /// sets on the returned command.
    pub fn sdk_command(host: &std::path::Path, args: &[&str]) -> Command {
        let mut command = Command::new(host);
        command.args(["--profile", "sdk", "--"]).args(args);
        command
    }

    /// Speaks over `reader` (the server's output) and `writer` (its input).
    pub fn connect(reader: impl Read + Send + 'static, writer: Box<dyn Write + Send>) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (notify, notifications) = channel();
        let (unmatched_tx, unmatched) = channel();
        let routes = shared.clone();
        std::thread::spawn(move || read_frames(reader, &routes, &notify, &unmatched_tx));
        Self {
            writer: Mutex::new(Some(writer)),
            shared,
            notifications: Mutex::new(notifications),
            unmatched: Mutex::new(unmatched),
            next_id: AtomicU64::new(1),
            child: Mutex::new(None),
        }
    }

    /// Writes `line` and a newline as it is (a test sends what no well-behaved client would).
    pub fn send_line(&self, line: &str) -> Result<(), ClientError> {
        let mut writer = locked(&self.writer);
        let Some(writer) = writer.as_mut() else {
            return Err(ClientError::Closed);
        };
        writer.write_all(format!("{line}\n").as_bytes())?;
        writer.flush()?;
        Ok(())
    }

    /// Sends a request and waits up to `timeout` for its answer.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = channel();
        {
            let mut shared = locked(&self.shared);
            if shared.closed {
                return Err(ClientError::Closed);
            }
            shared.pending.insert(id, answer);
        }
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(error) = self.send_line(&frame.to_string()) {
            locked(&self.shared).pending.remove(&id);
            return Err(error);
        }
        match answered.recv_timeout(timeout) {
            Ok(answer) => Ok(answer?),
            Err(RecvTimeoutError::Timeout) => {
                locked(&self.shared).pending.remove(&id);
                Err(ClientError::Timeout {
                    what: format!("the answer to `{method}`"),
                    after: timeout,
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(ClientError::Closed),
        }
    }

    /// Sends a notification (no answer comes).
    pub fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        let frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_line(&frame.to_string())
    }

    /// The next notification, in the order the server wrote them.
    pub fn next_notification(&self, timeout: Duration) -> Result<Notification, ClientError> {
        receive(&locked(&self.notifications), timeout, "a notification")
    }

    /// The next answer no request of this client waited for (`id` null: a line the server
    /// could not read), as the whole frame.
    pub fn next_unmatched(&self, timeout: Duration) -> Result<Value, ClientError> {
        receive(&locked(&self.unmatched), timeout, "an unmatched answer")
    }

    /// The server's output lines that were not JSON frames (none, when it keeps stdout clean).
    pub fn stray_lines(&self) -> Vec<String> {
        locked(&self.shared).stray.clone()
    }

    /// `initialize{cwd, provider, model, maxTokens?}`; answers the server's `serverInfo`.
    pub fn initialize(
        &self,
        cwd: &str,
        provider: &str,
        model: &str,
        max_tokens: Option<u64>,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let mut params = json!({"cwd": cwd, "provider": provider, "model": model});
        if let (Some(max), Value::Object(fields)) = (max_tokens, &mut params) {
            fields.insert("maxTokens".into(), max.into());
        }
        let result = self.request("initialize", params, timeout)?;
        match result.get("serverInfo") {
            Some(info) if info["name"].is_string() && info["version"].is_string() => {
                Ok(info.clone())
            }
            _ => Err(ClientError::Protocol(format!(
                "initialize returned no server identity: {result}"
            ))),
        }
    }

    /// `session/prompt` with one text block; answers the queued message's id.
    pub fn prompt(
        &self,
        session: &str,
        text: &str,
        timeout: Duration,
    ) -> Result<String, ClientError> {
        let params =
            json!({"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]});
        let result = self.request("session/prompt", params, timeout)?;
        result["messageId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ClientError::Protocol(format!("session/prompt returned {result}")))
    }

    /// `shutdown`.
    pub fn shutdown(&self, timeout: Duration) -> Result<(), ClientError> {
        self.request("shutdown", Value::Null, timeout).map(|_| ())
    }

    /// Closes the server's input (it reads the end of stdin).
    pub fn close_input(&self) {
        // Dropping the writer closes the pipe.
        locked(&self.writer).take();
    }

    /// Waits up to `timeout` for the child started by [`Client::spawn`] to exit.
    pub fn wait(&self, timeout: Duration) -> Result<Option<ExitStatus>, ClientError> {
        let deadline = Instant::now() + timeout;
        let mut child = locked(&self.child);
        let Some(child) = child.as_mut() else {
            return Err(ClientError::Protocol("no child process to wait for".into()));
        };
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The child's process id (after [`Client::spawn`]).
    pub fn pid(&self) -> Option<u32> {
        locked(&self.child).as_ref().map(Child::id)
    }
}

impl Drop for Client {
    /// A child still running when the client goes away is killed and reaped.
    fn drop(&mut self) {
        self.close_input();
        if let Some(mut child) = locked(&self.child).take()
            && matches!(child.try_wait(), Ok(None))
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn receive<T>(queue: &Receiver<T>, timeout: Duration, what: &str) -> Result<T, ClientError> {
    queue.recv_timeout(timeout).map_err(|error| match error {
        RecvTimeoutError::Timeout => ClientError::Timeout {
            what: what.to_owned(),
            after: timeout,
        },
        RecvTimeoutError::Disconnected => ClientError::Closed,
    })
}

/// The reader thread: routes every line of the server's output until it ends.
fn read_frames(
    reader: impl Read,
    shared: &Mutex<Shared>,
    notify: &Sender<Notification>,
    unmatched: &Sender<Value>,
) {
    for line in BufReader::new(reader).lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(frame)) = serde_json::from_str::<Value>(&line) else {
            locked(shared).stray.push(line);
            continue;
        };
        let id = frame.get("id").cloned().unwrap_or(Value::Null);
        match (frame.get("method").and_then(Value::as_str), id.as_u64()) {
            (Some(method), _) if id.is_null() => {
                let _ = notify.send(Notification {
                    method: method.to_owned(),
                    params: frame.get("params").cloned().unwrap_or(Value::Null),
                });
            }
            (None, Some(id)) => {
                let waiting = locked(shared).pending.remove(&id);
                match waiting {
                    Some(waiting) => {
                        let _ = waiting.send(answer_of(&frame));
                    }
                    None => {
                        let _ = unmatched.send(Value::Object(frame));
                    }
                }
            }
            // An answer to nothing of ours, or a request of the server (the SDK defines none).
            _ => {
                let _ = unmatched.send(Value::Object(frame));
            }
        }
    }
    let mut shared = locked(shared);
    shared.closed = true;
    // The senders go with them: every waiting request learns the connection closed.
    shared.pending.clear();
}

fn answer_of(frame: &serde_json::Map<String, Value>) -> Answer {
    match frame.get("error") {
        Some(error) => Err(RpcError {
            code: error["code"].as_i64().unwrap_or_default(),
            message: error["message"].as_str().unwrap_or_default().to_owned(),
            data: error.get("data").cloned(),
        }),
        None => Ok(frame.get("result").cloned().unwrap_or(Value::Null)),
    }
}

#[cfg(test)]
mod tests;
