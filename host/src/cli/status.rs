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
