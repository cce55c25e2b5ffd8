//! Failures a user meets on a real network, through the DeepSeek adapter against the fake
//! server: each transient one is retried in the step it broke, and what an attempt streamed
//! before it broke stays in the log as that attempt's, never in the model's history.

use std::time::Duration;

use dsh_tests::TestDir;
use dsh_tests::events::of_type;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use dsh_tests::headless::{against, stream_json};
use serde_json::Value;

/// Retries after 20 ms instead of the policy's default backoff.
fn quick_retries(dir: &TestDir) {
    dir.write(
        "home/cordis.patch.yml",
        "- id: llm-retry\n  config:\n    baseDelayMs: 20\n",
    );
}

/// The fake server's transient failures are retried in the same step: a 429 waits for its
/// Retry-After, a 500 and a stream dropped mid-way are retried with backoff.
#[test]
fn transient_failures_are_retried_in_the_same_step() {
    let dropped = Reply::DropMidStream {
        events: vec![
            first_chunk(),
            SseEvent::content("partial "),
            SseEvent::content("answer"),
        ],
        after_events: 2,
    };
    let server = FakeDeepSeek::start(vec![
        Reply::rate_limited(1),
        Reply::server_error(),
        dropped,
        Reply::text("RETRY_OK"),
    ]);
    let dir = TestDir::new("headless-retry");
    dir.write(
        "home/cordis.patch.yml",
        "- id: llm-retry\n  config:\n    baseDelayMs: 20\n",
    );
    let started = std::time::Instant::now();
    let out = against(&server, &dir, &["--output", "stream-json", "retry please"]);
    let elapsed = started.elapsed();
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "RETRY_OK");
    let retries: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "llm/retry")
        .collect();
    assert_eq!(retries.len(), 3, "{events:?}");
    assert_eq!(
        retries[0]["data"]["delayMs"], 1000,
        "Retry-After not honoured"
    );
    assert_eq!(retries[0]["data"]["failure"]["code"], "RATE_LIMIT");
    assert_eq!(retries[1]["data"]["failure"]["code"], "SERVER");
    assert!(elapsed >= Duration::from_millis(1000), "{elapsed:?}");
    let started_events = events
        .iter()
        .filter(|event| event["type"] == "llm/retry-started")
        .count();
    assert_eq!(started_events, 3);
    // Every attempt stayed in step 1 of turn 1.
    let steps: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "step/start")
        .collect();
    assert_eq!(steps.len(), 1, "{events:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // The prefix of the dropped stream was replaced by the retry, never shown to the model.
    assert!(
        !requests[3].body["messages"].to_string().contains("partial"),
        "{}",
        requests[3].body["messages"]
    );
    assert!(
        events
            .iter()
            .all(|event| event["data"]["interrupted"] != true),
        "{events:?}"
    );
}

/// The stream ends cleanly in the middle of an answer, without `[DONE]` (a proxy that closes
/// an idle connection does this): `STREAM_CLOSED`, retried like a transport failure in the same
/// step. The partial attempt is logged with an error finish; the message is the retry's.
#[test]
fn a_stream_closed_without_done_is_retried_and_the_partial_attempt_logged_failed() {
    let server = FakeDeepSeek::start(vec![
        Reply::SseUntilClose(vec![first_chunk(), SseEvent::content("half an ")]),
        Reply::text("WHOLE_ANSWER"),
    ]);
    let dir = TestDir::new("retry-stream-closed");
    quick_retries(&dir);
    let out = against(&server, &dir, &["--output", "stream-json", "answer me"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "WHOLE_ANSWER");
    let retries = of_type(&events, "llm/retry");
    assert_eq!(retries.len(), 1, "{events:?}");
    assert_eq!(retries[0]["data"]["failure"]["code"], "STREAM_CLOSED");
    assert_eq!(of_type(&events, "step/start").len(), 1, "one step");
    // The two attempts, as logged: the partial one's delta and its error finish, then the
    // retry's whole answer.
    let chunks: Vec<&Value> = of_type(&events, "assistant/chunk")
        .into_iter()
        .map(|event| &event["data"]["chunk"])
        .collect();
    let finishes: Vec<&Value> = chunks
        .iter()
        .filter(|chunk| chunk["type"] == "finish")
        .map(|chunk| &chunk["reason"])
        .collect();
    assert_eq!(finishes.len(), 2, "{chunks:?}");
    assert_eq!(finishes[0]["kind"], "error");
    assert_eq!(finishes[0]["failure"]["code"], "STREAM_CLOSED");
    assert_eq!(finishes[1]["kind"], "stop");
    assert!(
        chunks
            .iter()
            .any(|chunk| chunk["type"] == "text-delta" && chunk["text"] == "half an "),
        "{chunks:?}"
    );
    let messages = of_type(&events, "assistant/message");
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(
        messages[0]["data"]["message"]["content"][0]["text"],
        "WHOLE_ANSWER"
    );
    assert_ne!(messages[0]["data"]["interrupted"], true);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        !requests[1].body["messages"].to_string().contains("half an"),
        "the partial attempt reached the model: {}",
        requests[1].body["messages"]
    );
}

/// A stream that keeps closing early is retried as the policy allows, then ends the turn
/// `error` with `STREAM_CLOSED`; what the last attempt streamed is kept, marked interrupted.
#[test]
fn a_stream_that_keeps_closing_ends_the_turn_with_stream_closed() {
    let closing = || Reply::SseUntilClose(vec![first_chunk(), SseEvent::content("again ")]);
    let server = FakeDeepSeek::start(vec![closing(), closing()]);
    let dir = TestDir::new("retry-stream-closed-twice");
    dir.write(
        "home/cordis.patch.yml",
        "- id: llm-retry\n  config:\n    baseDelayMs: 20\n    maxRetries: 1\n",
    );
    let out = against(&server, &dir, &["--output", "stream-json", "answer me"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let end = of_type(&events, "turn/end");
    assert_eq!(end[0]["data"]["reason"]["kind"], "error", "{end:?}");
    assert_eq!(end[0]["data"]["reason"]["error"]["code"], "STREAM_CLOSED");
    assert_eq!(server.requests().len(), 2);
    let messages = of_type(&events, "assistant/message");
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["data"]["interrupted"], true);
    assert_eq!(
        messages[0]["data"]["message"]["content"][0]["text"],
        "again "
    );
}
