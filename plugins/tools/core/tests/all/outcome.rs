//! Outcome normalization, post-execute decisions, the exactly-once finalizer, event payloads.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh_protocol::{ContentBlock, Message, PostDecision, Role, ToolCallEvent};
use dsh_tools_core::{
    FailureKind, OutcomeSeal, ToolFailure, ToolOutcome, apply_post_decision, codes, result_event,
    tool_result_of,
};
use serde_json::{Value, json};

fn context(text: &str) -> Message {
    Message {
        id: format!("ctx-{text}"),
        role: Role::User,
        content: vec![ContentBlock::text(text)],
        source: serde_json::from_value(json!({"kind": "plugin", "plugin": "test"})).unwrap(),
    }
}

fn ok() -> ToolOutcome {
    ToolOutcome::success(json!({"n": 1}), vec![ContentBlock::text("one")])
        .with_meta(json!({"diffs": []}))
        .with_additional_contexts(vec![context("deferred")])
}

fn never_revalue(_: Value) -> Result<ToolOutcome, ToolFailure> {
    panic!("no value replacement expected")
}

#[test]
fn failures_render_as_error_text_with_their_code() {
    let outcome = ToolOutcome::failure(ToolFailure::unknown_tool("nope"));
    assert!(outcome.is_error());
    assert_eq!(
        outcome.content(),
        [ContentBlock::text("Error: unknown tool \"nope\"")]
    );
    assert_eq!(
        outcome.error_info().map(|info| info.code.as_str()),
        Some(codes::UNKNOWN_TOOL)
    );
    for (failure, text, code) in [
        (
            ToolFailure::timeout(5000),
            "Error: tool call timed out after 5000ms",
            codes::TOOL_TIMEOUT,
        ),
        (
            ToolFailure::aborted(),
            "Error: tool call aborted",
            codes::ABORTED,
        ),
        (
            ToolFailure::aborted_before_dispatch(),
            "Error: tool call aborted before dispatch",
            codes::ABORTED_BEFORE_DISPATCH,
        ),
    ] {
        let outcome = ToolOutcome::failure(failure);
        assert_eq!(outcome.content(), [ContentBlock::text(text)]);
        assert_eq!(
            outcome.error_info().map(|info| info.code.as_str()),
            Some(code)
        );
    }
    assert_eq!(
        ToolFailure::timeout(1).info().unwrap().name,
        "ToolTimeoutError"
    );
    assert_eq!(ToolFailure::aborted().info().unwrap().name, "AbortError");
}

#[test]
fn accept_keeps_the_outcome_and_appends_contexts() {
    let decided = apply_post_decision(
        ok(),
        PostDecision::Accept {
            content: None,
            value: None,
            additional_contexts: vec![context("post")],
        },
        never_revalue,
    );
    assert!(!decided.is_error());
    assert_eq!(decided.value(), Some(&json!({"n": 1})));
    assert_eq!(decided.meta(), Some(&json!({"diffs": []})));
    let ids: Vec<&str> = decided
        .additional_contexts()
        .iter()
        .map(|m| m.id.as_str())
        .collect();
    assert_eq!(ids, ["ctx-deferred", "ctx-post"]);
    assert_eq!(
        apply_post_decision(ok(), PostDecision::accept(), never_revalue),
        ok()
    );
}

#[test]
fn content_replacement_keeps_value_and_meta() {
    let decided = apply_post_decision(
        ok(),
        PostDecision::Accept {
            content: Some(vec![ContentBlock::text("preview")]),
            value: None,
            additional_contexts: vec![],
        },
        never_revalue,
    );
    assert_eq!(decided.content(), [ContentBlock::text("preview")]);
    assert_eq!(decided.value(), Some(&json!({"n": 1})));
    assert_eq!(decided.meta(), Some(&json!({"diffs": []})));
}

#[test]
fn value_replacement_is_revalidated_and_rerendered() {
    let decided = apply_post_decision(
        ok(),
        PostDecision::Accept {
            content: None,
            value: Some(json!({"n": 2})),
            additional_contexts: vec![context("post")],
        },
        |value| {
            Ok(ToolOutcome::success(
                value.clone(),
                vec![ContentBlock::text(value["n"].to_string())],
            ))
        },
    );
    assert_eq!(decided.value(), Some(&json!({"n": 2})));
    assert_eq!(decided.content(), [ContentBlock::text("2")]);
    assert_eq!(decided.meta(), None);
    assert_eq!(decided.additional_contexts().len(), 2);

    let invalid = apply_post_decision(
        ok(),
        PostDecision::Accept {
            content: None,
            value: Some(json!({"n": "x"})),
            additional_contexts: vec![],
        },
        |_| {
            Err(ToolFailure::invalid_output(
                "count",
                &["\"value.n\" must be an integer".to_owned()],
            ))
        },
    );
    assert_eq!(
        invalid.error_info().unwrap().code,
        codes::INVALID_TOOL_OUTPUT
    );

    let failed = apply_post_decision(
        ToolOutcome::failure(ToolFailure::aborted()),
        PostDecision::Accept {
            content: None,
            value: Some(json!(1)),
            additional_contexts: vec![],
        },
        never_revalue,
    );
    assert_eq!(
        failed.as_failure().unwrap().message(),
        "tools/post-execute cannot replace the value of a failed result"
    );
}

#[test]
fn replacing_both_content_and_value_is_refused() {
    let decided = apply_post_decision(
        ok(),
        PostDecision::Accept {
            content: Some(vec![]),
            value: Some(json!(1)),
            additional_contexts: vec![context("x")],
        },
        never_revalue,
    );
    let failure = decided.as_failure().unwrap();
    assert_eq!(
        failure.message(),
        "tools/post-execute accept decision cannot replace both value and content"
    );
    assert_eq!(failure.kind(), FailureKind::Pipeline);
    assert_eq!(failure.info(), None);
    assert!(decided.additional_contexts().is_empty());
    // The same decision arriving as JSON from a listener.
    let wire: PostDecision =
        serde_json::from_value(json!({"kind": "accept", "content": [], "value": null})).unwrap();
    assert!(apply_post_decision(ok(), wire, never_revalue).is_error());
}

#[test]
fn block_turns_feedback_into_an_uncoded_error_with_only_its_own_contexts() {
    let feedback = vec![ContentBlock::text(
        "tool output rejected by policy: retry once",
    )];
    let decided = apply_post_decision(
        ok(),
        PostDecision::Block {
            feedback: feedback.clone(),
            additional_contexts: vec![context("why")],
        },
        never_revalue,
    );
    assert!(decided.is_error());
    assert_eq!(decided.content(), feedback.as_slice());
    assert_eq!(
        decided.as_failure().unwrap().message(),
        "tool output rejected by policy: retry once"
    );
    assert_eq!(
        decided.as_failure().unwrap().kind(),
        FailureKind::PostExecuteBlocked
    );
    assert_eq!(decided.error_info(), None);
    assert_eq!(decided.meta(), None);
    let ids: Vec<&str> = decided
        .additional_contexts()
        .iter()
        .map(|m| m.id.as_str())
        .collect();
    assert_eq!(ids, ["ctx-why"]);
    assert_eq!(
        ToolFailure::blocked(&[]).message(),
        "tool result blocked by post-execute policy"
    );
}

#[test]
fn post_decisions_have_the_wire_shape() {
    let accept: PostDecision = serde_json::from_value(json!({"kind": "accept"})).unwrap();
    assert_eq!(accept, PostDecision::accept());
    let null_value: PostDecision =
        serde_json::from_value(json!({"kind": "accept", "value": null})).unwrap();
    assert_eq!(
        null_value,
        PostDecision::Accept {
            content: None,
            value: Some(Value::Null),
            additional_contexts: vec![]
        }
    );
    let block = PostDecision::Block {
        feedback: vec![ContentBlock::text("no")],
        additional_contexts: vec![],
    };
    assert_eq!(
        serde_json::to_value(&block).unwrap(),
        json!({"kind": "block", "feedback": [{"type": "text", "text": "no"}]})
    );
}

#[test]
fn the_finalizer_runs_exactly_once_for_every_outcome() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seal = |runs: &Arc<AtomicUsize>| {
        let runs = runs.clone();
        OutcomeSeal::new(Some(Box::new(move |outcome: &ToolOutcome| {
            runs.fetch_add(1, Ordering::SeqCst);
            let mut content = outcome.content().to_vec();
            content.push(ContentBlock::text("[end]"));
            Some(content)
        })))
    };
    // A success, a pipeline failure that skipped post-execute, and an unknown tool.
    for outcome in [
        ok(),
        ToolOutcome::failure(ToolFailure::pipeline("listener failed")),
        ToolOutcome::failure(ToolFailure::unknown_tool("x")),
    ] {
        let was_error = outcome.is_error();
        let last = seal(&runs).finish(outcome);
        assert_eq!(last.content().last(), Some(&ContentBlock::text("[end]")));
        assert_eq!(last.is_error(), was_error);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // `None` keeps the content; no finalizer keeps it too.
    let keep = OutcomeSeal::new(Some(Box::new(|_: &ToolOutcome| None))).finish(ok());
    assert_eq!(keep.content(), [ContentBlock::text("one")]);
    assert_eq!(
        OutcomeSeal::without_finalizer().finish(ok()).outcome(),
        &ok()
    );
}

#[test]
fn result_events_have_the_logged_shape() {
    let success = OutcomeSeal::without_finalizer().finish(ok());
    let event = result_event(1, 2, "m-1", "call-1", &success);
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({
            "turn": 1, "step": 2,
            "message": {
                "id": "m-1", "role": "user",
                "content": [{"type": "tool-result", "toolCallId": "call-1", "content": [{"type": "text", "text": "one"}], "isError": false}],
                "source": {"kind": "tool", "callId": "call-1"}
            },
            "meta": {"diffs": []}
        })
    );
    assert_eq!(
        tool_result_of(&event).map(|(id, _, error)| (id, error)),
        Some(("call-1", false))
    );

    let failed = OutcomeSeal::without_finalizer().finish(ToolOutcome::failure(
        ToolFailure::invalid_args(&["missing required property \"path\"".to_owned()]),
    ));
    let event = serde_json::to_value(result_event(3, 1, "m-2", "c", &failed)).unwrap();
    assert_eq!(
        event["error"],
        json!({"name": "ToolArgsError", "code": "INVALID_ARGS"})
    );
    assert_eq!(event["message"]["content"][0]["isError"], json!(true));
    assert_eq!(
        event["message"]["content"][0]["content"][0]["text"],
        json!("Error: invalid arguments: missing required property \"path\"")
    );
    assert!(event.get("meta").is_none());

    let call = ToolCallEvent {
        turn: 1,
        step: 1,
        call_id: "c".into(),
        name: "bash".into(),
        arguments: "{\"command\": \"ls\"}".into(),
    };
    assert_eq!(
        serde_json::to_value(&call).unwrap(),
        json!({"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": "{\"command\": \"ls\"}"})
    );
}

#[test]
fn concluding_a_turn_is_a_success_only_mark() {
    assert!(ok().concluding_turn().concludes_turn());
    assert!(
        !ToolOutcome::failure(ToolFailure::aborted())
            .concluding_turn()
            .concludes_turn()
    );
}

#[test]
fn a_post_decision_a_newer_hook_made_fails_the_outcome_instead_of_passing_it() {
    let newer: PostDecision =
        serde_json::from_value(json!({"kind": "redact", "spans": [[0, 3]]})).unwrap();
    let outcome = apply_post_decision(ok(), newer, never_revalue);
    assert!(outcome.is_error(), "{outcome:?}");
}
