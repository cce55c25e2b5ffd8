//! `dsh-host status`: each running host listens on a Unix socket under `$DSH_HOME/run/` and
//! answers with its fiber table, library copies and live tasks. A request is one short line,
//! read within a deadline and a size cap: anything longer is answered with an error and
//! dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedReadHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;

use crate::app::App;
use crate::diagnostics::{Snapshot, render_table};

/// The socket of this process; removed when dropped.
pub struct StatusSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StatusSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

fn run_dir(home: &Path) -> PathBuf {
    home.join("run")
}

/// Starts answering status requests; `None` (with a warning) when the socket cannot be made.
pub fn serve(home: &Path, app: Arc<App>) -> Option<StatusSocket> {
    let dir = run_dir(home);
    let path = dir.join(format!("dsh-host-{}.sock", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::remove_file(&path);
    let listener = match UnixListener::bind(&path) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!("status socket {} unavailable: {error}", path.display());
            return None;
        }
    };
    let clients = Arc::new(Semaphore::new(MAX_CLIENTS));
    let task = tokio::spawn(async move {
        loop {
            let Ok(permit) = clients.clone().acquire_owned().await else {
                return;
            };
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let snapshot = crate::commands::snapshot(&app);
            tokio::spawn(async move {
                answer(stream, snapshot).await;
                drop(permit);
            });
        }
    });
    Some(StatusSocket { path, task })
}

/// The longest request line read (the only request is `status`).
const MAX_REQUEST: usize = 4 * 1024;
/// How long a client has to send its request line.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Clients answered at once; the rest wait in the listener's backlog.
const MAX_CLIENTS: usize = 16;

/// Reads one request line of at most [`MAX_REQUEST`] bytes within [`REQUEST_DEADLINE`]: any
/// local process can connect, and one must not make the host read without end.
async fn read_request(read: OwnedReadHalf) -> Result<String, &'static str> {
    let mut line = Vec::new();
    let limit = u64::try_from(MAX_REQUEST).unwrap_or(u64::MAX) + 1;
    let mut reader = BufReader::new(read.take(limit));
    let reading = reader.read_until(b'\n', &mut line);
    match tokio::time::timeout(REQUEST_DEADLINE, reading).await {
        Err(_) => Err("error: no request line within 5 s\n"),
        Ok(Err(_)) => Err("error: the request could not be read\n"),
        Ok(Ok(_)) if line.len() > MAX_REQUEST => Err("error: request over 4096 bytes\n"),
        Ok(Ok(_)) => Ok(String::from_utf8_lossy(&line).into_owned()),
    }
}

async fn answer(stream: UnixStream, snapshot: Snapshot) {
    let (read, mut write) = stream.into_split();
    match read_request(read).await {
        Ok(request) if request.trim() == "status" => {
            if let Ok(body) = serde_json::to_string(&snapshot) {
                let _ = write.write_all(body.as_bytes()).await;
            }
        }
        Ok(_) => {}
        Err(refusal) => {
            let _ = write.write_all(refusal.as_bytes()).await;
        }
    }
    let _ = write.shutdown().await;
}

/// The most of an answer read: far above any fiber table, and what is under `run/` may be a
/// socket of anyone's.
const MAX_ANSWER: u64 = 16 << 20;

async fn ask(path: &Path) -> std::io::Result<Snapshot> {
    let mut stream = UnixStream::connect(path).await?;
    stream.write_all(b"status\n").await?;
    let mut body = String::new();
    stream.take(MAX_ANSWER).read_to_string(&mut body).await?;
    serde_json::from_str(&body)
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
}

/// Prints the table of every host running under `home`. Exit 1 when none answers.
pub async fn status(home: &Path, json: bool) -> i32 {
    let dir = run_dir(home);
    let mut sockets: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "sock"))
                .collect()
        })
        .unwrap_or_default();
    sockets.sort();
    let mut answered = Vec::new();
    for socket in sockets {
        match tokio::time::timeout(std::time::Duration::from_secs(5), ask(&socket)).await {
            Ok(Ok(snapshot)) => answered.push(snapshot),
            // A socket nobody answers on belongs to a host that is gone.
            _ => tracing::debug!("no host answers on {}", socket.display()),
        }
    }
    if answered.is_empty() {
        eprintln!("no running dsh-host under {}", dir.display());
        return 1;
    }
    for snapshot in &answered {
        if json {
            println!("{}", serde_json::to_string(snapshot).unwrap_or_default());
        } else {
            println!("dsh-host pid {}", snapshot.pid);
            print!("{}", render_table(snapshot));
            println!(
                "library copies held: {}  live tasks: {}  listeners: {}",
                snapshot.library_copies, snapshot.live_tasks, snapshot.listeners
            );
        }
    }
    0
}
