//! A session's own MCP servers (issue 22 part 5): an editor's `mcpServers` in `session/new`
//! run for that session alone, through the real host and the `mcp` row. The server is
//! `tests/fixtures/mcp/revision-server` (Python, one `add` tool), so no npm install is needed;
//! the model is the fake DeepSeek server.

use dsh_tests::acp::editor_agent;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, WAIT, workspace_root};
use serde_json::{Value, json};

/// Whether python3 runs here (the server is a Python script).
fn python() -> Result<(), String> {
    let ran = std::process::Command::new("python3")
        .arg("--version")
        .output();
    match ran {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err("no `python3` to run tests/fixtures/mcp/revision-server with".to_owned()),
    }
}

/// The stdio entry of ACP's `McpServer` for a revision-server named `name`.
fn calc(name: &str) -> Value {
    let script = workspace_root().join("tests/fixtures/mcp/revision-server");
    json!({
        "name": name,
        "command": script,
        "args": ["2025-06-18"],
        "env": [{"name": "CALC_MARK", "value": "1"}],
    })
}

/// A client's stdio server is offered to its session and called there; another session of the
/// same connection and directory is not offered it; one that does not start is reported to
/// the client and the session still works; the servers stop with the session's agent.
#[test]
fn a_clients_mcp_server_serves_its_session_only() {
    if let Err(reason) = python() {
        dsh_tests::skip("a_clients_mcp_server_serves_its_session_only", &reason);
        return;
    }
    let dir = TestDir::new("acp-mcp-session");
    let work = dir.join("work");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("c1", "mcp__calc__add", r#"{"a": 2, "b": 3}"#)]),
        Reply::text("It is five."),
        Reply::text("No calculator here."),
    ]);
    let mut agent = editor_agent(
        &server,
        &dir,
        "",
        // Info lines say when a set of servers stops.
        &[
            ("DSH_PERMISSION_MODE", "danger-full-access"),
            ("DSH_LOG", "info"),
        ],
    );
    let init = agent.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(
        init["result"]["agentCapabilities"]["mcpCapabilities"]["http"], true,
        "{init}"
    );
    assert_eq!(
        init["result"]["agentCapabilities"]["mcpCapabilities"]["sse"], true,
        "{init}"
    );
    let missing = dir.join("no-such-server").display().to_string();
    let opened = agent.call(
        "session/new",
        json!({"cwd": work, "mcpServers": [
            calc("calc"),
            {"name": "broken", "command": missing, "args": [], "env": []},
            // A legacy HTTP+SSE server nobody listens for (the discard port of loopback).
            {"type": "sse", "name": "legacy", "url": "http://127.0.0.1:9/sse", "headers": []},
        ]}),
    );
    let with = opened["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("session/new failed: {opened}"))
        .to_owned();
    // The server that did not start is named to the person, after the answer.
    let told = agent.wait_frame("the note about `broken`", WAIT, |frame| {
        frame["params"]["sessionId"] == with.as_str()
            && frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    let note = told["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        note.contains("MCP server `broken` did not start") && !note.contains("`calc`"),
        "{note}"
    );
    assert!(
        note.contains("MCP server `legacy` did not start")
            && note.contains("GET http://127.0.0.1:9/sse"),
        "{note}"
    );
    let other = agent.call("session/new", json!({"cwd": work, "mcpServers": []}));
    let without = other["result"]["sessionId"].as_str().unwrap().to_owned();

    let answer = agent.prompt(&with, "Add two and three");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(server.last_tool_texts(), ["sum 5"]);
    let updates = agent.updates(&with);
    let done = updates
        .iter()
        .any(|update| update["toolCallId"] == "c1" && update["status"] == "completed");
    assert!(done, "{updates:?}");
    let answer = agent.prompt(&without, "Add again");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    let offered = server.tools_offered_with("Add two and three");
    assert!(
        offered.iter().any(|tool| tool == "mcp__calc__add"),
        "{offered:?}"
    );
    assert!(!offered.iter().any(|tool| tool.starts_with("mcp__broken__")));
    let elsewhere = server.tools_offered_with("Add again");
    assert!(
        !elsewhere.iter().any(|tool| tool.starts_with("mcp__")),
        "{elsewhere:?}"
    );
    assert!(
        offered.len() > elsewhere.len(),
        "{offered:?} / {elsewhere:?}"
    );

    // Stdin closed: the agents are disposed, and with them the session's servers.
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
    let stopped = agent.stderr().iter().any(|line| {
        line.contains(&format!("agent {with} was disposed: stopped the servers `"))
            && line.contains("calc")
    });
    assert!(stopped, "{:#?}", agent.stderr());
    server.assert_no_violations();
}

/// A server the agent cannot run is refused with -32602 naming it, before any session exists.
#[test]
fn an_mcp_server_that_cannot_be_run_is_refused_by_name() {
    let dir = TestDir::new("acp-mcp-refused");
    let work = dir.join("work");
    let server = FakeDeepSeek::start(Vec::new());
    let mut agent = editor_agent(&server, &dir, "", &[]);
    agent.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    for (entry, says) in [
        (
            json!({"type": "sse", "name": "old", "headers": []}),
            "mcpServers[0] (`old`): an sse server needs a `url`",
        ),
        (
            json!({"type": "websocket", "name": "odd", "url": "ws://127.0.0.1:9/", "headers": []}),
            "mcpServers[0] (`odd`): unknown type `websocket`",
        ),
        (
            json!({"name": "bare", "args": [], "env": []}),
            "mcpServers[0] (`bare`): a stdio server needs a `command`",
        ),
        (
            json!({"type": "http", "name": "nowhere", "headers": []}),
            "mcpServers[0] (`nowhere`): an http server needs a `url`",
        ),
    ] {
        let answer = agent.call("session/new", json!({"cwd": work, "mcpServers": [entry]}));
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].to_string() + &answer["error"]["data"].to_string();
        assert!(message.contains(says), "{answer}");
    }
    let listed = agent.call("session/list", json!({}));
    assert_eq!(listed["result"]["sessions"], json!([]), "{listed}");
}

/// `additionalDirectories` (issue 22 part 5): under workspace-write a session may write its
/// extra directories besides its working directory, and nowhere else (/tmp is kept out of the
/// writable roots here, since the test's directories are under it).
#[test]
fn additional_directories_are_writable_roots_of_their_session() {
    let dir = TestDir::new("acp-extra-roots");
    let work = dir.join("work");
    let extra = dir.join("extra");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let inside = extra.join("in.txt").display().to_string();
    let outside = elsewhere.join("out.txt").display().to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[(
            "w1",
            "bash",
            &json!({"command": format!("echo one > {inside} && echo wrote-in"), "description": "in"}).to_string(),
        )]),
        Reply::tool_calls(&[(
            "w2",
            "bash",
            &json!({"command": format!("echo two > {outside}; echo tried-out"), "description": "out"}).to_string(),
        )]),
        Reply::text("done"),
    ]);
    let rows = "- id: sandbox\n  config:\n    writableRoots: []\n    tempWritable: false\n";
    let mut agent = editor_agent(
        &server,
        &dir,
        rows,
        &[("DSH_PERMISSION_MODE", "workspace-write")],
    );
    agent.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let relative = agent.call(
        "session/new",
        json!({"cwd": work, "mcpServers": [], "additionalDirectories": ["extra"]}),
    );
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    let opened = agent.call(
        "session/new",
        json!({"cwd": work, "mcpServers": [], "additionalDirectories": [extra]}),
    );
    let session = opened["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("session/new failed: {opened}"))
        .to_owned();
    let answer = agent.prompt(&session, "Write both");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let first = server.requests()[0].body.to_string();
    if first.contains("No sandbox backend works") {
        dsh_tests::skip(
            "additional_directories_are_writable_roots_of_their_session",
            "no sandbox backend works here",
        );
        return;
    }
    let answered = server.last_tool_messages();
    assert!(answered[0].1.contains("wrote-in"), "{answered:?}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "one\n");
    assert!(answered[1].1.contains("tried-out"), "{answered:?}");
    assert!(!elsewhere.join("out.txt").exists(), "{answered:?}");
}
