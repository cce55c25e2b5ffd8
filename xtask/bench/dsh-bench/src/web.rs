//! The web profile as a client feels it, against a real `dsh-host --profile web` on loopback:
//! the tail page of a long session's history (a real headless session of the instant model,
//! about 10,000 events), its size against the raw events, and the live feed of a turn of the
//! instant model to 50 event sockets at once (commit-to-frame latency, frames lost or sent
//! twice, memory per connection), with one more socket that never reads and must be dropped
//! with a resync rather than slow the others down.

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Message, WebSocket};

use crate::process::{Host, cpu_seconds, scratch};
use crate::report;

/// Steps of the recorded session whose history is paged (about 7 events each).
const HISTORY_STEPS: usize = 1_500;
/// Steps of the live turn the sockets follow.
const LIVE_STEPS: usize = 2_500;
const CLIENTS: usize = 50;

pub(crate) fn percentile(mut samples: Vec<f64>, at: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    if samples.is_empty() {
        return f64::NAN;
    }
    let rank = ((samples.len() - 1) as f64 * at).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64)
}

pub(crate) struct Web {
    pub(crate) host: Host,
    address: String,
    bearer: String,
}

impl Web {
    pub(crate) fn start(home: &Path, patch: &Path) -> anyhow::Result<Self> {
        let host = Host::start(
            home,
            &[
                "--patch",
                &patch.display().to_string(),
                "--profile",
                "web",
                "--no-watch",
                "--",
                "--no-open",
                "--port",
                "0",
            ],
        )?;
        let line = host.line_after("dsh web: open http://")?;
        let (address, query) = line
            .trim()
            .split_once("/auth?token=")
            .ok_or_else(|| anyhow::anyhow!("no sign-in URL in `{line}`"))?;
        Ok(Self {
            host,
            address: address.to_owned(),
            bearer: format!("Bearer {query}"),
        })
    }

    /// One call; answers its value and the bytes of the whole response body.
    pub(crate) fn call(&self, method: &str, payload: &Value) -> anyhow::Result<(Value, usize)> {
        use std::io::{Read, Write};
        let body =
            json!({"type": "client-request", "rpcId": "b", "method": method, "payload": payload})
                .to_string();
        let mut stream = TcpStream::connect(&self.address)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "POST /api/{method} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.address,
            self.bearer,
            body.len()
        )?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        let text = String::from_utf8_lossy(&raw);
        let (_, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| anyhow::anyhow!("no response body"))?;
        let value: Value = serde_json::from_str(body)?;
        if value["result"]["ok"] != true {
            anyhow::bail!("{method} failed: {}", value["result"]);
        }
        Ok((value["result"]["value"].clone(), body.len()))
    }

    pub(crate) fn socket(&self) -> anyhow::Result<WebSocket<TcpStream>> {
        let mut request = format!("ws://{}/api/events", self.address).into_client_request()?;
        request
            .headers_mut()
            .insert("authorization", self.bearer.parse()?);
        request
            .headers_mut()
            .insert("origin", format!("http://{}", self.address).parse()?);
        let stream = TcpStream::connect(&self.address)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let (socket, _) = tokio_tungstenite::tungstenite::client(request, stream)
            .map_err(|error| anyhow::anyhow!("event socket: {error}"))?;
        Ok(socket)
    }
}

fn patch(dir: &Path, steps: usize) -> anyhow::Result<std::path::PathBuf> {
    let path = dir.join("bench.patch.yml");
    std::fs::write(
        &path,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: {steps}\n- id: agent-loop\n  config:\n    maxSteps: {}\n",
            steps + 10
        ),
    )?;
    Ok(path)
}

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("web")?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    history(&dir, &work)?;
    idle(&dir)?;
    live(&dir)?;
    page_live(&dir)?;
    page_stream(&dir)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The web profile's memory once it serves and nobody uses it: a fresh host (no session
/// opened), its resident set two seconds after it printed its sign-in URL, then how often its
/// threads wake in the three seconds after, median of 3 starts.
fn idle(dir: &Path) -> anyhow::Result<()> {
    let patch = patch(dir, 1)?;
    let mut resident = Vec::new();
    let mut peaks = Vec::new();
    let mut wakes = Vec::new();
    for run in 0..3 {
        let home = dir.join(format!("idle-{run}"));
        std::fs::create_dir_all(&home)?;
        let web = Web::start(&home, &patch)?;
        std::thread::sleep(Duration::from_secs(2));
        resident.push(web.host.status_kib("VmRSS")? / 1024.0);
        peaks.push(web.host.status_kib("VmHWM")? / 1024.0);
        // Then three seconds of nothing: how often its threads wake meanwhile.
        let before = wakeups(web.host.pid())?;
        std::thread::sleep(Duration::from_secs(3));
        wakes.push((wakeups(web.host.pid())? - before) / 3.0);
        web.host.stop();
    }
    report("web_idle_rss", percentile(resident, 0.5), "MiB");
    report("web_idle_peak_rss", percentile(peaks, 0.5), "MiB");
    report("web_idle_wakeups", percentile(wakes, 0.5), "per s");
    Ok(())
}

/// The times the threads of process `pid` gave up the processor so far (each a sleep it woke
/// from), summed over its threads.
fn wakeups(pid: u32) -> anyhow::Result<f64> {
    let mut total = 0.0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let status = std::fs::read_to_string(task?.path().join("status")).unwrap_or_default();
        total += status
            .lines()
            .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|value| value.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
    }
    Ok(total)
}

/// A long session recorded headless, then paged from the tail through `session.history`.
fn history(dir: &Path, work: &Path) -> anyhow::Result<()> {
    let patch = patch(dir, HISTORY_STEPS)?;
    let recorder = Host::instant_turn(dir, &patch, work)?;
    recorder.wait_exit(Duration::from_secs(300))?;
    let web = Web::start(dir, &patch)?;
    let (listed, _) = web.call("session.list", &json!({}))?;
    let id = listed["sessions"][0]["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no recorded session: {listed}"))?
        .to_owned();
    let mut times = Vec::new();
    let mut bytes = 0;
    let mut events = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let (page, size) = web.call("session.history", &json!({"sessionId": id}))?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
        bytes = size;
        events = page["lastSeq"].as_u64().unwrap_or(0) + 1;
    }
    // The raw events of the same log, as a client paging raw events would receive them.
    let stored = dsh_session_jsonl::find_session(
        &dir.join("sessions"),
        dsh_session_jsonl::Encoding::Zstd,
        &id,
    )?
    .ok_or_else(|| anyhow::anyhow!("the session file is gone"))?;
    let read = dsh_session_jsonl::read_session(&stored)?;
    let raw: usize = read
        .events
        .iter()
        .map(|event| serde_json::to_string(event).map_or(0, |line| line.len() + 1))
        .sum();
    report("web_history_events", events as f64, "events");
    report("web_history_tail_p50", percentile(times.clone(), 0.5), "ms");
    report("web_history_tail_p95", percentile(times, 0.95), "ms");
    report("web_history_tail_bytes", bytes as f64, "bytes");
    report("web_history_raw_bytes", raw as f64, "bytes");
    // The host is stopped whatever the page did: a failed scenario must not leave it running.
    let painted = page_figures(&web, &id);
    web.host.stop();
    painted
}

/// Runs page scenario `name` of `tests/web/scenarios.mjs` on session `session` in Chromium
/// (when `cargo xtask test` installed it) and answers the JSON line it prints.
fn page_scenario(web: &Web, name: &str, session: &str) -> anyhow::Result<Option<Value>> {
    let root = crate::exe_dir().join("../..");
    let scripts = root.join("tests/web");
    let chromium = Path::new("/usr/bin/chromium");
    if !scripts.join("node_modules/playwright-core").is_dir() || !chromium.is_file() {
        eprintln!(
            "dsh-bench: no chromium or playwright-core: the page figures of `{name}` are skipped"
        );
        return Ok(None);
    }
    let token = web.bearer.trim_start_matches("Bearer ");
    let url = format!("http://{}/auth?token={token}", web.address);
    let out_dir = root.join("target/screenshots");
    std::fs::create_dir_all(&out_dir)?;
    let out = std::process::Command::new("node")
        .arg(scripts.join("scenarios.mjs"))
        .args([name, url.as_str(), &out_dir.display().to_string()])
        .env("DSH_BENCH_SESSION", session)
        .output()?;
    // What a scenario says of where its time went goes to the bench's stderr.
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        if line.starts_with('{') {
            eprintln!("dsh-bench: {name}: {line}");
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|line| line.starts_with('{'))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the page bench `{name}` printed nothing: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    Ok(Some(serde_json::from_str(line)?))
}

/// The long history in Chromium: navigation to the last item painted, the JS heap, the DOM.
fn page_figures(web: &Web, session: &str) -> anyhow::Result<()> {
    let Some(figures) = page_scenario(web, "bench-history", session)? else {
        return Ok(());
    };
    report(
        "web_page_history_paint",
        figures["paintMs"].as_f64().unwrap_or(f64::NAN),
        "ms",
    );
    report(
        "web_page_history_wall",
        figures["wallMs"].as_f64().unwrap_or(f64::NAN),
        "ms",
    );
    report(
        "web_page_js_heap",
        figures["heapBytes"].as_f64().unwrap_or(f64::NAN) / 1_048_576.0,
        "MiB",
    );
    report(
        "web_page_dom_nodes",
        figures["domNodes"].as_f64().unwrap_or(f64::NAN),
        "nodes",
    );
    report(
        "web_page_transfer",
        figures["pageBytes"].as_f64().unwrap_or(f64::NAN) / 1000.0,
        "kB",
    );
    Ok(())
}

/// Deltas of the paced answer, one every [`PACE_MS`]: 100 events a second for 5 s.
const PACED_DELTAS: usize = 500;
const PACE_MS: u64 = 10;

/// Runs page scenario `scenario` on a new session of a host whose bench model streams its
/// answer as `model_config` (YAML lines of the model row's config) says, and reports each
/// `(figure, key of the scenario's JSON, unit)`.
fn paced_page(
    dir: &Path,
    name: &str,
    model_config: &str,
    scenario: &str,
    figures: &[(&str, &str, &str)],
) -> anyhow::Result<()> {
    let path = dir.join(format!("{name}.patch.yml"));
    std::fs::write(
        &path,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: 0\n{model_config}"
        ),
    )?;
    let web = Web::start(dir, &path)?;
    let (created, _) = web.call("session.create", &json!({"model": "instant/instant"}))?;
    let session = created["sessionId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no session"))?
        .to_owned();
    let found = page_scenario(&web, scenario, &session);
    web.host.stop();
    if let Some(found) = found? {
        for (figure, key, unit) in figures {
            report(figure, found[*key].as_f64().unwrap_or(f64::NAN), unit);
        }
    }
    Ok(())
}

/// An answer streamed at 100 events a second to a page in Chromium: commit-to-paint latency.
fn page_live(dir: &Path) -> anyhow::Result<()> {
    paced_page(
        dir,
        "paced",
        &format!("        textDeltas: {PACED_DELTAS}\n        paceMs: {PACE_MS}\n"),
        "bench-live",
        &[
            ("web_page_paint_frames", "frames", "frames"),
            ("web_page_commit_to_paint_p50", "p50", "ms"),
            ("web_page_commit_to_paint_p95", "p95", "ms"),
            ("web_page_commit_to_paint_p99", "p99", "ms"),
        ],
    )
}

/// The long answer of the figure: 30 KB of Markdown in 1,500 deltas, 100 a second.
const STREAMED_BYTES: usize = 30 * 1024;
const STREAMED_DELTAS: usize = 1500;

/// A 30 KB Markdown answer streamed at 100 deltas a second to a page in Chromium: its long
/// tasks and frame times while it streams.
fn page_stream(dir: &Path) -> anyhow::Result<()> {
    paced_page(
        dir,
        "streamed",
        &format!(
            "        textDeltas: {STREAMED_DELTAS}\n        paceMs: {PACE_MS}\n        markdownBytes: {STREAMED_BYTES}\n"
        ),
        "bench-stream",
        &[
            ("web_page_stream_long_tasks", "longTasks", "tasks"),
            ("web_page_stream_longest_task", "longestTask", "ms"),
            ("web_page_stream_frame_p95", "frameP95", "ms"),
            ("web_page_stream_frames", "frames", "frames"),
        ],
    )
}

/// What one follower saw of a live turn.
#[derive(Default)]
pub(crate) struct Seen {
    seqs: Vec<u64>,
    latencies: Vec<f64>,
    /// Bytes of the update frames, as they came off the wire.
    bytes: usize,
}

impl Seen {
    /// Notes a `session/update` frame as it arrives, `bytes` long on the wire; `true` once it
    /// ended the turn.
    pub(crate) fn update(&mut self, frame: &Value, bytes: usize) -> bool {
        let arrived = now_ms();
        self.bytes += bytes;
        self.seqs.push(frame["seq"].as_u64().unwrap_or(0));
        self.latencies
            .push((arrived - frame["time"].as_i64().unwrap_or(arrived)) as f64);
        frame["ops"]
            .as_array()
            .is_some_and(|ops| ops.iter().any(|op| op["item"]["kind"] == "turn-end"))
    }
}

/// What every follower of one turn saw, together.
pub(crate) struct Summary {
    /// The first follower's updates (the others are compared with them).
    pub(crate) reference: Vec<u64>,
    /// Followers that missed an update, got one twice or out of order.
    pub(crate) faulty: usize,
    /// The worst follower's own p99.
    pub(crate) worst_p99: f64,
    /// Every latency of every follower.
    pub(crate) all: Vec<f64>,
    /// Mean bytes of an update frame, over every follower's.
    pub(crate) frame_bytes: f64,
}

/// Waits for every follower and sums up what they saw.
pub(crate) fn summarize(
    followers: Vec<std::thread::JoinHandle<anyhow::Result<Seen>>>,
) -> anyhow::Result<Summary> {
    let mut seen = Vec::new();
    for follower in followers {
        seen.push(
            follower
                .join()
                .map_err(|_| anyhow::anyhow!("a follower panicked"))??,
        );
    }
    let reference = seen.first().map(|s| s.seqs.clone()).unwrap_or_default();
    let faulty = seen
        .iter()
        .filter(|s| s.seqs != reference || s.seqs.windows(2).any(|pair| pair[0] >= pair[1]))
        .count();
    let worst_p99 = seen
        .iter()
        .map(|s| percentile(s.latencies.clone(), 0.99))
        .fold(0.0, f64::max);
    let all = seen.iter().flat_map(|s| s.latencies.clone()).collect();
    let frames: usize = seen.iter().map(|s| s.seqs.len()).sum();
    let bytes: usize = seen.iter().map(|s| s.bytes).sum();
    Ok(Summary {
        reference,
        faulty,
        worst_p99,
        all,
        frame_bytes: bytes as f64 / frames.max(1) as f64,
    })
}

pub(crate) fn follow(mut socket: WebSocket<TcpStream>, session: &str) -> anyhow::Result<Seen> {
    socket.send(Message::text(
        json!({"type": "subscribe", "sessionId": session}).to_string(),
    ))?;
    let mut seen = Seen::default();
    loop {
        let Message::Text(text) = socket.read()? else {
            continue;
        };
        let frame: Value = serde_json::from_str(text.as_str())?;
        if frame["type"] == "session/update" && seen.update(&frame, text.len()) {
            return Ok(seen);
        }
    }
}

/// 50 sockets (and one that never reads) follow one turn of the instant model.
fn live(dir: &Path) -> anyhow::Result<()> {
    let patch = patch(dir, LIVE_STEPS)?;
    let web = Web::start(dir, &patch)?;
    let (created, _) = web.call("session.create", &json!({"model": "instant/instant"}))?;
    let session = created["sessionId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no session"))?
        .to_owned();
    let rss_before = web.host.status_kib("VmRSS")?;
    let mut stalled = web.socket()?;
    stalled.send(Message::text(
        json!({"type": "subscribe", "sessionId": session}).to_string(),
    ))?;
    let sockets: Vec<WebSocket<TcpStream>> = (0..CLIENTS)
        .map(|_| web.socket())
        .collect::<Result<_, _>>()?;
    let rss_connected = web.host.status_kib("VmRSS")?;
    let followers: Vec<_> = sockets
        .into_iter()
        .map(|socket| {
            let session = session.clone();
            std::thread::spawn(move || follow(socket, &session))
        })
        .collect();
    // Every follower subscribes before the turn starts.
    std::thread::sleep(Duration::from_millis(500));
    let cpu_before = cpu_seconds(web.host.pid())?;
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "go"}),
    )?;
    let Summary {
        reference,
        faulty,
        worst_p99,
        all,
        frame_bytes,
    } = summarize(followers)?;
    // The socket that never read during the turn: once it reads, it must have every update in
    // order (the kernel's buffers held them) or a resync (its queue overflowed): never a gap.
    let mut stalled_seqs = Vec::new();
    let mut resync = false;
    stalled
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(5)))?;
    while let Ok(message) = stalled.read() {
        let Message::Text(text) = message else {
            continue;
        };
        let frame: Value = serde_json::from_str(text.as_str())?;
        match frame["type"].as_str() {
            Some("session/resync") => {
                resync = true;
                break;
            }
            Some("session/update") => {
                stalled_seqs.push(frame["seq"].as_u64().unwrap_or(0));
                if stalled_seqs.len() == reference.len() {
                    break;
                }
            }
            _ => {}
        }
    }
    let intact = if resync || stalled_seqs == reference {
        1.0
    } else {
        0.0
    };
    report(
        "web_live_frames_per_client",
        reference.len() as f64,
        "frames",
    );
    report("web_live_latency_p50", percentile(all.clone(), 0.5), "ms");
    report("web_live_latency_p95", percentile(all.clone(), 0.95), "ms");
    report("web_live_latency_p99", percentile(all.clone(), 0.99), "ms");
    // Both ends read a millisecond clock, so the percentiles move in whole steps; the mean of
    // many such differences is not bound to them and shows a change of a fraction of one.
    let mean = all.iter().sum::<f64>() / all.len().max(1) as f64;
    report("web_live_latency_mean", mean, "ms");
    report("web_live_client_p99_worst", worst_p99, "ms");
    report("web_live_frame_bytes", frame_bytes, "bytes");
    // The host's CPU over the turn, its own steps included: what the fan-out to the sockets
    // costs the machine, beside what each socket waits.
    let cpu = cpu_seconds(web.host.pid())? - cpu_before;
    report(
        "web_live_host_cpu_per_frame",
        cpu * 1e6 / (reference.len() * CLIENTS).max(1) as f64,
        "us",
    );
    report(
        "web_live_clients_with_lost_or_twice",
        faulty as f64,
        "clients",
    );
    report("web_live_slow_client_intact", intact, "yes");
    report(
        "web_live_rss_per_connection",
        (rss_connected - rss_before) / (CLIENTS + 1) as f64,
        "KiB",
    );
    web.host.stop();
    Ok(())
}
