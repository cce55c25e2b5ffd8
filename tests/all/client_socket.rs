//! The client socket of a running web host, through the real binary: two processes' worth of
//! clients attach to one live session, see the same frames in the same order, and either
//! answers its approval (the first answer wins); a client that leaves while an approval waits
//! only for it leaves it refused; bad lines get named errors and the connection lives;
//! `dsh-host status` lists the socket; the socket is owner-only; `dsh-host schema` prints the
//! protocol they speak.

use std::os::unix::fs::PermissionsExt;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::{LineClient, client_socket};
use dsh_tests::web::{ASKING_POLICY, start_with, turn_ended, undecided_card};
use dsh_tests::{TestDir, run_host};
use serde_json::{Value, json};

fn echo_turn() -> Vec<Reply> {
    let command = json!({"command": "echo attached", "description": "say it"}).to_string();
    vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("done"),
    ]
}

/// A client that says it answers approvals.
fn answerer(path: &std::path::Path, name: &str) -> LineClient {
    let mut client = LineClient::connect(path);
    let hello = client.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": name, "version": "0"}, "features": ["approvals"]}),
    );
    assert_eq!(hello["protocolVersion"], 1, "{hello}");
    assert_eq!(hello["features"], json!(["approvals"]), "{hello}");
    assert_eq!(hello["host"]["profile"], "web", "{hello}");
    client
}

/// The session updates among `frames`, without what differs per connection.
fn updates(frames: &[Value]) -> Vec<Value> {
    frames
        .iter()
        .filter(|frame| frame["type"] == "session/update")
        .cloned()
        .collect()
}

#[test]
fn two_clients_on_one_session_see_the_same_frames_and_either_answers_its_approval() {
    dsh_tests::plugin_lib("hooks_probe");
    let server = FakeDeepSeek::start(echo_turn());
    let dir = TestDir::new("socket-two-clients");
    let mut web = start_with(&server, &dir, ASKING_POLICY);
    let path = client_socket(&dir.home(), web.host.pid());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the socket is owner-only: {mode:o}");
    let mut first = answerer(&path, "first");
    let mut second = answerer(&path, "second");
    let created = first.call("session.create", json!({}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    for client in [&mut first, &mut second] {
        client.call("session.subscribe", json!({"sessionId": session}));
        client.until(50, |frame| frame["type"] == "session/subscribed");
    }
    first.call(
        "session.prompt",
        json!({"sessionId": session, "text": "run it"}),
    );
    let mut seen_first = first.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    let mut seen_second = second.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    let ask = undecided_card(&seen_second, "approval").expect("the second client sees the ask");
    let id = ask["id"].as_str().unwrap().to_owned();
    // The second client answers; the first one's answer comes too late.
    let won = second.call(
        "approval.respond",
        json!({"approvalId": id, "outcome": "allowed-once"}),
    );
    assert_eq!(won["accepted"], true, "{won}");
    let late = first.call(
        "approval.respond",
        json!({"approvalId": id, "outcome": "rejected"}),
    );
    assert_eq!(late["accepted"], false, "{late}");
    seen_first.extend(first.until(300, turn_ended));
    seen_second.extend(second.until(300, turn_ended));
    let (a, b) = (updates(&seen_first), updates(&seen_second));
    assert!(a.len() > 4, "{a:?}");
    assert_eq!(a, b, "both clients see the same updates in the same order");
    let seqs: Vec<u64> = a
        .iter()
        .map(|frame| frame["seq"].as_u64().unwrap())
        .collect();
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "none lost or repeated: {seqs:?}"
    );
    let tool = a
        .iter()
        .flat_map(|frame| frame["ops"].as_array().cloned().unwrap_or_default())
        .rfind(|op| op["item"]["kind"] == "tool")
        .expect("a tool card");
    assert_eq!(tool["item"]["status"], "ok", "{tool}");
    // `dsh-host status` names the socket beside the host's fiber table.
    let status = run_host(&dir.home(), &["status"]);
    assert!(
        status
            .stdout
            .contains(&format!("client socket: {}", path.display())),
        "{}",
        status.stdout
    );
    assert_eq!(web.host.stop(), Some(0));
    assert!(
        !path.exists(),
        "the socket file is removed when the host stops"
    );
}

#[test]
fn an_approval_whose_only_answerer_leaves_is_refused_after_a_short_grace() {
    dsh_tests::plugin_lib("hooks_probe");
    let server = FakeDeepSeek::start(echo_turn());
    let dir = TestDir::new("socket-answerer-leaves");
    let mut web = start_with(&server, &dir, ASKING_POLICY);
    let path = client_socket(&dir.home(), web.host.pid());
    let mut watcher = LineClient::connect(&path);
    let leaving = answerer(&path, "leaving");
    let created = watcher.call("session.create", json!({}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    watcher.call("session.subscribe", json!({"sessionId": session}));
    watcher.until(50, |frame| frame["type"] == "session/subscribed");
    watcher.call(
        "session.prompt",
        json!({"sessionId": session, "text": "run it"}),
    );
    watcher.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    let started = std::time::Instant::now();
    // The only client that answers approvals goes; after the grace a reloading page gets,
    // the ask is refused rather than left waiting for nobody.
    drop(leaving);
    let frames = watcher.until(300, turn_ended);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(12),
        "the ask waited {:?} for nobody",
        started.elapsed()
    );
    let tool = frames
        .iter()
        .flat_map(|frame| frame["ops"].as_array().cloned().unwrap_or_default())
        .rfind(|op| op["item"]["kind"] == "tool")
        .expect("a tool card");
    assert_eq!(tool["item"]["status"], "error", "refused, not run: {tool}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn bad_lines_get_named_errors_and_the_connection_lives() {
    let server = FakeDeepSeek::start(vec![]);
    let dir = TestDir::new("socket-bad-input");
    let mut web = start_with(&server, &dir, "");
    let path = client_socket(&dir.home(), web.host.pid());
    let mut client = LineClient::connect(&path);
    client.send_line("this is not json");
    let parse = client.unmatched_answer();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let id = client.send("session.explode", json!({}));
    let unknown = client.answer(id);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session.explode"),
        "{unknown}"
    );
    let id = client.send("session.rename", json!({"sessionId": "s1", "title": 5}));
    let bad = client.answer(id);
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"].as_str().unwrap().contains("title"),
        "{bad}"
    );
    let id = client.send("session.history", json!({"sessionId": "no-such-session"}));
    let missing = client.answer(id);
    assert_eq!(
        missing["error"]["data"]["code"], "session-not-found",
        "{missing}"
    );
    // Still alive: a good call after the bad ones works.
    let list = client.call("session.list", json!(null));
    assert!(list["sessions"].is_array(), "{list}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_session_is_found_by_its_title_and_by_its_messages() {
    let server = FakeDeepSeek::start(vec![Reply::text("the answer mentions zebras")]);
    let dir = TestDir::new("socket-search");
    let mut web = start_with(&server, &dir, "");
    let path = client_socket(&dir.home(), web.host.pid());
    let mut client = LineClient::connect(&path);
    let created = client.call("session.create", json!({}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client.call("session.subscribe", json!({"sessionId": session}));
    client.call(
        "session.prompt",
        json!({"sessionId": session, "text": "tell me about stripes"}),
    );
    client.until(300, turn_ended);
    client.call(
        "session.rename",
        json!({"sessionId": session, "title": "Savanna notes"}),
    );
    for (query, snippet) in [("savanna", "Savanna notes"), ("zebras", "zebras")] {
        let found = client.call("session.search", json!({"query": query}));
        let hits = found["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 1, "{query}: {found}");
        assert_eq!(hits[0]["sessionId"], session.as_str(), "{found}");
        assert!(
            hits[0]["snippet"].as_str().unwrap().contains(snippet),
            "{query}: {found}"
        );
    }
    let none = client.call("session.search", json!({"query": "giraffe"}));
    assert_eq!(none["hits"], json!([]), "{none}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn schema_prints_every_method_of_the_client_protocol_with_its_params_and_result() {
    let dir = TestDir::new("cli-schema");
    let out = run_host(&dir.home(), &["schema"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let document: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(document["protocolVersion"], 1);
    let methods = document["methods"].as_object().unwrap();
    for method in [
        "initialize",
        "session.prompt",
        "session.subscribe",
        "approval.respond",
    ] {
        let entry = &methods[method];
        assert!(
            entry["params"].is_object() && entry["result"].is_object(),
            "{method}: {entry}"
        );
    }
    let defs = document["$defs"].as_object().unwrap();
    for name in [
        "ServerFrame",
        "ClientFrame",
        "RpcErrorCode",
        "ChatItem",
        "SendPrompt",
    ] {
        assert!(defs.contains_key(name), "{name} is not defined");
    }
}
