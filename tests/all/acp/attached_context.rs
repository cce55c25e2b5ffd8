//! What an editor attaches to a prompt, in editor mode: the agent says it takes embedded
//! context, a file or selection attached as text reaches the model marked with where it came
//! from, beside what the person typed and a link; bytes attached are refused by name.

use dsh_tests::acp::editor_agent;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, WAIT};
use serde_json::json;

#[test]
fn attached_text_reaches_the_model_and_attached_bytes_are_refused() {
    let dir = TestDir::new("acp-attached-context");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let server = FakeDeepSeek::start(vec![Reply::text("It adds one.")]);
    let mut agent = editor_agent(&server, &dir, "", &[]);
    let init = agent.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true,
        "{init}"
    );
    let opened = agent.call("session/new", json!({"cwd": work, "mcpServers": []}));
    let session = opened["result"]["sessionId"].as_str().unwrap().to_owned();
    let uri = format!("file://{}/lib.rs#L1:1", work.display());
    let answer = agent.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [
            {"type": "text", "text": "What does this do?"},
            {"type": "resource", "resource": {"uri": uri, "text": "fn next(n: u32) -> u32 { n + 1 }", "mimeType": "text/x-rust"}},
            {"type": "resource_link", "name": "notes.md", "uri": "file:///notes.md"}
        ]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let said = server.requests()[0].user_texts().join("\n");
    assert!(
        said.contains(&format!(
            "What does this do?\n<attached uri=\"{uri}\">\nfn next(n: u32) -> u32 {{ n + 1 }}\n</attached>\n"
        )),
        "{said}"
    );
    assert!(said.contains("[resource_link name=\"notes.md\""), "{said}");
    let bytes = agent.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [
            {"type": "resource", "resource": {"uri": "file:///logo.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}}
        ]}),
    );
    assert_eq!(bytes["error"]["code"], -32602, "{bytes}");
    assert!(
        bytes["error"]["message"]
            .as_str()
            .unwrap()
            .contains("file:///logo.bin"),
        "{bytes}"
    );
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}
