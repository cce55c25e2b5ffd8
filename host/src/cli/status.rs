//! `dsh-host status`: asks every host running under this `$DSH_HOME` for its fiber table,
//! through the status sockets the hosts serve (`app::status`).

use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::app::diagnostics::{Snapshot, render_table};
use crate::app::status::run_dir;

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

/// The client socket of host `pid`, when it serves one (see the `client-socket` plugin).
fn client_socket(dir: &Path, pid: u32) -> Option<PathBuf> {
    let path = dir.join(format!("dsh-clients-{pid}.sock"));
    path.exists().then_some(path)
}

/// Prints the table of every host running under `home`. Exit 1 when none answers.
pub async fn status(home: &Path, json: bool) -> i32 {
    let dir = run_dir(home);
    let mut sockets: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "sock"))
                // The hosts' own; a `dsh-clients-PID.sock` beside one is its client socket.
                .filter(|path| {
                    path.file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| name.starts_with("dsh-host-"))
                })
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
            let mut value = serde_json::to_value(snapshot).unwrap_or_default();
            if let (Some(socket), Some(object)) =
                (client_socket(&dir, snapshot.pid), value.as_object_mut())
            {
                object.insert(
                    "clientSocket".to_owned(),
                    serde_json::Value::from(socket.display().to_string()),
                );
            }
            println!("{value}");
        } else {
            println!("dsh-host pid {}", snapshot.pid);
            let clients = client_socket(&dir, snapshot.pid);
            if let Some(socket) = &clients {
                println!("client socket: {}", socket.display());
            }
            print!("{}", render_table(snapshot));
            println!(
                "library copies held: {}  live tasks: {}  listeners: {}",
                snapshot.library_copies, snapshot.live_tasks, snapshot.listeners
            );
        }
    }
    0
}
