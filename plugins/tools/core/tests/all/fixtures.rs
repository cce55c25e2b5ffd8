//! The recorded reference logs, read in place: every `tool/call` and `tool/result` payload
//! deserializes into our types and serializes back to the same JSON value, and results our
//! builders produce for recorded situations match what the reference logged.

use std::path::{Path, PathBuf};

use dsh_protocol::{
    ApprovalOutcome, ContentBlock, EventData, PostDecision, ToolCallEvent, ToolErrorInfo,
    ToolResultEvent,
};
use dsh_tools_core::{
    AskAnswer, Gate, OutcomeSeal, ToolFailure, ToolOutcome, apply_post_decision, codes,
    result_event, tool_result_of,
};
use serde_json::{Value, json};

fn fixtures_dir() -> PathBuf {
    dsh_test_corpus::corpus().expect("the recorded corpus (the test checks for it first)")
}

fn session_logs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            session_logs(&path, out);
        } else if path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("session") && name.ends_with(".jsonl"))
        {
            out.push(path);
        }
    }
}

/// Every logged event of one type, with where it came from.
fn events(kind: &str) -> Vec<(String, Value)> {
    let dir = fixtures_dir();
    assert!(dir.is_dir(), "fixture corpus missing at {}", dir.display());
    let mut logs = Vec::new();
    session_logs(&dir, &mut logs);
    logs.sort();
    let mut found = Vec::new();
    for path in logs {
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if event["type"] == kind {
                found.push((
                    format!("{}:{}", path.display(), number + 1),
                    event["data"].clone(),
                ));
            }
        }
    }
    found
}

#[test]
fn every_logged_tool_call_round_trips() {
    dsh_test_corpus::needs_corpus!("every_logged_tool_call_round_trips");
    let calls = events(ToolCallEvent::KIND);
    assert!(
        calls.len() >= 100,
        "expected the recorded corpus, found {} tool/call events",
        calls.len()
    );
    for (at, data) in calls {
        let parsed: ToolCallEvent =
            serde_json::from_value(data.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), data, "{at}");
    }
}

#[test]
fn every_logged_tool_result_round_trips() {
    dsh_test_corpus::needs_corpus!("every_logged_tool_result_round_trips");
    let results = events(ToolResultEvent::KIND);
    assert!(
        results.len() >= 100,
        "expected the recorded corpus, found {} tool/result events",
        results.len()
    );
    let (mut with_error, mut with_meta) = (0, 0);
    for (at, data) in results {
        let parsed: ToolResultEvent =
            serde_json::from_value(data.clone()).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), data, "{at}");
        let (call_id, _, _) =
            tool_result_of(&parsed).unwrap_or_else(|| panic!("{at}: no tool-result block"));
        assert_eq!(
            serde_json::to_value(&parsed.message.source).unwrap(),
            json!({"kind": "tool", "callId": call_id}),
            "{at}"
        );
        with_error += usize::from(parsed.error.is_some());
        with_meta += usize::from(parsed.meta.is_some());
    }
    // The corpus exercises both optional fields.
    assert!(with_error > 0 && with_meta > 0);
}

/// The recorded result of `call_id`, and our event for the same call from `outcome`, with the
/// recorded message id.
fn ours_and_theirs(call_id: &str, outcome: ToolOutcome) -> (Value, Value) {
    let (at, recorded) = events(ToolResultEvent::KIND)
        .into_iter()
        .find(|(_, data)| data["message"]["source"]["callId"] == call_id)
        .unwrap_or_else(|| panic!("no recorded result for {call_id}"));
    let turn = recorded["turn"].as_u64().unwrap();
    let step = recorded["step"].as_u64().unwrap();
    let id = recorded["message"]["id"].as_str().unwrap();
    let finished = OutcomeSeal::without_finalizer().finish(outcome);
    let ours = serde_json::to_value(result_event(turn, step, id, call_id, &finished)).unwrap();
    assert!(!at.is_empty());
    (ours, recorded)
}

#[test]
fn an_approval_rejection_is_logged_as_the_reference_logs_it() {
    dsh_test_corpus::needs_corpus!("an_approval_rejection_is_logged_as_the_reference_logs_it");
    let Gate::Deny(failure) =
        Gate::resolve_ask("bash", None, AskAnswer::Answered(ApprovalOutcome::Rejected))
    else {
        panic!("expected a denial");
    };
    let (ours, theirs) = ours_and_theirs(
        "call_00_6k0oGSliVHxGSgqBmMEO4311",
        ToolOutcome::failure(failure),
    );
    assert_eq!(ours, theirs);
}

#[test]
fn a_pre_execute_denial_is_logged_as_the_reference_logs_it() {
    dsh_test_corpus::needs_corpus!("a_pre_execute_denial_is_logged_as_the_reference_logs_it");
    let decision = dsh_protocol::PreDecision::Deny {
        reason: "bash is disabled by policy in this session".into(),
    };
    let Some(Gate::Deny(failure)) = Gate::from_pre_decision(&decision) else {
        panic!("expected a denial");
    };
    let (ours, theirs) = ours_and_theirs(
        "call_00_JliP571Bh0QQ8QExbSPk0080",
        ToolOutcome::failure(failure),
    );
    assert_eq!(ours, theirs);
}

#[test]
fn a_post_execute_block_is_logged_as_the_reference_logs_it() {
    dsh_test_corpus::needs_corpus!("a_post_execute_block_is_logged_as_the_reference_logs_it");
    let feedback = vec![ContentBlock::text(
        "tool output rejected by policy: retry once",
    )];
    let ran = ToolOutcome::success(json!("output"), vec![ContentBlock::text("output")]);
    let blocked = apply_post_decision(
        ran,
        PostDecision::Block {
            feedback,
            additional_contexts: vec![],
        },
        |_| panic!("no value replacement"),
    );
    let (ours, theirs) = ours_and_theirs("call_00_VAByyMjsct4c7P6k1ysX9256", blocked);
    assert_eq!(ours, theirs);
}

#[test]
fn a_coded_tool_failure_is_logged_as_the_reference_logs_it() {
    dsh_test_corpus::needs_corpus!("a_coded_tool_failure_is_logged_as_the_reference_logs_it");
    let failure = ToolFailure::tool(
        "cannot read \"{{cwd}}/deleted.txt\": not found",
        Some(ToolErrorInfo::new(codes::FS_ERROR, codes::FS_NOT_FOUND)),
    );
    let (ours, theirs) = ours_and_theirs(
        "call_00_ET_pKZS54ZqkXTdxAsdLQR91261",
        ToolOutcome::failure(failure),
    );
    assert_eq!(ours, theirs);
}
