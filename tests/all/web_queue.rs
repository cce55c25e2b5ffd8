//! The queue of a session through the web API: a prompt sent while a turn runs waits and
//! followers see it; a waiting prompt is edited in place, removed, or moved into the running
//! turn (`session.updateQueue`), and the model receives exactly what the queue said.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use dsh_tests::http::{envelope, send};
use dsh_tests::web::{Web, start, turn_ended};
use serde_json::{Value, json};

fn is_queue_frame(frame: &Value) -> bool {
    frame["type"] == "session/queue"
}

fn texts(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|message| {
            message["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// The error code a call answers (it must fail).
fn refused(web: &Web, method: &str, payload: &Value) -> String {
    let response = send(
        &web.address,
        "POST",
        &format!("/api/{method}"),
        &[
            ("Authorization", &web.bearer),
            ("Content-Type", "application/json"),
        ],
        &envelope(method, payload),
    );
    let body = response.json();
    assert_eq!(body["result"]["ok"], false, "{method} should fail: {body}");
    body["result"]["error"]["code"].as_str().unwrap().to_owned()
}

/// A prompt sent while a turn runs waits in the queue, which followers see fill and empty.
#[test]
fn a_queued_prompt_is_shown_waiting_until_its_turn_starts() {
    let slow = Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("the first answer"),
        SseEvent::Pause(std::time::Duration::from_millis(1500)),
        SseEvent::finish("stop"),
        SseEvent::Done,
    ]);
    let server = FakeDeepSeek::start(vec![slow, Reply::text("the second answer")]);
    let dir = TestDir::new("web-queue");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "first"}),
    );
    socket.until(100, |frame| frame["running"] == true);
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "second, queued"}),
    );
    let waiting = socket.until(100, |frame| {
        is_queue_frame(frame) && !texts(&frame["queue"]["nextTurn"]).is_empty()
    });
    assert_eq!(
        texts(&waiting.last().unwrap()["queue"]["nextTurn"]),
        ["second, queued"],
        "{waiting:?}"
    );
    // Claimed when its turn opens: the queue empties.
    socket.until(300, |frame| {
        is_queue_frame(frame) && texts(&frame["queue"]["nextTurn"]).is_empty()
    });
    socket.until(300, turn_ended);
    assert_eq!(web.host.stop(), Some(0));
}

/// Three prompts wait behind a running tool call: the first is edited, the second removed, the
/// third moved into the running turn. The model's next request carries the steered one, the
/// next turn the edited one, and the removed one is never sent.
#[test]
fn a_waiting_prompt_is_edited_removed_or_steered_into_the_running_turn() {
    let command = json!({"command": "sleep 2", "description": "wait"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("steered answer"),
        Reply::text("edited answer"),
    ]);
    let dir = TestDir::new("web-queue-edit");
    let mut web = start(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "first"}),
    );
    server.wait_requests(1, dsh_tests::WAIT);
    let ids: Vec<String> = ["second", "third", "fourth"]
        .iter()
        .map(|text| {
            web.call(
                "session.prompt",
                &json!({"sessionId": session, "text": text}),
            )["messageId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let update = |item: &str, action: Value| {
        let mut payload = json!({"sessionId": session, "itemId": item});
        payload
            .as_object_mut()
            .unwrap()
            .extend(action.as_object().unwrap().clone());
        web.call("session.updateQueue", &payload);
    };
    update(
        &ids[0],
        json!({"action": "edit", "content": [{"type": "text", "text": "second, edited"}]}),
    );
    update(&ids[1], json!({"action": "remove"}));
    update(&ids[2], json!({"action": "steer"}));
    let settled = socket.until(200, |frame| {
        is_queue_frame(frame)
            && texts(&frame["queue"]["nextTurn"]) == ["second, edited"]
            && texts(&frame["queue"]["nextStep"]) == ["fourth"]
    });
    assert!(!settled.is_empty());
    assert_eq!(
        refused(
            &web,
            "session.updateQueue",
            &json!({"sessionId": session, "itemId": ids[1], "action": "remove"})
        ),
        "queue-item-not-found"
    );
    assert_eq!(
        refused(
            &web,
            "session.updateQueue",
            &json!({"sessionId": session, "itemId": ids[2], "action": "steer"})
        ),
        "steer-unavailable"
    );
    socket.until(400, turn_ended);
    socket.until(400, turn_ended);
    let requests = server.wait_requests(3, dsh_tests::WAIT);
    assert_eq!(requests.len(), 3);
    let steered = server.requests()[1].user_texts();
    assert!(
        steered.iter().any(|text| text.contains("fourth")),
        "{steered:?}"
    );
    let next_turn = server.requests()[2].user_texts();
    assert!(
        next_turn.iter().any(|text| text.contains("second, edited")),
        "{next_turn:?}"
    );
    for index in 0..3 {
        let sent = server.requests()[index].user_texts();
        assert!(
            !sent.iter().any(|text| text.contains("third")),
            "request {index} carries the removed prompt: {sent:?}"
        );
    }
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}
