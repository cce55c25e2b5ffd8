//! The client socket as attached clients feel it: 20 clients on a running web host's socket
//! (`$DSH_HOME/run/dsh-clients-<pid>.sock`), each subscribed to one session, follow a turn of
//! the instant model that streams its answer as 2,000 chunks: commit-to-frame latency per
//! client (p99 of each, the worst reported), and clients that lost an update, got one twice or
//! out of order (must be 0).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::process::scratch;
use crate::report;
use crate::web::{Seen, Web, percentile, summarize};

const CLIENTS: usize = 20;
const CHUNKS: usize = 2_000;

fn connect(path: &Path, session: &str) -> anyhow::Result<(UnixStream, BufReader<UnixStream>)> {
    let mut stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    for (id, method, params) in [
        (
            1,
            "initialize",
            json!({"protocolVersion": 1, "clientInfo": {"name": "bench"}}),
        ),
        (2, "session.subscribe", json!({"sessionId": session})),
    ] {
        writeln!(
            stream,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        // Up to its answer; frames before it are the (empty) replay.
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                anyhow::bail!("the socket closed during {method}");
            }
            let value: Value = serde_json::from_str(&line)?;
            if value["id"] == id {
                if !value["error"].is_null() {
                    anyhow::bail!("{method}: {}", value["error"]);
                }
                break;
            }
        }
    }
    Ok((stream, reader))
}

fn follow(mut reader: BufReader<UnixStream>) -> anyhow::Result<Seen> {
    let mut seen = Seen::default();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            anyhow::bail!("the socket closed during the turn");
        }
        let value: Value = serde_json::from_str(&line)?;
        let frame = &value["params"];
        if value["method"] != "frame" || frame["type"] != "session/update" {
            continue;
        }
        if seen.update(frame, line.len()) {
            return Ok(seen);
        }
    }
}

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("socket")?;
    let patch = dir.join("socket.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: 0\n        textDeltas: {CHUNKS}\n"
        ),
    )?;
    let web = Web::start(&dir, &patch)?;
    let path = dir
        .join("run")
        .join(format!("dsh-clients-{}.sock", web.host.pid()));
    let (created, _) = web.call("session.create", &json!({"model": "instant/instant"}))?;
    let session = created["sessionId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no session"))?
        .to_owned();
    let mut streams = Vec::new();
    let mut followers = Vec::new();
    for _ in 0..CLIENTS {
        let (stream, reader) = connect(&path, &session)?;
        streams.push(stream);
        followers.push(std::thread::spawn(move || follow(reader)));
    }
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "go"}),
    )?;
    let summary = summarize(followers)?;
    drop(streams);
    web.host.stop();
    report(
        "socket_frames_per_client",
        summary.reference.len() as f64,
        "frames",
    );
    report("socket_latency_p50", percentile(summary.all, 0.5), "ms");
    report("socket_client_p99_worst", summary.worst_p99, "ms");
    report(
        "socket_clients_with_lost_or_twice",
        summary.faulty as f64,
        "clients",
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
