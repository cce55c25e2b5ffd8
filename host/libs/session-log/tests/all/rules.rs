//! The rules an event must pass to enter the log, on append and on load.

use std::sync::Arc;

use dsh_session_log::{
    LoadError, LosslessError, NewEvent, SessionEvent, SessionLog, SurfaceOp, TypeRegistry,
    TypeRequirement, Violation,
};
use serde_json::json;

use crate::common::*;

fn violation(log: &mut SessionLog, e: NewEvent) -> Violation {
    let before = (log.len(), log.surface_nodes().to_vec(), log.derived_hash());
    let err = log.append(e).expect_err("append must be refused");
    // A refused append leaves everything as it was.
    assert_eq!(
        before,
        (log.len(), log.surface_nodes().to_vec(), log.derived_hash())
    );
    err.violation
}

fn owned(log: &SessionLog) -> Vec<SessionEvent> {
    log.events().iter().map(|e| (**e).clone()).collect()
}

#[test]
fn append_assigns_contiguous_seqs_and_shares_committed_events() {
    let mut b = B::new();
    assert_eq!(b.turn_start(1), 0);
    assert_eq!(b.user("u1", "hi"), 1);
    let committed = b
        .log
        .append(NewEvent::new("step/start", json!({"turn":1,"step":1}), 5))
        .unwrap();
    assert_eq!((committed.seq, committed.time), (2, 5));
    assert!(
        Arc::ptr_eq(&committed, &b.log.events()[2]),
        "readers get the committed Arc"
    );
    assert_eq!(b.log.next_seq(), 3);
    assert!(Arc::ptr_eq(b.log.get(2).unwrap(), &committed));
}

#[test]
fn append_refuses_an_event_pinned_to_another_seq() {
    let mut b = B::new();
    b.turn_start(1);
    let v = violation(
        &mut b.log,
        NewEvent::new("turn/end", json!({}), 0).at_seq(5),
    );
    assert_eq!(v, Violation::SeqMismatch { expected: 1 });
    let err = b
        .log
        .append(NewEvent::new("turn/end", json!({}), 0).at_seq(5))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot append \"turn/end\" at seq 5: seq is not contiguous: expected 1"
    );
}

#[test]
fn only_surface_types_carry_surface_op_and_they_must() {
    let mut log = SessionLog::default();
    let v = violation(
        &mut log,
        NewEvent::surface("turn/start", json!({"turn":1}), SurfaceOp::append(), 0),
    );
    assert_eq!(
        v,
        Violation::SurfaceOpNotAllowed {
            kind: "turn/start".into()
        }
    );
    let v = violation(
        &mut log,
        NewEvent::new("tool/call", json!({}), 0).with_sources(vec![]),
    );
    assert_eq!(
        v,
        Violation::SourcesNotAllowed {
            kind: "tool/call".into()
        }
    );
    for kind in ["user/message", "assistant/message", "tool/result"] {
        let v = violation(&mut log, NewEvent::new(kind, user_data("u", "x"), 0));
        assert_eq!(v, Violation::SurfaceOpMissing { kind: kind.into() });
    }
}

#[test]
fn replace_must_name_nodes_currently_on_the_surface_in_order() {
    let mut b = B::new();
    let u0 = b.user("u0", "a");
    let u1 = b.user("u1", "b");
    let u2 = b.user("u2", "c");
    let replace = summary;
    assert_eq!(
        violation(&mut b.log, replace(99, u1, vec![u1])),
        Violation::ReplaceNotOnSurface {
            which: "start",
            seq: 99
        }
    );
    assert_eq!(
        violation(&mut b.log, replace(u0, 98, vec![u0])),
        Violation::ReplaceNotOnSurface {
            which: "end",
            seq: 98
        }
    );
    assert!(matches!(
        violation(&mut b.log, replace(u2, u0, vec![u0, u1, u2])),
        Violation::ReplaceReversed {
            start_pos: 2,
            end_pos: 0,
            ..
        }
    ));
    // Shadowed nodes leave the surface: they cannot be replaced again.
    b.push(replace(u0, u1, vec![u0, u1]));
    assert_eq!(
        violation(&mut b.log, replace(u0, u0, vec![u0])),
        Violation::ReplaceNotOnSurface {
            which: "start",
            seq: u0
        }
    );
    // A seq that is not a surface node (a log-only event) is refused too.
    let ts = b.turn_start(1);
    assert_eq!(
        violation(&mut b.log, replace(ts, ts, vec![ts])),
        Violation::ReplaceNotOnSurface {
            which: "start",
            seq: ts
        }
    );
}

#[test]
fn replace_must_cite_every_shadowed_node() {
    let mut b = B::new();
    let u0 = b.user("u0", "a");
    let u1 = b.user("u1", "b");
    let e = NewEvent::surface(
        "user/message",
        user_data("s", "x"),
        SurfaceOp::replace(u0, u1),
        0,
    )
    .with_sources(vec![u0]);
    assert_eq!(
        violation(&mut b.log, e),
        Violation::ReplaceMissingSources { missing: vec![u1] }
    );
    let e = NewEvent::surface(
        "user/message",
        user_data("s", "x"),
        SurfaceOp::replace(u0, u1),
        0,
    );
    assert_eq!(
        violation(&mut b.log, e),
        Violation::ReplaceMissingSources {
            missing: vec![u0, u1]
        }
    );
}

#[test]
fn sources_cite_earlier_events_once_and_only_assistant_may_cite_none() {
    let mut b = B::new();
    let u0 = b.user("u0", "a");
    let user = |sources| {
        NewEvent::surface("user/message", user_data("u", "x"), SurfaceOp::append(), 0)
            .with_sources(sources)
    };
    assert_eq!(
        violation(&mut b.log, user(vec![1])),
        Violation::SourceNotEarlier { source_seq: 1 }
    );
    assert_eq!(
        violation(&mut b.log, user(vec![u0, u0])),
        Violation::DuplicateSource { source_seq: u0 }
    );
    assert_eq!(violation(&mut b.log, user(vec![])), Violation::EmptySources);
    // `[]` on an assistant message means "the provider stream was known to be empty".
    b.push(
        NewEvent::surface(
            "assistant/message",
            assistant_data(1, 1, json!([])),
            SurfaceOp::append(),
            0,
        )
        .with_sources(vec![]),
    );
}

#[test]
fn tool_result_replace_rewrites_one_result_and_only_its_content() {
    let mut b = B::new();
    b.turn_start(1);
    b.step_start(1, 1);
    b.assistant(1, 1, json!([call_block("c1"), call_block("c2")]));
    let call = b.tool_call(1, 1, "c1");
    let r1 = b.tool_result(1, 1, "c1", call);
    let call2 = b.tool_call(1, 1, "c2");
    let r2 = b.tool_result(1, 1, "c2", call2);
    let rewrite = |data, s, e, sources| {
        NewEvent::surface("tool/result", data, SurfaceOp::replace(s, e), 0).with_sources(sources)
    };
    let spilled = tool_result_data(1, 1, "c1", "output saved to /tmp/x");
    assert!(matches!(
        violation(&mut b.log, rewrite(spilled.clone(), r1, r2, vec![r1, r2])),
        Violation::ToolResultRewrite {
            reason: "must rewrite exactly one surface node"
        }
    ));
    let mut other_id = spilled.clone();
    other_id["message"]["id"] = json!("changed");
    assert!(matches!(
        violation(&mut b.log, rewrite(other_id, r1, r1, vec![r1])),
        Violation::ToolResultRewrite {
            reason: "may change only the result content"
        }
    ));
    let seq = b.push(rewrite(spilled, r1, r1, vec![r1]));
    assert_eq!(
        b.log.surface_nodes()[1],
        seq,
        "the rewrite takes the result's position"
    );
    assert_eq!(b.log.replace_generation(), 1);
    // A user message cannot be "rewritten" as a tool result.
    let u = b.user("u", "x");
    assert!(matches!(
        violation(
            &mut b.log,
            rewrite(tool_result_data(1, 1, "c1", "y"), u, u, vec![u])
        ),
        Violation::ToolResultRewrite {
            reason: "must target a current tool/result"
        }
    ));
}

#[test]
fn data_must_be_lossless_and_errors_name_the_path() {
    let mut log = SessionLog::default();
    let data = json!({"items": [0, 1, 2, {"id": 9_007_199_254_740_993_u64}]});
    let err = log
        .append(NewEvent::new("todo/write", data, 0))
        .unwrap_err();
    assert_eq!(
        err.violation,
        Violation::Lossless(LosslessError::IntegerOutOfRange {
            path: "$.data.items[3].id".into(),
            value: "9007199254740993".into()
        })
    );
    assert!(err.to_string().contains("$.data.items[3].id"), "{err}");
    assert!(matches!(
        violation(&mut log, NewEvent::new("todo/write", json!({"x": -0.0}), 0)),
        Violation::Lossless(LosslessError::NegativeZero { .. })
    ));
    assert_eq!(
        violation(&mut log, NewEvent::new("todo/write", json!({}), i64::MAX)),
        Violation::TimeOutOfRange { time: i64::MAX }
    );
}

#[test]
fn a_prechecked_load_reports_what_a_plain_load_reports() {
    let event = |seq: u64, kind: &str, data: serde_json::Value| {
        NewEvent::new(kind, data, 0).into_event(seq, None)
    };
    let huge = json!({"n": 9_007_199_254_740_993_u64});
    let cases = [
        // Sound.
        (
            vec![event(0, "todo/write", json!({"a": [1, 2.5]}))],
            "loaded",
        ),
        // The lossless violation, found in its place.
        (
            vec![
                event(0, "todo/write", json!({})),
                event(1, "todo/write", huge.clone()),
            ],
            "$.data.n",
        ),
        // An earlier rule fails first on the same event: that one is said.
        (vec![event(0, "no/such-type", huge.clone())], "no/such-type"),
        // A seq out of place before the bad data.
        (vec![event(5, "todo/write", huge)], "expected 0"),
        // A message event of the wrong shape.
        (
            vec![SessionEvent {
                surface_op: Some(SurfaceOp::append()),
                ..event(0, "user/message", json!({"role": 5}))
            }],
            "$.data.id must be",
        ),
    ];
    for (events, says) in cases {
        let outcome = |loaded: Result<SessionLog, LoadError>| match loaded {
            Ok(_) => "loaded".to_owned(),
            Err(error) => error.to_string(),
        };
        let plain = outcome(SessionLog::from_events(
            events.clone(),
            Arc::new(TypeRegistry::new()),
        ));
        let prechecked = outcome(SessionLog::from_prechecked(
            events
                .into_iter()
                .map(dsh_session_log::Prechecked::new)
                .collect(),
            Arc::new(TypeRegistry::new()),
        ));
        assert_eq!(plain, prechecked);
        assert!(plain.contains(says), "{plain} should say {says}");
    }
}

#[test]
fn unknown_types_are_refused_on_append_naming_the_type() {
    let mut log = SessionLog::default();
    let err = log
        .append(NewEvent::new("steering/message", json!({}), 0))
        .unwrap_err();
    assert_eq!(
        err.violation,
        Violation::UnknownType {
            kind: "steering/message".into()
        }
    );
    assert!(err.to_string().contains("\"steering/message\""));
}

#[test]
fn plugin_types_are_marked_ignorable_unless_registered_required() {
    let mut reg = TypeRegistry::new();
    reg.register_ignorable("demo/note").unwrap();
    reg.register("demo/state", TypeRequirement::Required)
        .unwrap();
    let mut log = SessionLog::new(Arc::new(reg));
    let note = log
        .append(NewEvent::new("demo/note", json!({"n": 1}), 0))
        .unwrap();
    let state = log
        .append(NewEvent::new("demo/state", json!({}), 0))
        .unwrap();
    let builtin = log
        .append(NewEvent::new("plan/mode", json!({"active": true}), 0))
        .unwrap();
    assert_eq!(note.ignorable, Some(true));
    assert_eq!(state.ignorable, None);
    assert_eq!(builtin.ignorable, None);
    // A reader without the plugin keeps the ignorable event and skips it; the required one
    // refuses the load, naming type and seq.
    let events = owned(&log);
    let err = SessionLog::from_events(events.clone(), registry()).unwrap_err();
    assert_eq!(
        (err.position, err.seq, err.kind.as_str()),
        (1, 1, "demo/state")
    );
    assert!(
        err.to_string()
            .contains("unknown event type \"demo/state\""),
        "{err}"
    );
    let without_state: Vec<_> = [
        events[0].clone(),
        SessionEvent {
            seq: 1,
            ..events[2].clone()
        },
    ]
    .into();
    let loaded = SessionLog::from_events(without_state, registry()).unwrap();
    assert_eq!(loaded.len(), 2);
    let readable: Vec<_> = loaded.readable_events().map(|e| e.kind.as_str()).collect();
    assert_eq!(readable, ["plan/mode"]);
}

#[test]
fn message_shapes_are_checked_on_append() {
    let mut log = SessionLog::default();
    let mut data = user_data("u", "x");
    data["role"] = json!("system");
    let v = violation(
        &mut log,
        NewEvent::surface("user/message", data, SurfaceOp::append(), 0),
    );
    assert!(
        matches!(v, Violation::MessageShape { ref path, .. } if path == "$.data.role"),
        "{v:?}"
    );
}

#[test]
fn load_names_the_first_bad_seq() {
    let mut b = B::new();
    for t in 1..=3 {
        b.turn_start(t);
        b.turn_end(t, "completed");
    }
    let mut events = owned(&b.log);
    events.remove(3);
    let err: LoadError = SessionLog::from_events(events, registry()).unwrap_err();
    assert_eq!((err.position, err.seq), (3, 4));
    assert_eq!(err.violation, Violation::SeqMismatch { expected: 3 });
    assert_eq!(
        err.to_string(),
        "cannot load session log: event #3 (seq 4, type \"turn/start\"): seq is not contiguous: expected 3"
    );
    let mut events = owned(&b.log);
    events[0].seq = 1;
    assert_eq!(
        SessionLog::from_events(events, registry())
            .unwrap_err()
            .position,
        0
    );
}

#[test]
fn load_applies_envelope_and_surface_rules() {
    let mut b = B::new();
    b.turn_start(1);
    b.user("u", "x");
    let events = owned(&b.log);
    let mut bad = events.clone();
    bad[0].surface_op = Some(SurfaceOp::append());
    let err = SessionLog::from_events(bad, registry()).unwrap_err();
    assert_eq!(
        err.violation,
        Violation::SurfaceOpNotAllowed {
            kind: "turn/start".into()
        }
    );
    let mut bad = events.clone();
    bad[1].surface_op = None;
    assert!(SessionLog::from_events(bad, registry()).is_err());
    let mut bad = events.clone();
    bad[0].ignorable = Some(false);
    assert_eq!(
        SessionLog::from_events(bad, registry())
            .unwrap_err()
            .violation,
        Violation::IgnorableFalse
    );
    // Known types may carry `ignorable: true`; the marker is kept as written.
    let mut marked = events;
    marked[0].ignorable = Some(true);
    let loaded = SessionLog::from_events(marked.clone(), registry()).unwrap();
    assert_eq!(owned(&loaded), marked);
}
