//! What a client may ask of a new session besides its directory and model, through the web
//! profile's client protocol (`session.create`): MCP servers of its own, whose tools are
//! offered to it and to no other session (one that does not start is named in the answer's
//! notes and the session works without it), and directories its calls may also write, which
//! must be absolute. The server is `tests/fixtures/mcp/revision-server` (Python, one `add`
//! tool); the model is the fake DeepSeek server.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::web::start;
use dsh_tests::{TestDir, workspace_root};
use serde_json::json;

#[test]
fn a_session_is_created_with_mcp_servers_of_its_own() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        dsh_tests::skip(
            "session_extras::a_session_is_created_with_mcp_servers_of_its_own",
            "no `python3` to run tests/fixtures/mcp/revision-server with",
        );
        return;
    }
    let dir = TestDir::new("session-extras");
    let server = FakeDeepSeek::start(vec![Reply::text("with it"), Reply::text("without it")]);
    let web = start(&server, &dir);
    let work = dir.join("work");
    let script = workspace_root().join("tests/fixtures/mcp/revision-server");
    let missing = dir.join("no-such-server");
    let created = web.call(
        "session.create",
        &json!({"cwd": work, "mcpServers": [
            {"type": "stdio", "name": "calc", "command": script, "args": ["2025-06-18"]},
            {"type": "stdio", "name": "broken", "command": missing},
        ]}),
    );
    let notes = created["notes"].to_string();
    assert!(
        notes.contains("MCP server `broken` did not start") && !notes.contains("`calc`"),
        "{created}"
    );
    let with = created["sessionId"].as_str().unwrap().to_owned();
    let plain = web.call("session.create", &json!({"cwd": work}));
    let plain = plain["sessionId"].as_str().unwrap().to_owned();
    web.prompt(&with, "Add with the calculator");
    let offered = server.tools_offered_with("Add with the calculator");
    assert!(
        offered.iter().any(|tool| tool == "mcp__calc__add"),
        "{offered:?}"
    );
    web.prompt(&plain, "Add without one");
    let elsewhere = server.tools_offered_with("Add without one");
    assert!(
        !elsewhere.iter().any(|tool| tool.starts_with("mcp__calc")),
        "another session is not offered the server: {elsewhere:?}"
    );

    let relative = web.try_call(
        "session.create",
        &json!({"cwd": work, "additionalDirectories": ["not/absolute"]}),
    );
    assert_eq!(relative["error"]["code"], "bad-request", "{relative}");
    assert!(
        relative["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("additionalDirectories"),
        "{relative}"
    );
    let unnamed = web.try_call(
        "session.create",
        &json!({"cwd": work, "mcpServers": [{"type": "http", "name": " ", "url": "http://127.0.0.1:9/mcp"}]}),
    );
    assert_eq!(unnamed["error"]["code"], "bad-request", "{unnamed}");
}
