//! One-shot escalation through the web profile: a `bash` call that asks for
//! `danger-full-access` with a justification is put to the page first; allowed once, that one
//! command runs outside the sandbox, rejected it does not run; asking for the mode the session
//! already has runs at once, with no approval and no error.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::web::{start_in_workspace, turn_ended, undecided_card};
use serde_json::{Value, json};

fn escalated(command: &str, mode: &str) -> String {
    json!({
        "command": command,
        "description": "write outside",
        "sandbox_permissions": mode,
        "justification": "the test needs a file beside the workspace",
    })
    .to_string()
}

#[test]
fn an_escalation_runs_once_when_allowed_and_not_at_all_when_rejected() {
    for (answer, runs) in [("allowed-once", true), ("rejected", false)] {
        let dir = TestDir::new(&format!("escalation-{answer}"));
        let target = dir.join("outside.txt");
        let command = format!("echo escaped > {}", target.display());
        let server = FakeDeepSeek::start(vec![
            Reply::tool_calls(&[("call_1", "bash", &escalated(&command, "danger-full-access"))]),
            Reply::text("done"),
        ]);
        let mut web = start_in_workspace(&server, &dir);
        let (session, mut socket) = web.followed_session();
        web.call(
            "session.prompt",
            &json!({"sessionId": session, "text": "write it"}),
        );
        let frames = socket.until(300, |frame| {
            undecided_card(std::slice::from_ref(frame), "approval").is_some()
        });
        let ask = undecided_card(&frames, "approval").unwrap();
        let reason = ask["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("danger-full-access instead of workspace-write")
                && reason.contains("the test needs a file beside the workspace"),
            "{ask}"
        );
        web.call(
            "approval.respond",
            &json!({"approvalId": ask["id"], "outcome": answer}),
        );
        socket.until(300, turn_ended);
        assert_eq!(
            target.exists(),
            runs,
            "{answer}: {:?}",
            server.last_tool_texts()
        );
        if !runs {
            let texts = server.last_tool_texts();
            assert!(
                texts[0].contains(
                    "the user rejected escalating this command to \"danger-full-access\""
                ),
                "{texts:?}"
            );
        }
        assert_eq!(web.host.stop(), Some(0));
    }
}

#[test]
fn asking_for_the_sessions_own_mode_needs_no_approval() {
    dsh_tests::needs_bubblewrap!("escalation to the same mode (protected paths need bubblewrap)");
    let dir = TestDir::new("escalation-same-mode");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[(
            "call_1",
            "bash",
            &escalated("echo inside > in.txt", "workspace-write"),
        )]),
        Reply::tool_calls(&[(
            "call_2",
            "bash",
            &escalated(
                &format!("echo x > {}", dir.join("outside.txt").display()),
                "workspace-write",
            ),
        )]),
        Reply::text("done"),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "write it"}),
    );
    let frames: Vec<Value> = socket.until(400, turn_ended);
    assert!(
        undecided_card(&frames, "approval").is_none(),
        "an approval was asked: {frames:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("work/in.txt")).unwrap(),
        "inside\n"
    );
    // The same mode does not widen anything: outside stays refused, and the result says how
    // to ask for more.
    assert!(!dir.join("outside.txt").exists());
    let texts = server.last_tool_texts();
    assert!(
        texts[1].contains("[sandbox: file access denied under workspace-write mode]")
            && texts[1].contains("escalation available"),
        "{texts:?}"
    );
    assert_eq!(web.host.stop(), Some(0));
}

/// A preset chosen for a session (`session.setPermission`, the page's selector) is logged and
/// governs its next calls: read-only refuses a write a workspace preset lets through.
#[test]
fn a_sessions_preset_governs_its_next_calls() {
    dsh_tests::needs_bubblewrap!("a session preset (protected paths need bubblewrap)");
    let dir = TestDir::new("permission-preset");
    let write =
        json!({"command": "echo made > made.txt", "description": "make a file"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &write)]),
        Reply::text("could not"),
        Reply::tool_calls(&[("call_2", "bash", &write)]),
        Reply::text("made"),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.setPermission",
        &json!({"sessionId": session, "preset": "read-only"}),
    );
    let history = web.call("session.history", &json!({"sessionId": session}));
    assert_eq!(history["preset"], "read-only", "{history}");
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "make it"}),
    );
    socket.until(300, turn_ended);
    assert!(!dir.join("work/made.txt").exists());
    let texts = server.last_tool_texts();
    assert!(
        texts[0].contains("Read-only file system") && texts[0].contains("read-only mode"),
        "{texts:?}"
    );
    let first = server.requests()[0].body.to_string();
    assert!(
        first.contains("Sandbox: read-only"),
        "the model was not told: {first}"
    );
    web.call(
        "session.setPermission",
        &json!({"sessionId": session, "preset": "workspace-write"}),
    );
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "again"}),
    );
    socket.until(300, turn_ended);
    assert_eq!(
        std::fs::read_to_string(dir.join("work/made.txt"))
            .ok()
            .as_deref(),
        Some("made\n"),
        "{:?}",
        server.last_tool_texts()
    );
    assert_eq!(web.host.stop(), Some(0));
}

/// The reach of an allowing answer, under rules that ask for every call no rule allows:
/// `session` allows the same call again without asking; `always` writes an allow rule to the
/// user's settings.yaml, which a new session then runs under without being asked.
#[test]
fn an_answer_reaches_the_session_or_writes_an_allow_rule() {
    let dir = TestDir::new("approval-scopes");
    std::fs::create_dir_all(dir.home()).unwrap();
    std::fs::write(
        dir.home().join("settings.yaml"),
        "permissions:\n  default: ask\n",
    )
    .unwrap();
    let one = json!({"command": "echo one", "description": "one"}).to_string();
    let two = json!({"command": "echo two", "description": "two"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("c1", "bash", &one)]),
        Reply::tool_calls(&[("c2", "bash", &one)]),
        Reply::tool_calls(&[("c3", "bash", &two)]),
        Reply::text("first session done"),
        Reply::tool_calls(&[("c4", "bash", &two)]),
        Reply::text("second session done"),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "go"}),
    );
    // c1 is put to the page; c2, the same call, is allowed by c1's answer; c3 is put to it.
    for (call, scope) in [("c1", "session"), ("c3", "always")] {
        let frames = socket.until(300, |frame| {
            undecided_card(std::slice::from_ref(frame), "approval")
                .is_some_and(|ask| ask["callId"] == call)
        });
        let ask = undecided_card(&frames[frames.len() - 1..], "approval").unwrap();
        let receipt = web.call(
            "approval.respond",
            &json!({"approvalId": ask["id"], "outcome": "allowed-once", "scope": scope}),
        );
        assert_eq!(receipt["accepted"], true, "{call}: {receipt}");
        if scope == "always" {
            assert_eq!(receipt["rule"], "bash(echo two)", "{receipt}");
        }
    }
    socket.until(300, turn_ended);
    let texts = server.last_tool_texts();
    assert!(
        texts[0].contains("one") && texts[1].contains("one") && texts[2].contains("two"),
        "{texts:?}"
    );
    let history = web.call("session.history", &json!({"sessionId": session}));
    let scopes: Vec<Value> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["kind"] == "approval")
        .map(|item| item["scope"].clone())
        .collect();
    // Two asks put to the page, one allowed by the session's answer without asking.
    assert_eq!(
        scopes,
        [json!("session"), json!("session"), json!("always")],
        "{history}"
    );
    let settings = std::fs::read_to_string(dir.home().join("settings.yaml")).unwrap();
    assert!(
        settings.contains("bash(echo two)") && settings.contains("default: ask"),
        "{settings}"
    );
    web.host.wait_stderr(
        "config reloaded: 0 added, 0 removed, 1 changed",
        dsh_tests::WAIT,
    );
    let (second, mut followed) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": second, "text": "again"}),
    );
    let frames = followed.until(300, turn_ended);
    assert!(
        undecided_card(&frames, "approval").is_none(),
        "the written rule did not allow it: {frames:?}"
    );
    assert!(server.last_tool_texts().last().unwrap().contains("two"));
    assert_eq!(web.host.stop(), Some(0));
}

/// A `write` of a protected path (the project's `.mcp.json`, which decides which servers run)
/// is put to the person without the model asking, naming the file; allowed once it is written,
/// rejected it is not.
#[test]
fn a_write_of_a_protected_file_is_asked_naming_it() {
    for (answer, written) in [("allowed-once", true), ("rejected", false)] {
        let dir = TestDir::new(&format!("escalation-protected-{answer}"));
        let write =
            json!({"file_path": ".mcp.json", "content": "{\"mcpServers\": {}}"}).to_string();
        let server = FakeDeepSeek::start(vec![
            Reply::tool_calls(&[("call_1", "write", &write)]),
            Reply::text("done"),
        ]);
        let mut web = start_in_workspace(&server, &dir);
        let (session, mut socket) = web.followed_session();
        web.call(
            "session.prompt",
            &json!({"sessionId": session, "text": "configure a server"}),
        );
        let frames = socket.until(300, |frame| {
            undecided_card(std::slice::from_ref(frame), "approval").is_some()
        });
        let ask = undecided_card(&frames, "approval").unwrap();
        let reason = ask["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("write asks to change") && reason.contains("work/.mcp.json"),
            "{ask}"
        );
        web.call(
            "approval.respond",
            &json!({"approvalId": ask["id"], "outcome": answer}),
        );
        socket.until(300, turn_ended);
        let file = dir.join("work/.mcp.json");
        assert_eq!(
            file.exists(),
            written,
            "{answer}: {:?}",
            server.last_tool_texts()
        );
        if !written {
            let texts = server.last_tool_texts();
            assert!(texts[0].contains("is protected"), "{texts:?}");
        }
        assert_eq!(web.host.stop(), Some(0));
    }
}
