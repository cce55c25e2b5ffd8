//! The client against a scripted peer over a socket pair: answers routed to their requests,
//! notifications in order, unreadable lines kept apart, a run followed to its idle.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use serde_json::json;

use super::*;

const WAIT: Duration = Duration::from_secs(5);

/// A client whose peer answers each request with `answer(request)`: the lines it writes.
fn scripted(answer: impl Fn(&Value) -> Vec<String> + Send + 'static) -> Client {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let reader = ours.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut writer = theirs.try_clone().unwrap();
        for line in BufReader::new(theirs).lines() {
            let Ok(line) = line else { break };
            let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            for out in answer(&request) {
                writer.write_all(format!("{out}\n").as_bytes()).unwrap();
            }
        }
    });
    Client::connect(reader, Box::new(ours))
}

#[test]
fn answers_reach_their_requests_and_notifications_keep_their_order() {
    let client = scripted(|request| {
        let id = &request["id"];
        vec![
            json!({"jsonrpc": "2.0", "method": "n", "params": {"i": 1}}).to_string(),
            "not json".to_owned(),
            json!({"jsonrpc": "2.0", "method": "n", "params": {"i": 2}}).to_string(),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "p"}})
                .to_string(),
            match request["method"].as_str() {
                Some("fail") => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "no", "data": {"method": "fail"}}}),
                _ => json!({"jsonrpc": "2.0", "id": id, "result": {"echo": request["params"]}}),
            }
            .to_string(),
        ]
    });
    let result = client.request("m", json!({"x": 1}), WAIT).unwrap();
    assert_eq!(result, json!({"echo": {"x": 1}}));
    let error = client.request("fail", json!({}), WAIT).unwrap_err();
    let ClientError::Rpc(error) = error else {
        panic!("{error}")
    };
    assert_eq!(
        (error.code, error.data),
        (-32601, Some(json!({"method": "fail"})))
    );
    let order: Vec<Value> = (0..4)
        .map(|_| client.next_notification(WAIT).unwrap().params["i"].clone())
        .collect();
    assert_eq!(order, vec![json!(1), json!(2), json!(1), json!(2)]);
    assert_eq!(
        client.next_unmatched(WAIT).unwrap()["error"]["code"],
        -32700
    );
    assert_eq!(client.stray_lines(), vec!["not json", "not json"]);
    assert!(matches!(
        client.next_notification(Duration::from_millis(50)),
        Err(ClientError::Timeout { .. })
    ));
}

#[test]
fn a_run_follows_the_tree_from_the_receipt_to_idle() {
    let client = scripted(|request| {
        let event = |session: &str, event: Value| {
            json!({"jsonrpc": "2.0", "method": "session.event",
                "params": {"sessionId": session, "event": event}})
            .to_string()
        };
        let status = |session: &str, status: &str| {
            json!({"jsonrpc": "2.0", "method": "session.status",
                "params": {"sessionId": session, "status": status}})
            .to_string()
        };
        vec![
            // Before the receipt, and another session's: not the run's.
            status("s", "idle"),
            event(
                "s",
                json!({"type": "agent/inbox/spliced", "data": {"inserted": [{"id": "m-1"}]}}),
            ),
            json!({"jsonrpc": "2.0", "id": request["id"], "result": {"messageId": "m-1"}})
                .to_string(),
            status("other", "running"),
            json!({"jsonrpc": "2.0", "method": "subagent.started",
                "params": {"parentSessionId": "s", "childSessionId": "c"}})
            .to_string(),
            event(
                "c",
                json!({"type": "assistant/message",
                "data": {"message": {"content": [{"type": "text", "text": "child"}]}}}),
            ),
            event(
                "s",
                json!({"type": "assistant/message", "data": {"message": {"content": [
                {"type": "reasoning", "text": "hm"},
                {"type": "text", "text": "an"}, {"type": "text", "text": "swer"}]}}}),
            ),
            status("s", "idle"),
        ]
    });
    let run = client.run("s", "go", WAIT).unwrap();
    assert_eq!(run.final_response, "answer");
    let methods: Vec<&str> = run
        .notifications
        .iter()
        .map(|n| n.method.as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "session.event",
            "subagent.started",
            "session.event",
            "session.event",
            "session.status"
        ]
    );
    assert_eq!(run.events.len(), 2);
}

#[test]
fn a_closed_peer_fails_what_waits() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(theirs);
    let client = Client::connect(ours.try_clone().unwrap(), Box::new(ours));
    assert!(matches!(
        client.request("m", Value::Null, WAIT),
        Err(ClientError::Closed | ClientError::Io(_))
    ));
    assert!(matches!(
        client.next_notification(WAIT),
        Err(ClientError::Closed)
    ));
}
