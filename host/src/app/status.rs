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
use crate::app::diagnostics::{FiberRow, Snapshot};

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

pub fn run_dir(home: &Path) -> PathBuf {
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
            let snapshot = snapshot(&app);
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

pub fn snapshot(app: &App) -> Snapshot {
    let runtime = app.runtime();
    Snapshot {
        pid: std::process::id(),
        fibers: runtime.report().iter().map(FiberRow::from).collect(),
        disabled: app.disabled_rows(),
        library_copies: app.libraries().copies_held(),
        live_tasks: runtime.live_tasks(),
        listeners: runtime.bus().listener_count(),
    }
}
