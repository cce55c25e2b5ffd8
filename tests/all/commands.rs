//! Human commands through the web profile: a prompt that is a command line runs the command
//! instead of reaching the model; `command/run` and `command/done` are logged and never sent
//! to it; `/help` lists every command the running plugins declare, `/permission` switches the
//! session's preset, `/model` its route, and `/compact` summarizes an idle session below the
//! compaction threshold; `commands.run` runs a line only as a command.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::web::{start_in_workspace, turn_ended};
use serde_json::{Value, json};

#[test]
fn commands_run_instead_of_reaching_the_model() {
    let dir = TestDir::new("commands");
    let server = FakeDeepSeek::start(vec![
        Reply::text("The codeword is PELICAN."),
        Reply::text("Summary: the user shared the codeword PELICAN."),
        Reply::text("Still PELICAN."),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    let help = web.prompt(&session, "/help");
    assert_eq!(help["command"]["kind"], "success", "{help}");
    let text = help["command"]["text"].as_str().unwrap();
    for name in ["/compact", "/help", "/model", "/permission"] {
        assert!(text.contains(name), "{text}");
    }
    let listed = web.call("commands.list", &json!({}));
    assert!(
        listed["commands"].as_array().unwrap().len() >= 4,
        "{listed}"
    );
    let unknown = web.prompt(&session, "/frobnicate");
    assert_eq!(unknown["command"]["kind"], "error");
    assert!(
        unknown["command"]["text"]
            .as_str()
            .unwrap()
            .contains("unknown command")
    );
    let preset = web.prompt(&session, "/permission read-only");
    assert_eq!(preset["command"]["kind"], "success", "{preset}");
    let history = web.call("session.history", &json!({"sessionId": session}));
    assert_eq!(history["preset"], "read-only", "{history}");
    let bad_model = web.prompt(&session, "/model nowhere/no-such-model");
    assert_eq!(bad_model["command"]["kind"], "error", "{bad_model}");
    // `commands.run` runs a line as a command and nothing else: a line that is not one is
    // refused rather than sent to the model.
    let ran = web.call(
        "commands.run",
        &json!({"sessionId": session, "line": "/permission workspace-write"}),
    );
    assert_eq!(ran["kind"], "success", "{ran}");
    let history = web.call("session.history", &json!({"sessionId": session}));
    assert_eq!(history["preset"], "workspace-write", "{history}");
    let not_a_command = web.try_call(
        "commands.run",
        &json!({"sessionId": session, "line": "hello there"}),
    );
    assert_eq!(
        not_a_command["error"]["code"], "bad-request",
        "{not_a_command}"
    );
    assert!(
        not_a_command["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not a command line"),
        "{not_a_command}"
    );
    // Nothing so far reached the model.
    assert!(server.requests().is_empty());
    web.prompt(&session, "Remember the codeword PELICAN.");
    socket.until(300, turn_ended);
    // The page is sent the meter as it moves: the provider's count of the answered request
    // plus an estimate of what came since, against the model's window.
    let is_meter =
        |frame: &Value| frame["type"] == "session/projection" && frame["key"] == "context";
    let pushed = socket
        .until(300, is_meter)
        .pop()
        .filter(is_meter)
        .expect("a meter frame");
    let meter = web.call("session.context", &json!({"sessionId": session}));
    assert_eq!(meter, pushed["value"], "{pushed}");
    assert_eq!(meter["window"], 1_000_000, "{meter}");
    let measured = meter["measured"].as_u64().expect("the provider's count");
    assert!(measured > 0, "{meter}");
    assert_eq!(
        meter["tokens"].as_u64(),
        Some(measured + meter["estimatedSince"].as_u64().unwrap()),
        "{meter}"
    );
    // The agent is idle once its driver says so, just after the turn's end.
    socket.until(300, |frame| {
        frame["type"] == "host/session-status" && frame["running"] == false
    });
    let compacted = web.prompt(&session, "/compact the codeword");
    assert_eq!(compacted["command"]["kind"], "success", "{compacted}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let ask = requests[1].body["messages"].to_string();
    assert!(ask.contains("Above all, keep: the codeword."), "{ask}");
    web.prompt(&session, "What was it?");
    socket.until(300, turn_ended);
    let last = server.requests()[2].body["messages"].to_string();
    assert!(
        last.contains("compacted-summary") && last.contains("shared the codeword PELICAN"),
        "{last}"
    );
    assert!(
        !last.contains("/help") && !last.contains("/permission") && !last.contains("command/"),
        "a command reached the model: {last}"
    );
    // The page's history shows each command and its answer.
    let history = web.call("session.history", &json!({"sessionId": session}));
    let notices: Vec<String> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["kind"] == "notice")
        .map(|item| item["text"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(
        notices.iter().any(|text| text == "/compact the codeword"),
        "{notices:?}"
    );
    assert!(
        notices.iter().any(|text| text.starts_with("Compacted")),
        "{notices:?}"
    );
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}
