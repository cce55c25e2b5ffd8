//! `dsh-host status`: each running host listens on a Unix socket under `$DSH_HOME/run/` and
//! answers with its fiber table, library copies and live tasks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

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
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let snapshot = crate::commands::snapshot(&app);
            tokio::spawn(answer(stream, snapshot));
        }
    });
    Some(StatusSocket { path, task })
}

async fn answer(stream: UnixStream, snapshot: Snapshot) {
    let (read, mut write) = stream.into_split();
    let mut request = String::new();
    let _ = BufReader::new(read).read_line(&mut request).await;
    if request.trim() == "status"
        && let Ok(body) = serde_json::to_string(&snapshot)
    {
        let _ = write.write_all(body.as_bytes()).await;
    }
    let _ = write.shutdown().await;
}

async fn ask(path: &Path) -> std::io::Result<Snapshot> {
    let mut stream = UnixStream::connect(path).await?;
    stream.write_all(b"status\n").await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
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
