//! What a client can get wrong, and how the connection ends. A line that is not JSON is
//! answered -32700 and the connection lives; an unknown method -32601 naming it; bad params
//! -32602 naming the member; a second prompt while one runs is refused; what the agent does
//! not take (images, MCP servers, extra directories) is refused by name; stdin closed in the
//! middle of a prompt cancels the turn, closes its log and exits 0; a signal does the same
//! before the host stops. Nothing but frames on stdout.

use std::time::Duration;

use dsh_tests::acp::{
    AcpClient, Volatile, asking_editor, editor_agent, normalize_stdout, stored_events, wait_stored,
};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

/// The message of an error answer, checked to carry `code`.
fn error_of(answer: &Value, code: i64) -> String {
    assert_eq!(answer["error"]["code"], code, "{answer}");
    answer["error"]["message"].as_str().unwrap().to_owned()
}

#[test]
fn bad_lines_and_params_are_answered_by_name_and_the_connection_lives() {
    let dir = TestDir::new("acp-bad-input");
    let work = dir.join("work");
    let server = FakeDeepSeek::start(vec![Reply::text("still here")]);
    let mut agent = editor_agent(&server, &dir, "", &[]);
    agent.send_raw("this is not json");
    let parse = agent.wait_frame("the parse error", WAIT, |frame| {
        frame["error"]["code"] == -32700
    });
    assert_eq!(parse["id"], Value::Null, "{parse}");
    let unknown = agent.call("session/teleport", json!({}));
    assert!(error_of(&unknown, -32601).contains("session/teleport"));
    assert_eq!(unknown["error"]["data"]["method"], "session/teleport");
    let (session, _) = agent.open(&work);

    let no_cwd = agent.call("session/new", json!({"mcpServers": []}));
    assert!(error_of(&no_cwd, -32602).contains("`cwd`"), "{no_cwd}");
    let relative = agent.call("session/new", json!({"cwd": "work", "mcpServers": []}));
    assert!(
        error_of(&relative, -32602).contains("absolute"),
        "{relative}"
    );
    let mcp = agent.call(
        "session/new",
        json!({"cwd": work, "mcpServers": [{"type": "sse", "name": "files", "headers": []}]}),
    );
    let message = error_of(&mcp, -32602);
    assert!(
        message.contains("mcpServers") && message.contains("files") && message.contains("`url`"),
        "{mcp}"
    );
    let extra = agent.call(
        "session/new",
        json!({"cwd": work, "mcpServers": [], "additionalDirectories": ["srv"]}),
    );
    assert!(
        error_of(&extra, -32602).contains("additionalDirectories"),
        "{extra}"
    );
    let block = agent.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "video", "url": "x"}]}),
    );
    assert!(error_of(&block, -32602).contains("prompt[0]"), "{block}");
    let image = agent.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
    );
    assert!(error_of(&image, -32602).contains("image"), "{image}");
    let stranger = agent.call(
        "session/prompt",
        json!({"sessionId": "not-a-session", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert!(error_of(&stranger, -32602).contains("unknown session: not-a-session"));
    // The notification of an unknown method is dropped, unanswered.
    agent.notify("session/wobble", json!({}));
    let answer = agent.prompt(&session, "are you there?");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
    let volatile = Volatile::of(&work, vec![session]);
    let frames = normalize_stdout(&agent.stdout(), &volatile).expect("only frames on stdout");
    assert!(frames.len() > 10);
}

/// An agent whose model holds the first request open without answering.
fn hanging(dir: &TestDir) -> (FakeDeepSeek, AcpClient, String) {
    let server = FakeDeepSeek::start(vec![
        Reply::KeepAliveOnly {
            every: Duration::from_millis(200),
        },
        Reply::text("second"),
    ]);
    let mut agent = editor_agent(&server, dir, "", &[]);
    let (session, _) = agent.open(&dir.join("work"));
    (server, agent, session)
}

fn aborted(events: &[Value]) -> bool {
    events
        .iter()
        .any(|event| event["type"] == "turn/end" && event["data"]["reason"]["kind"] == "aborted")
}

#[test]
fn a_busy_session_refuses_a_second_prompt_and_a_cancel_ends_the_first() {
    let dir = TestDir::new("acp-busy");
    let (server, mut agent, session) = hanging(&dir);
    let first = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "take your time"}]}),
    );
    server.wait_requests(1, WAIT);
    let second = agent.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "and this"}]}),
    );
    assert!(
        error_of(&second, -32602).contains("already in flight"),
        "{second}"
    );
    agent.notify("session/cancel", json!({"sessionId": session}));
    let answer = agent.response(first, WAIT);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    wait_stored(&dir.home(), &session, "the aborted turn", WAIT, aborted).unwrap();
    // The session takes a prompt again.
    let again = agent.prompt(&session, "now answer");
    assert_eq!(again["result"]["stopReason"], "end_turn", "{again}");
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn a_cancel_withdraws_the_question_the_client_left_unanswered() {
    let dir = TestDir::new("acp-cancel-question");
    let server = FakeDeepSeek::start(vec![Reply::tool_call(
        "call_q",
        "bash",
        json!({"command": "echo never", "description": "Ask first"}),
    )]);
    let mut agent = asking_editor(&server, &dir, "ignore");
    let (session, _) = agent.open(&dir.join("work"));
    let prompt = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}),
    );
    agent.wait_frame("the question", WAIT, |frame| {
        frame["method"] == "session/request_permission"
    });
    agent.notify("session/cancel", json!({"sessionId": session}));
    let answer = agent.response(prompt, WAIT);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    wait_stored(&dir.home(), &session, "the aborted turn", WAIT, aborted).unwrap();
    let events = stored_events(&dir.home(), &session);
    let decided: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "approval/decided")
        .collect();
    assert_eq!(decided.len(), 1, "{events:#?}");
    assert_eq!(decided[0]["data"]["outcome"], "cancelled");
    assert_eq!(
        server.requests().len(),
        1,
        "the call never ran, so no second request"
    );
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn stdin_closed_mid_prompt_cancels_the_turn_closes_its_log_and_exits_0() {
    let dir = TestDir::new("acp-eof");
    let (server, mut agent, session) = hanging(&dir);
    let prompt = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "take your time"}]}),
    );
    server.wait_requests(1, WAIT);
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0), "{:?}", agent.stderr());
    let answer = agent.response(prompt, Duration::from_secs(1));
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    let events = stored_events(&dir.home(), &session);
    assert!(aborted(&events), "{events:#?}");
    let user = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .map(|event| event["data"]["reason"]["reason"]["kind"].clone());
    assert_eq!(user, Some(json!("user")));
}

#[test]
fn a_signal_cancels_the_turn_before_the_host_stops() {
    let dir = TestDir::new("acp-signal");
    let (server, mut agent, session) = hanging(&dir);
    agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "take your time"}]}),
    );
    server.wait_requests(1, WAIT);
    // SAFETY: a signal to the child this test started.
    #[allow(unsafe_code, reason = "libc::kill on our own child")]
    let sent = unsafe { libc::kill(agent.pid(), libc::SIGTERM) };
    assert_eq!(sent, 0);
    let code = agent.wait_exit(WAIT);
    assert_eq!(code, Some(0), "{:?}", agent.stderr());
    assert!(aborted(&stored_events(&dir.home(), &session)));
}

#[test]
fn the_command_line_is_checked() {
    let dir = TestDir::new("acp-args");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut help = AcpClient::start(
        &dir.home(),
        &work,
        &["--profile", "acp", "--", "--help"],
        &[],
    );
    assert_eq!(help.wait_exit(WAIT), Some(0));
    assert!(help.stdout().join("\n").contains("--replay FILE"));
    let mut wrong = AcpClient::start(
        &dir.home(),
        &work,
        &["--profile", "acp", "--", "--bogus"],
        &[],
    );
    assert_eq!(wrong.wait_exit(WAIT), Some(2));
    assert!(
        wrong.stderr().join("\n").contains("--bogus"),
        "{:?}",
        wrong.stderr()
    );
    assert!(wrong.stdout().is_empty());
}
