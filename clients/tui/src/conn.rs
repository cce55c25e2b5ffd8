//! The connection to a host, over either transport the client protocol has: a running host's
//! owner-only socket (`$DSH_HOME/run/dsh-clients-<pid>.sock`; the newest one, or a path given)
//! or a child `dsh-host --profile sdk` on stdio. Both speak newline-delimited JSON-RPC 2.0 with
//! the frames a client follows as `frame` notifications, so one client serves both: the
//! `dsh-client` crate's, over the socket's two halves or the child's pipes.
//!
//! The child's stderr goes to the app as lines (shown as notices, never on the screen as they
//! come), and when the host's output ends the app hears it once with the last thing it said.
//! Requests run on threads of their own so the UI never waits on the host; their answers come
//! back on the app's channel, tagged with what asked.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dsh_client::{Client, ClientError};
use dsh_client_protocol::{ClientRequest, ServerFrame};
use serde_json::Value;

use crate::app_event::{AppEvent, Reply};

/// How long a request may take before the UI says so.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why no connection was made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    #[error(
        "no running host to attach to: no dsh-clients-*.sock under {0} (start one with `dsh-host --profile web`)"
    )]
    NoSocket(PathBuf),
    #[error("no socket at {0}")]
    NoSocketAt(PathBuf),
    #[error("cannot attach to {path}: {source}")]
    Attach {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the host {path}: {source}")]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no dsh-host beside {0} and DSH_HOST is not set")]
    NoHost(PathBuf),
}

/// A request that failed: its method and what the host (or the connection) said.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{method}: {message}")]
pub(crate) struct RequestError {
    pub(crate) method: &'static str,
    pub(crate) message: String,
}

/// Where the host is.
#[derive(Debug, Clone)]
pub(crate) enum Transport {
    /// A running host's socket.
    Attach(PathBuf),
    /// A child host: its binary and the arguments after `--profile sdk --`.
    Child { host: PathBuf, args: Vec<String> },
}

impl Transport {
    /// `--attach` with or without a path: the path, or the newest socket of the home.
    pub(crate) fn attach(path: Option<PathBuf>) -> Result<Self, ConnectError> {
        match path {
            Some(path) if path.exists() => Ok(Self::Attach(path)),
            Some(path) => Err(ConnectError::NoSocketAt(path)),
            None => newest_socket(&home_dir()).map(Self::Attach),
        }
    }

    /// A child host: `DSH_HOST`, else `dsh-host` beside this binary.
    pub(crate) fn child(args: Vec<String>) -> Result<Self, ConnectError> {
        if let Some(host) = std::env::var_os("DSH_HOST").filter(|host| !host.is_empty()) {
            return Ok(Self::Child {
                host: PathBuf::from(host),
                args,
            });
        }
        let me = std::env::current_exe().unwrap_or_default();
        let beside = me.with_file_name("dsh-host");
        if beside.is_file() {
            Ok(Self::Child { host: beside, args })
        } else {
            Err(ConnectError::NoHost(me))
        }
    }

    /// For a person: where the host is.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Attach(path) => format!(
                "attached ({})",
                path.file_name().unwrap_or_default().to_string_lossy()
            ),
            Self::Child { .. } => "own host".to_owned(),
        }
    }
}

/// `$DSH_HOME`, as the host reads it (default `~/.dsh-host`).
pub(crate) fn home_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("DSH_HOME").filter(|home| !home.is_empty()) {
        return PathBuf::from(home);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".dsh-host")
}

/// The most recently made `dsh-clients-*.sock` under `home/run` that accepts a connection.
pub(crate) fn newest_socket(home: &Path) -> Result<PathBuf, ConnectError> {
    let run = home.join("run");
    let mut sockets: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&run)
        .map_err(|_| ConnectError::NoSocket(run.clone()))?
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("dsh-clients-") && name.ends_with(".sock")
        })
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .collect();
    sockets.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    // A host that died leaves its socket file behind: skip the ones nobody answers.
    sockets
        .into_iter()
        .map(|(_, path)| path)
        .find(|path| UnixStream::connect(path).is_ok())
        .ok_or(ConnectError::NoSocket(run))
}

/// The last lines the child wrote on stderr, for the message when it dies.
type Tail = Arc<Mutex<VecDeque<String>>>;

/// A live connection.
#[derive(Clone)]
pub(crate) struct Conn {
    client: Arc<Client>,
    tx: Sender<AppEvent>,
}

impl Conn {
    /// Connects over `transport` and starts delivering its frames to `tx`.
    pub(crate) fn open(transport: &Transport, tx: Sender<AppEvent>) -> Result<Self, ConnectError> {
        let tail: Tail = Arc::default();
        let client = match transport {
            Transport::Attach(path) => {
                let stream = UnixStream::connect(path).map_err(|source| ConnectError::Attach {
                    path: path.clone(),
                    source,
                })?;
                let writer = stream.try_clone().map_err(|source| ConnectError::Attach {
                    path: path.clone(),
                    source,
                })?;
                Client::connect(stream, Box::new(writer))
            }
            Transport::Child { host, args } => {
                let spawn_error = |source| ConnectError::Spawn {
                    path: host.clone(),
                    source,
                };
                let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
                let mut command = Client::sdk_command(host, &[]);
                command.args(args).stderr(Stdio::from(writer));
                let client = spawn(command).map_err(spawn_error)?;
                forward_stderr(reader, tx.clone(), tail.clone());
                client
            }
        };
        let conn = Self {
            client: Arc::new(client),
            tx,
        };
        conn.pump(tail);
        Ok(conn)
    }

    /// Delivers the frames, then the end of the connection.
    fn pump(&self, tail: Tail) {
        let (client, tx) = (self.client.clone(), self.tx.clone());
        std::thread::spawn(move || {
            loop {
                match client.next_notification(Duration::from_secs(3600)) {
                    Ok(notification) if notification.method == "frame" => {
                        if let Ok(frame) =
                            serde_json::from_value::<ServerFrame>(notification.params)
                            && tx.send(AppEvent::Server(Box::new(frame))).is_err()
                        {
                            return;
                        }
                    }
                    Ok(_) | Err(ClientError::Timeout { .. }) => {}
                    Err(_) => break,
                }
            }
            // Give the stderr reader a moment to take the child's last words.
            std::thread::sleep(Duration::from_millis(100));
            let last = tail
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join("\n");
            let _ = tx.send(AppEvent::HostGone(last));
        });
    }

    /// Sends `request`; its answer arrives as [`AppEvent::Answer`] tagged `reply`.
    pub(crate) fn send(&self, request: ClientRequest, reply: Reply) {
        let (client, tx) = (self.client.clone(), self.tx.clone());
        std::thread::spawn(move || {
            let answer = call(&client, &request);
            let _ = tx.send(AppEvent::Answer(reply, answer));
        });
    }

    /// Sends `request` and waits for its answer.
    pub(crate) fn call(&self, request: &ClientRequest) -> Result<Value, RequestError> {
        call(&self.client, request)
    }
}

fn spawn(command: Command) -> std::io::Result<Client> {
    Client::spawn(command).map_err(|error| match error {
        ClientError::Io(error) => error,
        other => std::io::Error::other(other.to_string()),
    })
}

/// The method and params of `request`, sent; the result or the error for a person.
fn call(client: &Client, request: &ClientRequest) -> Result<Value, RequestError> {
    let method = request.method();
    let failed = |message: String| RequestError { method, message };
    let params = serde_json::to_value(request)
        .map_err(|error| failed(error.to_string()))?
        .get("params")
        .cloned()
        .unwrap_or(Value::Null);
    client
        .request(method, params, REQUEST_TIMEOUT)
        .map_err(|error| match error {
            ClientError::Rpc(rpc) => failed(rpc.message),
            other => failed(other.to_string()),
        })
}

/// Reads the child's stderr line by line into the app and the tail.
fn forward_stderr(reader: std::io::PipeReader, tx: Sender<AppEvent>, tail: Tail) {
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            {
                let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                if tail.len() == 8 {
                    tail.pop_front();
                }
                tail.push_back(line.clone());
            }
            let _ = tx.send(AppEvent::HostLog(line));
        }
    });
}
