//! The fold against a recorded log and against single events.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use abi_stable::std_types::RString;
use dsh_protocol::ToolView;

use crate::test_support::records;

#[test]
fn the_demo_folds_into_the_question_a_terminal_card_the_answer_and_the_end() {
    let mut fold = Fold::default();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../demo/session.jsonl");
    for record in records(path) {
        fold.apply(&record);
    }
    let kinds: Vec<&str> = fold
        .items()
        .iter()
        .map(|item| match item {
            ChatItem::User { .. } => "user",
            ChatItem::Assistant { .. } => "assistant",
            ChatItem::Tool { .. } => "tool",
            ChatItem::TurnEnd { .. } => "turn-end",
            ChatItem::Notice { .. } => "notice",
            ChatItem::Approval { .. } => "approval",
            ChatItem::Question { .. } => "question",
        })
        .collect();
    assert_eq!(kinds, ["user", "tool", "assistant", "turn-end"]);
    let ChatItem::Tool { status, view, .. } = &fold.items()[1] else {
        panic!("a tool card");
    };
    assert_eq!(*status, ToolStatus::Ok);
    let ToolView::Terminal {
        output, exit_code, ..
    } = view
    else {
        panic!("a terminal view: {view:?}");
    };
    assert_eq!((output.trim(), *exit_code), ("42", Some(0)));
    let ChatItem::Assistant {
        text, streaming, ..
    } = &fold.items()[2]
    else {
        panic!("an answer");
    };
    assert!(text.contains("42") && !streaming, "{text}");
    assert!(!fold.running);
}

fn record(seq: u64, kind: &str, data: serde_json::Value) -> EventRecord {
    let line = serde_json::json!({"type": kind, "seq": seq, "time": 0, "data": data});
    EventRecord {
        session: RString::from("s"),
        seq,
        kind: RString::from(kind),
        time: 0,
        json: RString::from(line.to_string()),
    }
}

fn delta(seq: u64, text: &str) -> EventRecord {
    record(
        seq,
        "assistant/chunk",
        serde_json::json!({"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}),
    )
}

#[test]
fn deltas_append_to_one_item_and_a_failed_attempt_starts_it_over() {
    let mut fold = Fold::default();
    fold.apply(&record(0, "turn/start", serde_json::json!({"turn": 1})));
    assert!(matches!(
        fold.apply(&delta(1, "hal")).ops[..],
        [ItemOp::Upsert { .. }]
    ));
    // The text's append, then its rendered tail replacing the one block there was.
    assert!(matches!(
        &fold.apply(&delta(2, "f\n\nnext *part")).ops[..],
        [ItemOp::Append { item_id, .. }, ItemOp::Blocks { from: 0, blocks, .. }]
            if item_id == "t1s1" && blocks.len() == 2 && blocks[0] == "<p>half</p>\n"
    ));
    assert!(matches!(
        &fold.apply(&delta(3, "*")).ops[..],
        [ItemOp::Append { .. }, ItemOp::Blocks { from: 1, blocks, .. }]
            if blocks[..] == ["<p>next <em>part</em></p>\n"]
    ));
    let failed = serde_json::json!({"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "error", "failure": {"message": "cut", "code": "STREAM_CLOSED"}}}});
    fold.apply(&record(4, "assistant/chunk", failed));
    let restarted = fold.apply(&delta(5, "whole"));
    let [ItemOp::Upsert { item }] = &restarted.ops[..] else {
        panic!("{restarted:?}");
    };
    assert!(matches!(item, ChatItem::Assistant { text, .. } if text == "whole"));
    // Cancelled before its message: the turn end closes the item, cut short.
    let end = fold.apply(&record(
        6,
        "turn/end",
        serde_json::json!({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}),
    ));
    assert_eq!(end.running, Some(false));
    assert!(matches!(
        &fold.items()[0],
        ChatItem::Assistant { streaming: false, interrupted: true, text, .. } if text == "whole"
    ));
    assert_eq!(fold.items().len(), 2);
}

#[test]
fn a_long_paragraph_streams_as_appends_alone_until_a_block_settles() {
    let mut fold = Fold::default();
    fold.apply(&record(0, "turn/start", serde_json::json!({"turn": 1})));
    fold.apply(&delta(1, "start"));
    let long = "z".repeat(dsh_web_core::TAIL_LIMIT);
    // Past the limit the tail is not rendered again: each frame carries its own text only.
    for seq in 2..5 {
        let change = fold.apply(&delta(seq, &long));
        assert!(
            matches!(&change.ops[..], [ItemOp::Append { text, .. }] if text.len() == long.len()),
            "{change:?}"
        );
    }
    // A blank line settles the paragraph (rendered once) and the short tail is rendered.
    let settled = fold.apply(&delta(5, "\n\nnext"));
    assert!(matches!(
        &settled.ops[..],
        [ItemOp::Append { .. }, ItemOp::Blocks { from: 0, blocks, .. }]
            if blocks.len() == 2 && blocks[1] == "<p>next</p>\n"
    ));
}

#[test]
fn the_retries_of_one_step_fold_into_one_line_in_words() {
    let mut fold = Fold::default();
    for (seq, retry) in [(1, 1), (2, 2)] {
        fold.apply(&record(
            seq,
            kinds::LLM_RETRY,
            serde_json::json!({
                "retryId": format!("r{retry}"), "turn": 1, "step": 1,
                "provider": "deepseek-official", "mode": "normal", "policyKey": "p",
                "retry": retry, "maxRetries": 5, "delayMs": 1500,
                "failure": {"message": "error sending request", "code": "TRANSPORT"}
            }),
        ));
    }
    let notices: Vec<&str> = fold
        .items()
        .iter()
        .filter_map(|item| match item {
            ChatItem::Notice { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("could not be reached") && notices[0].contains("attempt 2 of 5"),
        "{}",
        notices[0]
    );
}

#[test]
fn a_failed_call_keeps_its_reason_and_no_exit_code_it_never_had() {
    let mut fold = Fold::default();
    let arguments = serde_json::json!({"command": "rm -rf build", "description": "clean"});
    fold.apply(&record(
        1,
        kinds::TOOL_CALL,
        serde_json::json!({"turn": 1, "step": 1, "callId": "c1", "name": "bash",
            "arguments": arguments.to_string()}),
    ));
    fold.apply(&record(
        2,
        kinds::TOOL_RESULT,
        serde_json::json!({"turn": 1, "step": 1, "message": {
            "id": "m", "role": "user", "source": {"kind": "tool", "callId": "c1"},
            "content": [{"type": "tool-result", "toolCallId": "c1", "isError": true,
                "content": [{"type": "text", "text": "The user rejected this call."}]}]}}),
    ));
    let Some(ChatItem::Tool {
        status,
        error,
        view,
        ..
    }) = fold.items().first()
    else {
        panic!("a tool card");
    };
    assert_eq!(*status, ToolStatus::Error);
    assert_eq!(error.as_deref(), Some("The user rejected this call."));
    assert!(
        matches!(
            view,
            ToolView::Terminal {
                exit_code: None,
                ..
            }
        ),
        "{view:?}"
    );
}

/// A step's start and a message whose items come with their own events change only the tally:
/// it rides with the next change that says anything else, so no frame carries a tally alone.
#[test]
fn a_tally_alone_waits_for_the_next_change_that_says_something() {
    let mut fold = Fold::default();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../demo/session.jsonl");
    let (mut steps, mut carried) = (0, Vec::new());
    for record in records(path) {
        steps += u64::from(record.kind.as_str() == kinds::STEP_START);
        let change = fold.apply(&record);
        let speaks = !change.ops.is_empty() || change.running.is_some() || change.title.is_some();
        if let Some(stats) = change.stats {
            assert!(speaks, "a tally alone at seq {}", record.seq);
            carried.push(stats.steps);
        }
    }
    assert!(steps >= 2, "the demo has a tool step and an answer step");
    assert_eq!(
        carried.last(),
        Some(&steps),
        "the turn's end carries every step"
    );
    assert!(
        fold.take_held_stats().is_none(),
        "nothing is left held after the end"
    );
    // Held, then taken by the next change that speaks.
    let mut fold = Fold::default();
    fold.apply(&record(0, "turn/start", serde_json::json!({"turn": 1})));
    let started = fold.apply(&record(
        1,
        "step/start",
        serde_json::json!({"turn": 1, "step": 1}),
    ));
    assert_eq!(started, Change::default());
    let first = fold.apply(&delta(2, "hi"));
    assert_eq!(first.stats.map(|stats| stats.steps), Some(1));
}

/// A call that took no time leaves the tally as its call's frame carried it: the result's
/// frame does not carry it again; a result that took time does, and so does a quiet fold
/// once it speaks.
#[test]
fn a_tally_equal_to_the_last_one_sent_is_not_sent_again() {
    let call = |seq, id: &str| {
        record(
            seq,
            kinds::TOOL_CALL,
            serde_json::json!({"turn": 1, "step": 1, "callId": id, "name": "noop", "arguments": "{}"}),
        )
    };
    let result = |seq, id: &str, time| {
        let mut record = record(
            seq,
            kinds::TOOL_RESULT,
            serde_json::json!({"turn": 1, "step": 1, "message": {
                "id": "m", "role": "user", "source": {"kind": "tool", "callId": id},
                "content": [{"type": "tool-result", "toolCallId": id, "isError": false,
                    "content": [{"type": "text", "text": "ok"}]}]}}),
        );
        record.time = time;
        record
    };
    let mut fold = Fold::default();
    fold.apply(&record(0, "turn/start", serde_json::json!({"turn": 1})));
    fold.apply(&record(
        1,
        "step/start",
        serde_json::json!({"turn": 1, "step": 1}),
    ));
    let called = fold.apply(&call(2, "c1"));
    assert_eq!(called.stats.map(|stats| stats.steps), Some(1));
    let instant = fold.apply(&result(3, "c1", 0));
    assert_eq!(instant.ops.len(), 1, "the card's update still goes");
    assert_eq!(instant.stats, None, "the same tally again");
    fold.apply(&call(4, "c2"));
    let timed = fold.apply(&result(5, "c2", 7));
    assert_eq!(timed.stats.map(|stats| stats.tool_ms), Some(7));
    // A quiet fold sends nothing, so the first tally it says once it speaks goes.
    let records = [
        record(0, "turn/start", serde_json::json!({"turn": 1})),
        record(1, "step/start", serde_json::json!({"turn": 1, "step": 1})),
        call(2, "c1"),
        result(3, "c1", 0),
    ];
    let mut replay = Fold::quiet();
    for record in &records[..3] {
        replay.apply(record);
    }
    replay.speak();
    let spoken = replay.apply(&records[3]);
    assert_eq!(spoken.stats.map(|stats| stats.steps), Some(1));
}

/// A goal round's message is the goal's, not the person's: it shows as a line naming the round;
/// other injected context shows nothing.
#[test]
fn a_goal_round_shows_as_a_line_and_injected_context_not_at_all() {
    let round = dsh_protocol::GoalRoundSource {
        goal_id: "g".to_owned(),
        revision: 1,
        round: 3,
    };
    let message = |source| {
        dsh_protocol::Message::user(
            "",
            vec![dsh_protocol::ContentBlock::text(
                "<goal_round>...</goal_round>",
            )],
            source,
        )
    };
    let mut fold = Fold::default();
    let change = fold.apply(&record(
        0,
        "user/message",
        serde_json::to_value(message(round.to_source())).unwrap(),
    ));
    let [ItemOp::Upsert { item }] = &change.ops[..] else {
        panic!("{change:?}");
    };
    let ChatItem::Notice { text, .. } = item else {
        panic!("a notice: {item:?}");
    };
    assert_eq!(text, "Goal round 3: working towards the goal");
    let injected = fold.apply(&record(
        1,
        "user/message",
        serde_json::to_value(message(dsh_protocol::MessageSource::Plugin(
            Default::default(),
        )))
        .unwrap(),
    ));
    assert!(injected.ops.is_empty(), "{injected:?}");
}
