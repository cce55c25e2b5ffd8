//! A conversation through the web API against the fake DeepSeek server: create a session,
//! follow it on the event socket, prompt it, and watch the turn arrive as chat items (the
//! question, reasoning and a terminal card, the answer, the turn's end), each update once, in
//! seq order; the history folds to the same items, and a reconnect resumes after the last seq
//! it saw.

use std::collections::BTreeMap;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::http::{envelope, send, websocket};
use dsh_tests::web::{ASKING_POLICY, start, start_with, turn_ended, undecided_card};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

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
            Some("blocks") => {
                let item = items
                    .get_mut(op["itemId"].as_str().unwrap())
                    .expect("an item whose blocks change");
                let from = op["from"].as_u64().unwrap() as usize;
                let mut blocks: Vec<Value> = item["blocks"].as_array().cloned().unwrap_or_default();
                assert!(
                    from <= blocks.len(),
                    "blocks from {from} of {}",
                    blocks.len()
                );
                blocks.truncate(from);
                blocks.extend(op["blocks"].as_array().unwrap().iter().cloned());
                item["blocks"] = Value::Array(blocks);
            }
            other => panic!("unknown op {other:?}"),
        }
    }
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
    // Read once before the turn: the history after it is that fold caught up, not a new one.
    let before = web.call("session.history", &json!({"sessionId": session}));
    assert_eq!(before["items"], json!([]), "{before}");
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

fn echo_turn() -> Vec<Reply> {
    let command = json!({"command": "echo approved-run", "description": "say it"}).to_string();
    vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("done"),
    ]
}

/// An ask reaches the page as an answerable card; the first answer decides it, a second is
/// not accepted, and the decision is logged, so every tab's card shows it.
#[test]
fn an_ask_is_answered_from_the_page_and_the_first_answer_wins() {
    dsh_tests::plugin_lib("hooks_probe");
    for (answer, status, outcome) in [
        ("allowed-once", "ok", "allowed-once"),
        ("rejected", "error", "rejected"),
    ] {
        let server = FakeDeepSeek::start(echo_turn());
        let dir = TestDir::new(&format!("web-approval-{answer}"));
        let mut web = start_with(&server, &dir, ASKING_POLICY);
        let (session, mut socket) = web.followed_session();
        web.call(
            "session.prompt",
            &json!({"sessionId": session, "text": "run it"}),
        );
        let frames = socket.until(300, |frame| {
            undecided_card(std::slice::from_ref(frame), "approval").is_some()
        });
        let ask =
            undecided_card(&frames, "approval").unwrap_or_else(|| panic!("no ask: {frames:?}"));
        assert_eq!(ask["toolName"], "bash");
        assert_eq!(ask["reason"], "the policy asks");
        let id = ask["id"].as_str().unwrap();
        let first = web.call(
            "approval.respond",
            &json!({"approvalId": id, "outcome": answer}),
        );
        assert_eq!(first["accepted"], true);
        let second = web.call(
            "approval.respond",
            &json!({"approvalId": id, "outcome": "allowed-once"}),
        );
        assert_eq!(
            second["accepted"], false,
            "a second answer decided it again"
        );
        socket.until(300, turn_ended);
        let history = web.call("session.history", &json!({"sessionId": session}));
        let items = history["items"].as_array().unwrap();
        let decided = items
            .iter()
            .find(|item| item["kind"] == "approval")
            .unwrap();
        assert_eq!(decided["outcome"], outcome, "{history}");
        let tool = items.iter().find(|item| item["kind"] == "tool").unwrap();
        assert_eq!(tool["status"], status, "{tool}");
        assert_eq!(web.host.stop(), Some(0));
    }
}

/// The "Ask before every command" preset puts a shell command no rule asks about to the page.
#[test]
fn a_session_that_asks_before_every_command_asks_for_a_plain_echo() {
    let server = FakeDeepSeek::start(echo_turn());
    let dir = TestDir::new("web-ask-every-command");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.setPermission",
        &json!({"sessionId": session, "preset": "ask-every-command"}),
    );
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "run it"}),
    );
    let frames = socket.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    let ask = undecided_card(&frames, "approval").unwrap_or_else(|| panic!("no ask: {frames:?}"));
    assert_eq!(ask["reason"], "this session asks before every command");
    let id = ask["id"].as_str().unwrap();
    web.call(
        "approval.respond",
        &json!({"approvalId": id, "outcome": "allowed-once"}),
    );
    socket.until(300, turn_ended);
    let history = web.call("session.history", &json!({"sessionId": session}));
    assert_eq!(history["preset"], "ask-every-command", "{history}");
    let tool = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["kind"] == "tool")
        .unwrap();
    assert_eq!(tool["status"], "ok", "{tool}");
    assert_eq!(web.host.stop(), Some(0));
}

/// With no page connected nobody can answer: the ask is refused as unavailable, never allowed.
#[test]
fn an_ask_with_no_page_connected_fails_closed() {
    dsh_tests::plugin_lib("hooks_probe");
    let server = FakeDeepSeek::start(echo_turn());
    let dir = TestDir::new("web-approval-nobody");
    let mut web = start_with(&server, &dir, ASKING_POLICY);
    let session = web.new_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "run it"}),
    );
    let deadline = std::time::Instant::now() + WAIT;
    let history = loop {
        let history = web.call("session.history", &json!({"sessionId": session}));
        if history["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["kind"] == "turn-end")
        {
            break history;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the turn never ended: {history}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let items = history["items"].as_array().unwrap();
    let decided = items
        .iter()
        .find(|item| item["kind"] == "approval")
        .unwrap();
    assert_eq!(decided["outcome"], "unavailable", "{history}");
    let tool = items.iter().find(|item| item["kind"] == "tool").unwrap();
    assert_eq!(tool["status"], "error");
    assert!(
        !tool["view"]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("approved-run")
    );
    assert_eq!(web.host.stop(), Some(0));
}

/// Rename, fork from an item, and delete (refused while a turn runs; afterwards the folder
/// moves to the trash and the list drops it).
#[test]
fn a_session_is_renamed_forked_from_an_item_deleted_into_the_trash_and_restored() {
    let server = FakeDeepSeek::start(vec![
        Reply::text("the first answer"),
        Reply::Stall { ms: 20_000 },
    ]);
    let dir = TestDir::new("web-manage");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "first"}),
    );
    socket.until(300, turn_ended);
    let renamed = web.call(
        "session.rename",
        &json!({"sessionId": session, "title": "Named by hand"}),
    );
    assert_eq!(renamed, json!({}));
    let titled = socket.until(20, |frame| frame["title"] == "Named by hand");
    assert!(
        titled
            .last()
            .is_some_and(|frame| frame["title"] == "Named by hand"),
        "{titled:?}"
    );
    let history = web.call("session.history", &json!({"sessionId": session}));
    assert_eq!(history["title"], "Named by hand");
    // Fork after the answer: the child holds the question and the answer.
    let answer = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["kind"] == "assistant")
        .unwrap();
    let forked = web.call(
        "session.fork",
        &json!({"sessionId": session, "itemId": answer["id"]}),
    );
    let child = forked["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(child, session);
    let child_history = web.call("session.history", &json!({"sessionId": child}));
    let kinds: Vec<&str> = child_history["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["kind"].as_str().unwrap())
        .collect();
    assert_eq!(&kinds[..2], ["user", "assistant"], "{child_history}");
    // The fork works where its parent did.
    let listed = web.call("session.list", &json!({}));
    let cwd_of = |id: &str| {
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["cwd"].clone())
    };
    assert!(cwd_of(&child).is_some(), "the fork is not listed: {listed}");
    assert_eq!(cwd_of(&child), cwd_of(&session), "{listed}");
    // A running session is not deleted.
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "hang"}),
    );
    socket.until(50, |frame| frame["running"] == true);
    let busy = send(
        &web.address,
        "POST",
        "/api/session.delete",
        &[
            ("Authorization", &web.bearer),
            ("Content-Type", "application/json"),
        ],
        &envelope("session.delete", &json!({"sessionId": session})),
    );
    assert_eq!(
        busy.json()["result"]["error"]["code"],
        "agent-busy",
        "{busy:?}"
    );
    web.call("session.cancel", &json!({"sessionId": session}));
    // Idle once its driver went quiet (after the turn's end).
    socket.until(100, |frame| {
        frame["type"] == "host/session-status"
            && frame["sessionId"] == session
            && frame["running"] == false
    });
    web.call("session.delete", &json!({"sessionId": session}));
    let listed = web.call("session.list", &json!({}));
    assert!(
        !listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == session),
        "{listed}"
    );
    let trash: Vec<String> = std::fs::read_dir(dir.home().join("trash"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        trash.iter().any(|name| name.starts_with(&session)),
        "{trash:?}"
    );
    // Back out of the trash, where it was.
    web.call("session.restore", &json!({"sessionId": session}));
    let listed = web.call("session.list", &json!({}));
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == session),
        "restored but not listed: {listed}"
    );
    assert_eq!(web.host.stop(), Some(0));
}

/// A tool's long output is cut on the wire (history and live alike) and answered whole by
/// `session.item`.
#[test]
fn a_long_tool_output_is_cut_on_the_wire_and_fetched_whole_on_demand() {
    let command = json!({"command": "yes x | head -c 40000", "description": "a lot"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("that was long"),
    ]);
    let dir = TestDir::new("web-long-output");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "print a lot"}),
    );
    let frames = socket.until(300, turn_ended);
    let live = frames
        .iter()
        .flat_map(|frame| frame["ops"].as_array().cloned().unwrap_or_default())
        .map(|op| op["item"].clone())
        .rfind(|item| item["kind"] == "tool" && item["status"] == "ok")
        .expect("the finished card");
    assert_eq!(live["truncated"], true, "{}", live["view"]["exitCode"]);
    assert!(live["view"]["output"].as_str().unwrap().len() <= 16 * 1024);
    let history = web.call("session.history", &json!({"sessionId": session}));
    let card = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["kind"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(card, live, "history and live cut alike");
    let whole = web.call(
        "session.item",
        &json!({"sessionId": session, "itemId": card["id"]}),
    );
    assert!(whole.get("truncated").is_none(), "{}", whole["truncated"]);
    let output = whole["view"]["output"].as_str().unwrap().trim();
    assert!(
        output.len() >= 30_000 && output.chars().all(|c| c == 'x' || c == '\n'),
        "{}",
        output.len()
    );
    assert_eq!(web.host.stop(), Some(0));
}

/// The routes come from the adapters' catalogs; a session's route changes for its next turn.
#[test]
fn a_sessions_model_is_listed_and_changed_for_its_next_turn() {
    let server = FakeDeepSeek::start(vec![Reply::text("from flash"), Reply::text("from pro")]);
    let dir = TestDir::new("web-models");
    let mut web = start(&server, &dir);
    let listed = web.call("session.models", &json!({}));
    let routes: Vec<&str> = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["route"].as_str().unwrap())
        .collect();
    assert!(
        routes.contains(&"deepseek-official/deepseek-v4-flash")
            && routes.contains(&"deepseek-official/deepseek-v4-pro"),
        "{listed}"
    );
    assert_eq!(listed["current"], "deepseek-official/deepseek-v4-flash");
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "one"}),
    );
    socket.until(300, turn_ended);
    let unknown = send(
        &web.address,
        "POST",
        "/api/session.selectModel",
        &[
            ("Authorization", &web.bearer),
            ("Content-Type", "application/json"),
        ],
        &envelope(
            "session.selectModel",
            &json!({"sessionId": session, "model": "nowhere/none"}),
        ),
    );
    assert_eq!(
        unknown.json()["result"]["error"]["code"],
        "model-unavailable"
    );
    web.call(
        "session.selectModel",
        &json!({"sessionId": session, "model": "deepseek-official/deepseek-v4-pro"}),
    );
    let now = web.call("session.models", &json!({"sessionId": session}));
    assert_eq!(now["current"], "deepseek-official/deepseek-v4-pro");
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "two"}),
    );
    socket.until(300, turn_ended);
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "deepseek-v4-flash");
    assert_eq!(requests[1].body["model"], "deepseek-v4-pro");
    assert_eq!(web.host.stop(), Some(0));
}

/// The endpoint set in the settings lands in `$DSH_HOME/settings.yaml`, which the host lays
/// over the profile and reloads: the next request goes to it, no restart.
#[test]
fn an_endpoint_set_in_the_settings_takes_effect_without_a_restart() {
    let first = FakeDeepSeek::start(vec![Reply::text("from the first")]);
    let second = FakeDeepSeek::start(vec![Reply::text("from the second")]);
    let dir = TestDir::new("web-settings");
    let mut web = start(&first, &dir);
    let before = web.call("settings.describe", &json!({}));
    assert!(before.get("baseUrl").is_none(), "{before}");
    let bad = send(
        &web.address,
        "POST",
        "/api/settings.update",
        &[
            ("Authorization", &web.bearer),
            ("Content-Type", "application/json"),
        ],
        &envelope("settings.update", &json!({"baseUrl": "ftp://nowhere"})),
    );
    assert_eq!(bad.json()["result"]["error"]["code"], "settings-rejected");
    web.call("settings.update", &json!({"baseUrl": second.url()}));
    let written = std::fs::read_to_string(dir.home().join("settings.yaml")).unwrap();
    assert!(written.contains(&second.url()), "{written}");
    web.host
        .wait_stderr("config reloaded: 0 added, 0 removed, 1 changed", WAIT);
    assert_eq!(
        web.call("settings.describe", &json!({}))["baseUrl"],
        second.url()
    );
    let session = web.new_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "where to?"}),
    );
    assert_eq!(second.wait_requests(1, WAIT).len(), 1);
    assert!(first.requests().is_empty(), "the old endpoint was asked");
    assert_eq!(web.host.stop(), Some(0));
}

/// Every file named `name` under `root`.
fn files_named(root: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if entry.file_name() == name {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn the_list_orders_by_activity_not_by_opening_and_marks_a_title_cut_short() {
    let server = FakeDeepSeek::start(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    let dir = TestDir::new("web-list-activity");
    let web = start(&server, &dir);
    let mut socket = web.events();
    let cwd = dir.join("work");
    let mut converse = |text: &str| {
        let created = web.call("session.create", &json!({"cwd": cwd.to_str().unwrap()}));
        let id = created["sessionId"].as_str().unwrap().to_owned();
        web.call("session.prompt", &json!({"sessionId": id, "text": text}));
        socket.until(200, |frame| {
            frame["type"] == "host/session-status"
                && frame["sessionId"] == id
                && frame["running"] == false
        });
        id
    };
    let long =
        converse("please look at the failing integration tests in the web crate and fix them");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let short = converse("hi");
    let empty = web.call("session.create", &json!({"cwd": cwd.to_str().unwrap()}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let order = |listed: &Value| -> Vec<(String, Option<i64>, String)> {
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_owned(),
                    s["activeAt"].as_i64(),
                    s["title"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let listed = order(&web.call("session.list", &json!({})));
    let position = |id: &str| listed.iter().position(|(s, ..)| s == id).unwrap();
    assert!(position(&short) < position(&long), "{listed:?}");
    let of = |id: &str| listed[position(id)].clone();
    assert!(
        of(&short).1 >= of(&long).1 && of(&long).1.is_some(),
        "{listed:?}"
    );
    assert_eq!(
        of(&empty).1,
        None,
        "a session with no message has no activity: {listed:?}"
    );
    assert!(
        of(&long).2.ends_with('…'),
        "the cut title says so: {listed:?}"
    );
    assert_eq!(of(&short).2, "hi", "{listed:?}");
    // Opening the older conversation is no activity: the order stands.
    web.call("session.history", &json!({"sessionId": long}));
    let reopened = order(&web.call("session.list", &json!({})));
    let ids = |list: &[(String, Option<i64>, String)]| {
        list.iter().map(|(id, ..)| id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&reopened), ids(&listed));
    // The store keeps both beside each log, for a listing that reads no log.
    let deadline = std::time::Instant::now() + WAIT;
    let listings = || {
        files_named(&dir.home(), dsh_session_jsonl::LISTING_FILE)
            .iter()
            .filter_map(|path| dsh_session_jsonl::ListingFile::read(path.parent()?))
            .collect::<Vec<_>>()
    };
    while listings()
        .iter()
        .filter(|listing| listing.active_at.is_some())
        .count()
        < 2
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let listed = listings();
    let active = listed
        .iter()
        .filter(|listing| listing.active_at.is_some())
        .count();
    assert!(active >= 2, "{listed:?}");
    let titles: Vec<String> = listed
        .iter()
        .filter_map(|listing| listing.title.clone())
        .collect();
    assert!(
        titles.iter().any(|title| title.ends_with('…')),
        "{titles:?}"
    );
}
