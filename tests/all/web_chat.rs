//! A conversation through the web API against the fake DeepSeek server: create a session,
//! follow it on the event socket, prompt it, and watch the turn arrive as chat items (the
//! question, reasoning and a terminal card, the answer, the turn's end), each update once, in
//! seq order; the history folds to the same items, and a reconnect resumes after the last seq
//! it saw.

use std::collections::BTreeMap;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::http::{Socket, envelope, send, websocket};
use dsh_tests::{HostProcess, TestDir, WAIT};
use serde_json::{Value, json};

struct Web {
    host: HostProcess,
    address: String,
    bearer: String,
}

fn start(server: &FakeDeepSeek, dir: &TestDir) -> Web {
    let patch = dir.write(
        "fake.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let host = HostProcess::start_with_env(
        &dir.home(),
        &[
            "--patch",
            patch.to_str().unwrap(),
            "--profile",
            "web",
            "--",
            "--no-open",
            "--port",
            "0",
        ],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    );
    let line = host.wait_stdout("dsh web: open http://", WAIT);
    let url = line.trim_start_matches("dsh web: open http://");
    let (address, query) = url.split_once("/auth?").unwrap();
    Web {
        host,
        address: address.to_owned(),
        bearer: format!("Bearer {}", query.trim_start_matches("token=")),
    }
}

impl Web {
    fn call(&self, method: &str, payload: &Value) -> Value {
        let response = send(
            &self.address,
            "POST",
            &format!("/api/{method}"),
            &[
                ("Authorization", &self.bearer),
                ("Content-Type", "application/json"),
            ],
            &envelope(method, payload),
        );
        assert_eq!(response.status, 200, "{response:?}");
        let body = response.json();
        assert_eq!(body["result"]["ok"], true, "{method}: {body}");
        body["result"]["value"].clone()
    }

    fn events(&self) -> Socket {
        let origin = format!("http://{}", self.address);
        websocket(
            &self.address,
            "/api/events",
            &[("Authorization", &self.bearer), ("Origin", &origin)],
        )
        .expect("the event socket")
    }
}

/// Applies update frames to a copy of the items, as a client does.
fn apply(items: &mut BTreeMap<String, Value>, order: &mut Vec<String>, frame: &Value) {
    for op in frame["ops"].as_array().into_iter().flatten() {
        match op["op"].as_str() {
            Some("upsert") => {
                let id = op["item"]["id"].as_str().unwrap().to_owned();
                if !items.contains_key(&id) {
                    order.push(id.clone());
                }
                items.insert(id, op["item"].clone());
            }
            Some("append") => {
                let item = items
                    .get_mut(op["itemId"].as_str().unwrap())
                    .expect("an item to append to");
                let field = op["field"].as_str().unwrap();
                let text = format!(
                    "{}{}",
                    item[field].as_str().unwrap(),
                    op["text"].as_str().unwrap()
                );
                item[field] = Value::String(text);
            }
            other => panic!("unknown op {other:?}"),
        }
    }
}

fn turn_ended(frame: &Value) -> bool {
    frame["type"] == "session/update"
        && frame["ops"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|op| op["item"]["kind"] == "turn-end")
}

#[test]
fn a_prompt_streams_its_turn_as_items_that_the_history_agrees_with() {
    let command = json!({"command": "echo from-the-shell", "description": "say it"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::reasoning_then_text("The shell answered.", "It printed from-the-shell."),
    ]);
    let dir = TestDir::new("web-chat");
    let mut web = start(&server, &dir);
    let created = web.call(
        "session.create",
        &json!({"cwd": dir.join("work").to_str().unwrap()}),
    );
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let mut socket = web.events();
    socket.send(&json!({"type": "subscribe", "sessionId": session}));
    let subscribed = socket.until(50, |frame| frame["type"] == "session/subscribed");
    assert!(
        subscribed
            .last()
            .is_some_and(|frame| frame["type"] == "session/subscribed"),
        "{subscribed:?}"
    );
    let accepted = web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "run the shell", "clientRequestId": "c1"}),
    );
    // A retried call with the same client request id is not sent twice.
    let again = web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "run the shell", "clientRequestId": "c1"}),
    );
    assert_eq!(accepted["messageId"], again["messageId"]);
    let frames = socket.until(500, turn_ended);
    assert!(
        frames.last().is_some_and(turn_ended),
        "no turn end: {frames:?}"
    );
    let updates: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "session/update")
        .collect();
    let seqs: Vec<u64> = updates.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "seqs out of order or twice: {seqs:?}"
    );
    let (mut items, mut order) = (BTreeMap::new(), Vec::new());
    for update in &updates {
        apply(&mut items, &mut order, update);
    }
    let kinds: Vec<&str> = order
        .iter()
        .map(|id| items[id]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["user", "tool", "assistant", "turn-end"],
        "{items:#?}"
    );
    let tool = &items[&order[1]];
    assert_eq!(tool["status"], "ok");
    assert_eq!(tool["view"]["kind"], "terminal");
    assert_eq!(tool["view"]["command"], "echo from-the-shell");
    assert_eq!(
        tool["view"]["output"].as_str().unwrap().trim(),
        "from-the-shell"
    );
    assert_eq!(tool["view"]["exitCode"], 0);
    let answer = &items[&order[2]];
    assert_eq!(answer["text"], "It printed from-the-shell.");
    assert_eq!(answer["reasoning"], "The shell answered.");
    assert_eq!(answer["streaming"], false);
    assert_eq!(items[&order[3]]["reason"]["kind"], "completed");
    // The history is the same fold: the same items, by id and shape.
    let history = web.call("session.history", &json!({"sessionId": session}));
    let folded: Vec<&Value> = order.iter().map(|id| &items[id]).collect();
    let listed: Vec<&Value> = history["items"].as_array().unwrap().iter().collect();
    assert_eq!(listed, folded);
    let last_seq = history["lastSeq"].as_u64().unwrap();
    assert_eq!(
        Some(last_seq),
        seqs.last().copied().map(|seq| seq.max(last_seq))
    );
    // A reconnect after the tool card gets what came after it, and nothing before.
    let tool_seq = updates
        .iter()
        .find(|f| {
            f["ops"]
                .as_array()
                .unwrap()
                .iter()
                .any(|op| op["item"]["kind"] == "tool")
        })
        .and_then(|f| f["seq"].as_u64())
        .unwrap();
    let mut resumed = web.events();
    resumed.send(&json!({"type": "subscribe", "sessionId": session, "afterSeq": tool_seq}));
    let replayed = resumed.until(200, |frame| frame["type"] == "session/subscribed");
    let replayed_seqs: Vec<u64> = replayed
        .iter()
        .filter(|f| f["type"] == "session/update")
        .map(|f| f["seq"].as_u64().unwrap())
        .collect();
    assert!(
        !replayed_seqs.is_empty() && replayed_seqs.iter().all(|seq| *seq > tool_seq),
        "{replayed_seqs:?}"
    );
    let expected: Vec<u64> = seqs.iter().copied().filter(|seq| *seq > tool_seq).collect();
    assert_eq!(replayed_seqs, expected);
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn the_event_stream_is_a_websocket_from_this_origin_only() {
    let server = FakeDeepSeek::start(Vec::new());
    let dir = TestDir::new("web-socket-guards");
    let mut web = start(&server, &dir);
    let plain = send(
        &web.address,
        "GET",
        "/api/events",
        &[("Authorization", &web.bearer)],
        "",
    );
    assert_eq!(plain.status, 426, "{plain:?}");
    let foreign = websocket(
        &web.address,
        "/api/events",
        &[
            ("Authorization", &web.bearer),
            ("Origin", "http://127.0.0.1:9"),
        ],
    );
    assert!(foreign.is_err(), "a foreign origin got a socket");
    let unsigned = websocket(
        &web.address,
        "/api/events",
        &[("Origin", &format!("http://{}", web.address))],
    );
    assert!(unsigned.is_err(), "no credentials got a socket");
    let mut socket = web.events();
    socket.send(&json!({"type": "subscribe", "sessionId": "no-such-session"}));
    let refused = socket.until(5, |frame| frame["type"] == "session/resync");
    assert!(
        refused
            .last()
            .is_some_and(|frame| frame["sessionId"] == "no-such-session"),
        "{refused:?}"
    );
    assert_eq!(web.host.stop(), Some(0));
}
