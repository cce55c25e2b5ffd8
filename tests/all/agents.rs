//! The `agents` registry through the real headless runner: the `agent/*` notifications and
//! their order, the wake rules (a followup queued while the agent runs is the next turn, back
//! to back; an inject stages until a wake), cancel clearing the inbox, and `agent/error`.
//! `agent-probe` records the notifications and drives the registry as its config says.

use dsh_tests::TestDir;
use dsh_tests::events::of_type;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{self, against, stream_json};
use serde_json::Value;

/// Adds `agent-probe` with `config` (YAML lines, indented) recording to `dir/agents.jsonl`.
fn with_probe(dir: &TestDir, config: &str) {
    dsh_tests::plugin_lib("agent_probe");
    let record = dir.join("agents.jsonl");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- insert:\n    - id: probe\n      name: agent-probe\n      config:\n        record: {}\n{config}",
            record.display()
        ),
    );
}

/// The recorded notifications: `(event, data)`.
fn notices(dir: &TestDir) -> Vec<(String, Value)> {
    std::fs::read_to_string(dir.join("agents.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|line| {
            (
                line["event"].as_str().unwrap().to_owned(),
                line["data"].clone(),
            )
        })
        .collect()
}

fn names(notices: &[(String, Value)]) -> Vec<&str> {
    notices.iter().map(|(name, _)| name.as_str()).collect()
}

#[test]
fn a_followup_sent_while_running_is_the_next_turn_back_to_back() {
    let server = FakeDeepSeek::start(vec![Reply::text("first"), Reply::text("second")]);
    let dir = TestDir::new("agents-followup");
    with_probe(&dir, "        followupAtClaim: and then this\n");
    let out = against(&server, &dir, &["--output", "stream-json", "do this"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    // Two turns, one per followup, the last one's answer printed.
    assert_eq!(of_type(&events, "turn/start").len(), 2, "{events:?}");
    assert_eq!(result["output"], "second");
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("and then this"), "{second}");
    let seen = notices(&dir);
    assert_eq!(
        names(&seen),
        [
            "agent/created",
            "agent/session-start",
            "agent/inbox/inserted",
            "agent/status",
            "agent/inbox/claimed",
            "agent/inbox/inserted",
            "agent/inbox/claimed",
            "agent/status",
        ],
        "{seen:?}"
    );
    assert_eq!(seen[1].1["source"], "startup");
    assert_eq!(seen[3].1["status"], "running");
    assert_eq!(seen[4].1["turn"], 1);
    assert_eq!(seen[6].1["turn"], 2);
    assert_eq!(seen[7].1["status"], "idle");
}

#[test]
fn an_inject_stages_until_the_wake_and_enters_before_the_task() {
    let server = FakeDeepSeek::start(vec![Reply::text("done")]);
    let dir = TestDir::new("agents-inject");
    with_probe(&dir, "        injectAtStart: staged context\n");
    let out = against(&server, &dir, &["--output", "stream-json", "the task"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let splices: Vec<(&str, bool)> = of_type(&events, "agent/inbox/spliced")
        .iter()
        .map(|event| {
            (
                event["data"]["target"].as_str().unwrap(),
                event["data"]["removedCount"].is_null(),
            )
        })
        .collect();
    // Staged (no turn), then the followup, then the turn claims next-step before next-turn.
    assert_eq!(
        splices,
        [
            ("next-step", true),
            ("next-turn", true),
            ("next-step", false),
            ("next-turn", false)
        ],
        "{events:?}"
    );
    // The human and staged messages, without the plugins' context snapshots.
    let users: Vec<String> = of_type(&events, "user/message")
        .iter()
        .filter(|event| event["data"]["source"]["form"] != "snapshot")
        .map(|event| {
            event["data"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(users, ["staged context", "the task"]);
    assert_eq!(of_type(&events, "turn/start").len(), 1);
}

#[test]
fn a_cancel_clears_the_inbox_unrun_and_ends_the_turn_aborted() {
    let server = FakeDeepSeek::start(vec![Reply::text("never asked")]);
    let dir = TestDir::new("agents-cancel");
    with_probe(
        &dir,
        "        followupAtClaim: dropped unrun\n        cancelAtClaim: true\n",
    );
    let out = against(&server, &dir, &["--output", "stream-json", "start"]);
    // Cancelled with cause `user`, as SIGINT would.
    assert_eq!(out.code, Some(130), "{out:?}");
    assert!(server.requests().is_empty(), "the model was asked");
    let (events, _) = stream_json(&out.stdout);
    let canceled: Vec<&Value> = of_type(&events, "agent/inbox/spliced")
        .into_iter()
        .filter(|event| event["data"]["outcome"] == "canceled")
        .collect();
    assert_eq!(canceled.len(), 1, "{events:?}");
    assert_eq!(canceled[0]["data"]["target"], "next-turn");
    assert_eq!(canceled[0]["data"]["removedCount"], 1);
    let ends = of_type(&events, "turn/end");
    assert_eq!(ends.len(), 1, "the dropped followup ran: {events:?}");
    assert_eq!(ends[0]["data"]["reason"]["kind"], "aborted");
    assert_eq!(ends[0]["data"]["reason"]["reason"]["kind"], "user");
    let seen = notices(&dir);
    let discarded: Vec<&(String, Value)> = seen
        .iter()
        .filter(|(name, _)| name == "agent/inbox/discarded")
        .collect();
    assert_eq!(discarded.len(), 1, "{seen:?}");
    assert_eq!(
        discarded[0].1["message"]["content"][0]["text"],
        "dropped unrun"
    );
    assert!(
        !names(&seen).contains(&"agent/error"),
        "a cancel is not an error: {seen:?}"
    );
}

#[test]
fn a_failed_turn_reports_agent_error_before_going_idle() {
    let dir = TestDir::new("agents-error");
    with_probe(&dir, "");
    // No model configured: the turn ends `error` with NO_MODEL.
    let out = headless::run(&dir, &["anything"], &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let seen = notices(&dir);
    let tail: Vec<&str> = names(&seen).into_iter().rev().take(2).collect();
    assert_eq!(tail, ["agent/status", "agent/error"], "{seen:?}");
    let error = &seen[seen.len() - 2].1;
    assert_eq!(error["turn"], 1);
    assert_eq!(error["step"], 0);
    assert_eq!(error["error"]["code"], "NO_MODEL");
}
