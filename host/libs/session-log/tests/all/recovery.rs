//! Crash-repair closers and `check_log`.

use dsh_session_log::{
    NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT, Rule, SessionEvent, SessionLog, Severity, SurfaceOp,
    TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, check_log, interrupted_turn_closers,
};
use serde_json::json;

use crate::common::*;

fn owned(log: &SessionLog) -> Vec<SessionEvent> {
    log.events().iter().map(|e| (**e).clone()).collect()
}

#[test]
fn balanced_or_empty_logs_need_no_closers() {
    assert!(interrupted_turn_closers(&SessionLog::default()).is_empty());
    let mut b = B::new();
    b.turn_start(1);
    b.turn_end(1, "completed");
    b.user("u", "between turns");
    assert!(interrupted_turn_closers(&b.log).is_empty());
}

#[test]
fn closers_answer_pending_calls_in_transcript_order_then_close_step_and_turn() {
    let mut b = B::new();
    b.turn_start(3);
    b.step_start(3, 1);
    b.assistant(
        3,
        1,
        json!([
            call_block("done"),
            call_block("started"),
            call_block("never")
        ]),
    );
    let c_done = b.tool_call(3, 1, "done");
    b.tool_result(3, 1, "done", c_done);
    let c_started = b.tool_call(3, 1, "started");
    let last_time = b.time;
    let closers = interrupted_turn_closers(&b.log);
    let kinds: Vec<_> = closers.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["tool/result", "tool/result", "step/end", "turn/end"]
    );
    let first = b.log.next_seq();
    for (i, c) in closers.iter().enumerate() {
        assert_eq!(c.expected_seq, Some(first + i as u64), "seqs continue");
        assert_eq!(c.time, last_time, "time is the last event's time");
    }

    let unknown = &closers[0];
    assert_eq!(unknown.surface_op, Some(SurfaceOp::append()));
    assert_eq!(unknown.source_event_seqs, Some(vec![c_started]));
    assert_eq!(unknown.data["turn"], 3);
    assert_eq!(unknown.data["step"], 1);
    assert_eq!(
        unknown.data["error"],
        json!({"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN})
    );
    let msg = &unknown.data["message"];
    assert_eq!(
        msg["id"],
        format!("interrupted-tool-result-started-{first}")
    );
    assert_eq!(msg["role"], "user");
    assert_eq!(msg["source"], json!({"kind": "tool", "callId": "started"}));
    assert_eq!(
        msg["content"],
        json!([{"type": "tool-result", "toolCallId": "started", "isError": true,
                "content": [{"type": "text", "text": OUTCOME_UNKNOWN_TEXT}]}])
    );

    let never = &closers[1];
    assert_eq!(
        never.source_event_seqs, None,
        "nothing to cite: no tool/call was logged"
    );
    assert_eq!(
        never.data["error"],
        json!({"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED})
    );
    assert_eq!(
        never.data["message"]["id"],
        format!("interrupted-tool-result-never-{}", first + 1)
    );
    assert_eq!(
        never.data["message"]["content"][0]["content"][0]["text"],
        NOT_STARTED_TEXT
    );

    assert_eq!(closers[2].data, json!({"turn": 3, "step": 1}));
    assert_eq!(
        closers[3].data,
        json!({"turn": 3, "reason": {"kind": "interrupted"}})
    );

    // They append cleanly, and afterwards the log checks clean and needs nothing more.
    let committed = b.log.repair_interrupted().unwrap();
    assert_eq!(committed.len(), 4);
    assert!(interrupted_turn_closers(&b.log).is_empty());
    assert_eq!(b.log.open_turn(), None);
    assert!(check_log(b.log.events(), b.log.registry()).is_empty());
    // The model sees an answer for every call.
    assert_eq!(b.log.derive_messages().len(), 4);
}

#[test]
fn a_turn_without_an_open_step_gets_only_turn_end() {
    let mut b = B::new();
    b.turn_start(1);
    b.user("u", "x");
    let closers = interrupted_turn_closers(&b.log);
    assert_eq!(closers.len(), 1);
    assert_eq!(closers[0].kind, "turn/end");
}

#[test]
fn calls_of_a_closed_step_are_not_answered_again() {
    let mut b = B::new();
    b.turn_start(1);
    b.step_start(1, 1);
    b.assistant(1, 1, json!([call_block("old")]));
    b.step_end(1, 1);
    b.step_start(1, 2);
    let closers = interrupted_turn_closers(&b.log);
    let kinds: Vec<_> = closers.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, ["step/end", "turn/end"]);
    assert_eq!(closers[0].data["step"], 2);
}

#[test]
fn crash_repair_never_closes_compaction() {
    let mut b = B::new();
    b.turn_start(1);
    b.step_start(1, 1);
    b.plain("compaction/start", json!({"compactionId": "c", "turn": 1}));
    let closers = interrupted_turn_closers(&b.log);
    assert!(closers.iter().all(|c| !c.kind.starts_with("compaction/")));
    assert_eq!(closers.len(), 2);
}

#[test]
fn check_reports_an_open_turn_as_repairable_with_the_closers() {
    let mut b = B::new();
    let start = b.turn_start(1);
    b.step_start(1, 1);
    b.assistant(1, 1, json!([call_block("c")]));
    let problems = check_log(b.log.events(), b.log.registry());
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert_eq!(
        (p.rule, p.severity, p.seq),
        (Rule::OpenTurnAtEnd, Severity::Repairable, start)
    );
    assert!(p.detail.contains("3 closer(s)"), "{}", p.detail);
    assert!(
        p.detail.contains("TOOL_NOT_STARTED for call c"),
        "{}",
        p.detail
    );
}

fn rules_of(events: &[SessionEvent]) -> Vec<(u64, Rule)> {
    check_log(events, &dsh_session_log::TypeRegistry::new())
        .iter()
        .map(|p| (p.seq, p.rule))
        .collect()
}

fn balanced() -> Vec<SessionEvent> {
    let mut b = B::new();
    b.turn_start(1);
    b.user("u", "x");
    b.step_start(1, 1);
    b.plain(
        "assistant/chunk",
        json!({"turn": 1, "step": 1, "chunk": {"type": "finish"}}),
    );
    b.assistant(1, 1, json!([text("ok")]));
    b.step_end(1, 1);
    b.turn_end(1, "completed");
    owned(&b.log)
}

#[test]
fn check_is_clean_for_a_balanced_log() {
    assert_eq!(rules_of(&balanced()), []);
}

#[test]
fn check_reports_a_seq_gap_once_and_keeps_checking() {
    let mut events = balanced();
    events.remove(1);
    events[2].surface_op = Some(SurfaceOp::append());
    let found = rules_of(&events);
    assert_eq!(found, [(2, Rule::SeqContiguity), (3, Rule::Surface)]);
}

#[test]
fn check_reports_bracketing_problems_naming_seq_and_rule() {
    let mut events = balanced();
    // Nested turn: a second turn/start before the first ended.
    events[2] = SessionEvent {
        kind: "turn/start".into(),
        data: json!({"turn": 2}),
        ..events[2].clone()
    };
    let problems = check_log(&events, &dsh_session_log::TypeRegistry::new());
    let first = &problems[0];
    assert_eq!((first.seq, first.rule), (2, Rule::TurnBracketing));
    assert_eq!(
        first.to_string(),
        "seq 2 (turn/start) [turn-bracketing]: turn/start for turn 2 while turn 1 is open (seq 0)"
    );

    let mut events = balanced();
    events.swap(2, 5);
    events[2].seq = 2;
    events[5].seq = 5;
    let found = rules_of(&events);
    assert!(found.contains(&(2, Rule::StepBracketing)), "{found:?}");
    assert!(
        found.contains(&(3, Rule::Placement)),
        "chunk outside a step: {found:?}"
    );

    let mut events = balanced();
    events.remove(5);
    events[5].seq = 5;
    assert_eq!(
        rules_of(&events),
        [(5, Rule::StepBracketing)],
        "turn/end with a step open"
    );

    let mut events = balanced();
    events[6].data["turn"] = json!(9);
    assert_eq!(rules_of(&events), [(6, Rule::TurnBracketing)]);

    let mut events = balanced();
    events[4].data["step"] = json!(2);
    assert_eq!(rules_of(&events), [(4, Rule::Placement)]);

    // A turn/end's reason must carry a string kind; anything else is named, not skipped.
    for reason in [
        json!(null),
        json!("completed"),
        json!({"kind": 1}),
        json!({}),
    ] {
        let mut events = balanced();
        events[6].data["reason"] = reason.clone();
        let problems = check_log(&events, &dsh_session_log::TypeRegistry::new());
        let found: Vec<(u64, Rule, &str)> = problems
            .iter()
            .map(|p| (p.seq, p.rule, p.detail.as_str()))
            .collect();
        assert_eq!(
            found,
            [(6, Rule::TurnBracketing, "turn/end needs reason.kind")],
            "{reason}"
        );
    }
}

#[test]
fn check_reports_unknown_types_lossless_and_shape_problems() {
    let mut events = balanced();
    events[1].data["content"][0]["text"] = json!(-0.0);
    events[3].kind = "future/thing".into();
    events[4].data["message"]["id"] = json!("");
    let found = rules_of(&events);
    assert_eq!(
        found,
        [
            (1, Rule::Lossless),
            (3, Rule::UnknownType),
            (4, Rule::MessageShape)
        ]
    );
    // Ignorable unknown events are skipped, not reported.
    events[1] = balanced()[1].clone();
    events[4] = balanced()[4].clone();
    events[3].ignorable = Some(true);
    assert_eq!(rules_of(&events), []);
}
