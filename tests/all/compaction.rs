//! Compaction through the real host against the fake DeepSeek server, with a small context
//! window: a long tool output crosses the threshold, a summary request that extends the
//! conversation's own request is made, the oldest span is replaced by the summary (logged as the
//! reference logs it) and the turn goes on; an overflow the provider reports is compacted and
//! the step retried once, a second one fails loud; a failed summary leaves the surface as it
//! was and ends the turn.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against_patched, stream_json};
use serde_json::{Value, json};

/// A headless stream-json run against `server` with the compaction row configured by
/// `config` (YAML lines under `config:`).
fn run(server: &FakeDeepSeek, dir: &TestDir, config: &str) -> dsh_tests::Output {
    against_patched(
        server,
        dir,
        &format!("- id: compaction\n  config:\n{config}"),
        &[
            "--output",
            "stream-json",
            "Remember the codeword PELICAN, then print a long line.",
        ],
        &[],
    )
}

/// About 2,000 tokens of output.
fn long_output() -> String {
    json!({"command": "head -c 8000 /dev/zero | tr '\\0' a", "description": "a long line"})
        .to_string()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn a_long_turn_is_compacted_before_its_next_step_and_goes_on() {
    let dir = TestDir::new("compaction-auto");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &long_output())]),
        Reply::text("The user set the codeword PELICAN and asked for a long line."),
        Reply::text("Done: the codeword is PELICAN."),
    ]);
    let out = run(&server, &dir, "    contextWindow: 2000\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    assert_eq!(
        result["output"], "Done: the codeword is PELICAN.",
        "{result}"
    );
    let order = kinds(&events);
    let start = order
        .iter()
        .position(|kind| kind == "compaction/start")
        .expect("a compaction");
    assert_eq!(
        &order[start..start + 4],
        [
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end"
        ],
        "{order:?}"
    );
    let replaced = &events[start + 2];
    assert_eq!(replaced["surfaceOp"]["op"], "replace", "{replaced}");
    let summary = &events[start + 1]["data"];
    // The task and the runtime context before the call are shadowed; the call and its
    // result stay.
    let shadowed: Vec<u64> = summary["shadowedSeqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|seq| seq.as_u64().unwrap())
        .collect();
    assert_eq!(
        replaced["data"]["content"][1]["text"],
        summary["summary"][0]["text"]
    );
    let cited: Vec<u64> = replaced["sourceEventSeqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|seq| seq.as_u64().unwrap())
        .collect();
    assert!(shadowed.iter().all(|seq| cited.contains(seq)), "{replaced}");
    assert_eq!(shadowed.len(), 2, "{summary}");
    assert!(events[start + 3]["data"].get("error").is_none());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The summary request extends the conversation's own request: same system prompt and
    // tools, the same messages first, then the instruction.
    let (first, ask) = (&requests[0].body, &requests[1].body);
    assert_eq!(first["tools"], ask["tools"]);
    let first_messages = first["messages"].as_array().unwrap();
    let ask_messages = ask["messages"].as_array().unwrap();
    assert_eq!(&ask_messages[..first_messages.len()], &first_messages[..]);
    assert!(
        ask_messages
            .last()
            .unwrap()
            .to_string()
            .contains("checkpoint summary")
    );
    // The next step sees the summary in place of the task, and the newest result verbatim.
    let next = requests[2].body["messages"].to_string();
    assert!(
        next.contains("compacted-summary") && next.contains("codeword PELICAN and asked"),
        "{next}"
    );
    assert!(
        !next.contains("Remember the codeword"),
        "the shadowed task is still sent: {next}"
    );
    assert!(
        next.contains("aaaaaaaa"),
        "the newest tool result was not kept: {next}"
    );
    // The runtime context the summary shadowed is logged again after it.
    assert!(
        next.contains("Runtime context"),
        "the runtime context was summarized away: {next}"
    );
    server.assert_no_violations();
}

#[test]
fn an_overflow_is_compacted_and_retried_once_then_fails_loud() {
    let overflow = || {
        Reply::error(
            400,
            "invalid_request_error",
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens.",
        )
    };
    let dir = TestDir::new("compaction-overflow");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &long_output())]),
        overflow(),
        Reply::text("The codeword is PELICAN."),
        Reply::text("COMPACTION RECOVERED"),
    ]);
    let out = run(&server, &dir, "    contextWindow: 100000\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "COMPACTION RECOVERED");
    assert!(kinds(&events).contains(&"compaction/summary".to_owned()));

    let dir = TestDir::new("compaction-overflow-twice");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &long_output())]),
        overflow(),
        Reply::text("The codeword is PELICAN."),
        overflow(),
    ]);
    let out = run(&server, &dir, "    contextWindow: 100000\n");
    assert_ne!(
        out.code,
        Some(0),
        "a second overflow must end the turn: {out:?}"
    );
    let (events, _) = stream_json(&out.stdout);
    let end = events
        .iter()
        .rev()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert_eq!(end["data"]["reason"]["kind"], "error", "{end}");
    assert!(end.to_string().contains("CONTEXT_WINDOW_EXCEEDED"), "{end}");
}

#[test]
fn a_failed_summary_leaves_the_surface_and_ends_the_turn() {
    let dir = TestDir::new("compaction-failed");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &long_output())]),
        Reply::error(400, "invalid_request_error", "the summary was refused"),
    ]);
    let out = run(&server, &dir, "    contextWindow: 2000\n");
    assert_ne!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let order = kinds(&events);
    let start = order
        .iter()
        .position(|kind| kind == "compaction/start")
        .unwrap();
    assert_eq!(order[start + 1], "compaction/end", "{order:?}");
    assert!(
        events[start + 1]["data"]["error"]
            .to_string()
            .contains("summary request failed")
    );
    assert!(
        !events
            .iter()
            .any(|event| event["surfaceOp"]["op"] == "replace")
    );
    let end = events
        .iter()
        .rev()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert!(end.to_string().contains("compaction failed"), "{end}");
}

/// What the provider can cache: every request of a multi-step turn is an exact extension of
/// the one before (same system prompt and tools, the earlier messages unchanged, new ones only
/// appended), so each step's prefix is served from the cache.
#[test]
fn each_request_extends_the_one_before_byte_for_byte() {
    let dir = TestDir::new("prefix-stable");
    let step = |n: usize| {
        let command =
            json!({"command": format!("echo step {n}"), "description": "a step"}).to_string();
        Reply::tool_calls(&[(&format!("call_{n}"), "bash", &command)])
    };
    let server = FakeDeepSeek::start(vec![
        step(1),
        step(2),
        step(3),
        step(4),
        Reply::text("four steps done"),
    ]);
    let out = run(&server, &dir, "    threshold: 0.8\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0].body, &pair[1].body);
        assert_eq!(
            before["tools"].to_string(),
            after["tools"].to_string(),
            "the tool list changed"
        );
        let (old, new) = (
            before["messages"].as_array().unwrap(),
            after["messages"].as_array().unwrap(),
        );
        assert!(new.len() > old.len());
        for (index, message) in old.iter().enumerate() {
            assert_eq!(
                message.to_string(),
                new[index].to_string(),
                "message {index} changed between consecutive requests"
            );
        }
    }
    server.assert_no_violations();
}

/// An old tool result over 8,192 code points is shown as its head, a marker and its tail once
/// two answers follow it; the log keeps it whole; later requests extend the pruned one.
#[test]
fn an_old_huge_result_is_pruned_in_place_and_kept_whole_in_the_log() {
    let dir = TestDir::new("prune");
    let huge =
        json!({"command": "head -c 40000 /dev/zero | tr '\\0' b", "description": "a huge output"})
            .to_string();
    let small = |n: usize| {
        let command =
            json!({"command": format!("echo small {n}"), "description": "small"}).to_string();
        Reply::tool_calls(&[(&format!("call_s{n}"), "bash", &command)])
    };
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_huge", "bash", &huge)]),
        small(1),
        small(2),
        small(3),
        Reply::text("done"),
    ]);
    let out = run(&server, &dir, "    pruneBatchTokens: 1000\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let full = "b".repeat(40_000);
    let sent = |index: usize| requests[index].body["messages"].to_string();
    assert!(sent(2).contains(&full), "pruned too early");
    assert!(!sent(3).contains(&full), "the old result was not pruned");
    assert!(
        sent(3).contains("characters of this old tool result are not shown"),
        "{}",
        sent(3)
    );
    assert!(sent(3).contains(&"b".repeat(4_096)));
    // Pruned once: the next request extends the pruned one.
    let (before, after) = (
        requests[3].body["messages"].as_array().unwrap(),
        requests[4].body["messages"].as_array().unwrap(),
    );
    assert!(before.iter().zip(after).all(|(a, b)| a == b));
    let (events, _) = stream_json(&out.stdout);
    let order = kinds(&events);
    let prune = order
        .iter()
        .position(|kind| kind == "compaction/prune")
        .expect("a prune event");
    assert_eq!(order[prune + 1], "tool/result");
    assert_eq!(events[prune + 1]["surfaceOp"]["op"], "replace");
    // The original result is still in the log, whole.
    assert!(
        events
            .iter()
            .any(|event| event["type"] == "tool/result" && event.to_string().contains(&full))
    );
    server.assert_no_violations();
}
