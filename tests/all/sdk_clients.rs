//! The client protocol on the SDK runtime's stdio, through the real binary: beside the
//! reference's three methods, a client shakes hands (`initialize` with a `protocolVersion`),
//! creates and follows a session whose turn arrives as `frame` notifications, and meets the
//! same named errors as on the socket; a second process attaches to the same host through its
//! client socket and sees that session.

use std::time::Instant;

use dsh_client::{Client, ClientError};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::{LineClient, client_socket};
use dsh_tests::sdk::start;
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

/// Frames until one satisfies `done`.
fn frames_until(client: &Client, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    let mut frames = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let notification = client
            .next_notification(left)
            .unwrap_or_else(|error| panic!("waiting for a frame: {error}; saw {frames:?}"));
        if notification.method != "frame" {
            continue;
        }
        let finished = done(&notification.params);
        frames.push(notification.params);
        if finished {
            return frames;
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
fn the_client_protocol_runs_on_stdio_beside_the_reference_methods() {
    let server = FakeDeepSeek::start(vec![Reply::text("hello from the model")]);
    let dir = TestDir::new("sdk-clients");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    let client = start(&dir, &[], &[("DEEPSEEK_API_KEY", "sk-test")]);
    let hello = client
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientInfo": {"name": "test"}, "features": ["approvals", "queue"]}),
            WAIT,
        )
        .unwrap();
    assert_eq!(hello["protocolVersion"], 1, "{hello}");
    assert_eq!(hello["host"]["profile"], "sdk", "{hello}");
    assert_eq!(hello["features"], json!(["approvals", "queue"]), "{hello}");
    let work = dir.join("work");
    let created = client
        .request(
            "session.create",
            json!({"cwd": work, "model": "deepseek-official/deepseek-v4-flash"}),
            WAIT,
        )
        .unwrap();
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client
        .request("session.subscribe", json!({"sessionId": session}), WAIT)
        .unwrap();
    frames_until(&client, |frame| frame["type"] == "session/subscribed");
    client
        .request(
            "session.prompt",
            json!({"sessionId": session, "text": "say hello"}),
            WAIT,
        )
        .unwrap();
    let frames = frames_until(&client, turn_ended);
    let answered = frames.iter().any(|frame| {
        frame["ops"].as_array().into_iter().flatten().any(|op| {
            op["item"]["kind"] == "assistant"
                && op["item"]["text"]
                    .as_str()
                    .is_some_and(|text| text.contains("hello from the model"))
        })
    });
    assert!(answered, "{frames:?}");
    // The same named errors as on the socket.
    match client.request("session.explode", json!({}), WAIT) {
        Err(ClientError::Rpc(error)) => {
            assert_eq!(error.code, -32601, "{error}");
            assert!(error.message.contains("session.explode"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    match client.request(
        "session.rename",
        json!({"sessionId": session, "title": 3}),
        WAIT,
    ) {
        Err(ClientError::Rpc(error)) => assert_eq!(error.code, -32602, "{error}"),
        other => panic!("{other:?}"),
    }
    // A second process attaches to this host through its socket and finds the session.
    let pid = client.pid().unwrap() as i32;
    let mut attached = LineClient::connect(&client_socket(&dir.home(), pid));
    let list = attached.call("session.list", json!({}));
    let listed = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|row| row["id"] == session);
    assert!(listed, "{list}");
    drop(attached);
    client.shutdown(WAIT).unwrap();
    assert!(
        client.stray_lines().is_empty(),
        "{:?}",
        client.stray_lines()
    );
}

#[test]
fn the_client_protocol_answers_while_an_mcp_server_is_still_starting() {
    // A server that never answers its handshake: the `mcp` row waits up to its start bound
    // (30 s and more) for it, so the tree does not settle meanwhile.
    let dir = TestDir::new("sdk-clients-mcp");
    dir.write(
        "home/mcp.json",
        r#"{"mcpServers": {"mute": {"command": "sleep", "args": ["60"], "sandbox": "danger-full-access"}}}"#,
    );
    let started = Instant::now();
    let client = start(&dir, &[], &[]);
    let hello = client
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientInfo": {"name": "test"}, "features": []}),
            WAIT,
        )
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(hello["protocolVersion"], 1, "{hello}");
    // The SDK runtime gives a tree up to 5 s to start; the handshake must not wait for it.
    assert!(
        waited < std::time::Duration::from_secs(4),
        "the handshake waited {waited:?} for the MCP server's start"
    );
    let listed = client.request("session.list", json!({}), WAIT).unwrap();
    assert!(listed["sessions"].is_array(), "{listed}");
}
