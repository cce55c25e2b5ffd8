//! Faults of the clients of a running host (the web profile's client socket): a client that
//! stops reading while a long answer streams to it, one that sends lines that are not
//! JSON-RPC, one that sends a line without end, and one that leaves mid-turn. Each time the
//! host stays up, a well-behaved client beside it is served to the turn's end, and the stored
//! log checks sound.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk, usage};
use dsh_tests::line_client::{LineClient, client_socket};
use dsh_tests::sessions::{PLAIN_STORE, session_logs};
use dsh_tests::web::{start, turn_ended};
use dsh_tests::{TestDir, run_host};
use serde_json::json;

use super::kit::sound;
use super::{Fault, Seen};

pub(crate) fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "client: stops reading mid-answer",
            expected: "host up, others served, turn ends, log sound",
            run: stops_reading,
        },
        Fault {
            name: "client: follows a 1 MiB answer live",
            expected: "frame bytes linear in the answer (at most 4x)",
            run: follows_a_long_answer,
        },
        Fault {
            name: "client: lines that are not JSON-RPC",
            expected: "named parse errors, connection lives",
            run: garbage_lines,
        },
        Fault {
            name: "client: a line without end",
            expected: "host memory bounded, host up and serving",
            run: endless_line,
        },
        Fault {
            name: "client: leaves mid-turn",
            expected: "turn completes, log sound",
            run: leaves_mid_turn,
        },
    ]
}

/// An answer of `pieces` content deltas of 8 KiB each.
fn long_answer(pieces: usize) -> Reply {
    let mut events = vec![first_chunk()];
    events.extend((0..pieces).map(|_| SseEvent::content(&"z".repeat(8 << 10))));
    events.push(SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)));
    events.push(SseEvent::Done);
    Reply::Sse(events)
}

fn hello(client: &mut LineClient, name: &str) {
    client.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": name, "version": "0"}}),
    );
}

/// A well-behaved client on `path` following `session`.
fn follower(path: &Path, session: &str) -> LineClient {
    let mut client = LineClient::connect(path);
    hello(&mut client, "follower");
    client.call("session.subscribe", json!({"sessionId": session}));
    client
}

/// A fresh dir whose home stores plain JSONL, for [`up_and_sound`] to read.
fn plain_dir(name: &str) -> TestDir {
    let dir = TestDir::new(name);
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    dir
}

/// The host's status still answers, and the stored logs (`logs` of them at least) are sound.
fn up_and_sound(home: &Path, pid: i32, logs: usize) -> String {
    let status = run_host(home, &["status"]);
    assert!(
        status.stdout.contains(&format!("dsh-host pid {pid}")),
        "the host does not answer its status: {status:?}"
    );
    let found = session_logs(&home.join("sessions")).len();
    assert!(found >= logs, "{found} stored log(s), wanted {logs}");
    sound(home, &[])
}

/// Resident memory of process `pid`, in MiB.
fn rss_mib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        >> 10
}

fn stops_reading() -> Seen {
    let server = FakeDeepSeek::start(vec![long_answer(128)]);
    let dir = plain_dir("fault-client-stuck");
    let mut web = start(&server, &dir);
    let path = client_socket(&dir.home(), web.host.pid());
    let mut stuck = LineClient::connect(&path);
    hello(&mut stuck, "stuck");
    let session = stuck.call("session.create", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut follower = follower(&path, &session);
    stuck.call("session.subscribe", json!({"sessionId": session}));
    stuck.send(
        "session.prompt",
        json!({"sessionId": session, "text": "talk long"}),
    );
    // From here the stuck client reads nothing: 128 updates, each carrying the answer so far,
    // pile up towards it (MiBs, more than its socket holds).
    let frames = follower.until(100_000, turn_ended).len();
    let summary = up_and_sound(&dir.home(), web.host.pid(), 1);
    drop(stuck);
    assert_eq!(web.host.stop(), Some(0), "the host did not stop cleanly");
    Seen::Held(format!("follower saw the end ({frames} frames); {summary}"))
}

fn garbage_lines() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::text("FINE")]);
    let dir = plain_dir("fault-client-garbage");
    let mut web = start(&server, &dir);
    let path = client_socket(&dir.home(), web.host.pid());
    let mut client = LineClient::connect(&path);
    client.send_line("this is not json");
    let first = client.unmatched_answer();
    client.send_line("{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \"no.such.method\"}");
    let second = client.answer(99);
    hello(&mut client, "after-garbage");
    let (one, two) = (
        first["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        second["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    );
    assert!(!one.is_empty() && !two.is_empty(), "{first} {second}");
    assert_eq!(web.host.stop(), Some(0));
    Seen::Held(format!(
        "`{}`, `{}`, then served",
        super::cell(&one, 40),
        super::cell(&two, 40)
    ))
}

fn endless_line() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::text("FINE")]);
    let dir = plain_dir("fault-client-endless");
    let mut web = start(&server, &dir);
    let path = client_socket(&dir.home(), web.host.pid());
    let before = rss_mib(web.host.pid());
    let mut stream = UnixStream::connect(&path).unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0usize;
    // Up to 256 MiB: the host must stop reading long before.
    while sent < 256 << 20 {
        match stream.write(&chunk) {
            Ok(written) => sent += written,
            Err(_) => break,
        }
    }
    // The host may read on past its line limit (discarding) or stop reading: either way its
    // memory must not hold the line.
    let grew = rss_mib(web.host.pid()).saturating_sub(before);
    assert!(grew < 96, "the host grew by {grew} MiB reading one line");
    let mut other = LineClient::connect(&path);
    hello(&mut other, "beside");
    let summary = up_and_sound(&dir.home(), web.host.pid(), 0);
    assert_eq!(web.host.stop(), Some(0));
    Seen::Held(format!(
        "{} MiB sent, host grew {grew} MiB, another client served; {summary}",
        sent >> 20
    ))
}

fn leaves_mid_turn() -> Seen {
    let dir = plain_dir("fault-client-leaves");
    let gate = dir.join("gate");
    let server = FakeDeepSeek::start(vec![Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("first half, "),
        SseEvent::Gate(gate.clone()),
        SseEvent::content("second half"),
        SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)),
        SseEvent::Done,
    ])]);
    let mut web = start(&server, &dir);
    let path = client_socket(&dir.home(), web.host.pid());
    let mut leaving = LineClient::connect(&path);
    hello(&mut leaving, "leaving");
    let session = leaving.call("session.create", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut follower = follower(&path, &session);
    leaving.call("session.subscribe", json!({"sessionId": session}));
    leaving.call(
        "session.prompt",
        json!({"sessionId": session, "text": "hi"}),
    );
    server.wait_requests(1, dsh_tests::WAIT);
    drop(leaving);
    std::fs::write(&gate, "").unwrap();
    let frames = follower.until(100_000, turn_ended).len();
    let summary = up_and_sound(&dir.home(), web.host.pid(), 1);
    assert_eq!(web.host.stop(), Some(0));
    Seen::Held(format!(
        "turn ended after the client left ({frames} frames); {summary}"
    ))
}

/// A client following a 1 MiB answer streamed in 128 deltas: what the frames carry should
/// grow with the answer, not with the answer times its deltas.
fn follows_a_long_answer() -> Seen {
    const PIECES: usize = 128;
    let answer = PIECES * (8 << 10);
    let server = FakeDeepSeek::start(vec![long_answer(PIECES)]);
    let dir = plain_dir("fault-client-long");
    let mut web = start(&server, &dir);
    let path = client_socket(&dir.home(), web.host.pid());
    let mut client = LineClient::connect(&path);
    hello(&mut client, "reader");
    let session = client.call("session.create", json!({}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut follower = follower(&path, &session);
    client.call(
        "session.prompt",
        json!({"sessionId": session, "text": "talk long"}),
    );
    let frames = follower.until(100_000, turn_ended);
    let bytes: usize = frames.iter().map(|frame| frame.to_string().len()).sum();
    let summary = up_and_sound(&dir.home(), web.host.pid(), 1);
    assert_eq!(web.host.stop(), Some(0));
    let seen = format!(
        "{} MiB of frames ({} frames) for a {} MiB answer; {summary}",
        bytes >> 20,
        frames.len(),
        answer >> 20
    );
    if bytes > 4 * answer {
        return Seen::Known(format!(
            "each session/update of the streaming answer carries the whole message so far \
             (quadratic traffic: a 2 MiB answer takes a client 13 s to follow, 4 MiB over 30 s): {seen}"
        ));
    }
    Seen::Held(seen)
}
