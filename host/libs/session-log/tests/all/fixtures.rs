//! The recorded reference logs are the conformance corpus: every one must load, check clean and
//! derive the history the projection rules predict.

use std::path::Path;
use std::sync::Arc;

use dsh_session_log::{
    KNOWN_EVENT_TYPES, Role, SessionEvent, SessionLog, check_log, interrupted_turn_closers,
    messages_hash,
};
use serde_json::Value;

use crate::common::*;

/// REFERENCE §10: replay scripts, not durable logs (no delegationDepth, chunks outside turns).
fn is_replay_script(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "ralph-loop")
}

/// The surface computed the slow, obvious way: an independent model of the rules.
fn naive_surface(events: &[SessionEvent]) -> Vec<u64> {
    let mut nodes: Vec<u64> = Vec::new();
    for e in events {
        match e.surface_op.as_ref().map(|op| op.replace_span()) {
            None => {}
            Some(None) => nodes.push(e.seq),
            Some(Some((start, end))) => {
                let s = nodes.iter().position(|n| *n == start).unwrap();
                let t = nodes.iter().position(|n| *n == end).unwrap();
                nodes.splice(s..=t, [e.seq]);
            }
        }
    }
    nodes
}

fn is_empty_assistant(e: &SessionEvent) -> bool {
    e.kind == "assistant/message"
        && e.data["message"]["content"]
            .as_array()
            .is_some_and(Vec::is_empty)
}

#[test]
fn every_recorded_log_loads_checks_clean_and_derives_by_the_rules() {
    dsh_test_corpus::needs_corpus!(
        "every_recorded_log_loads_checks_clean_and_derives_by_the_rules"
    );
    let logs = fixture_logs();
    assert!(
        logs.len() > 100,
        "fixture corpus missing under {}",
        fixture_root().display()
    );
    let mut checked = 0;
    let mut types_seen = std::collections::BTreeSet::new();
    for path in &logs {
        let name = path
            .strip_prefix(fixture_root())
            .unwrap_or(path)
            .display()
            .to_string();
        if is_replay_script(path) {
            println!(
                "skip {name}: replay script read by the replay adapter, not a durable log (REFERENCE §10)"
            );
            continue;
        }
        let (header, events) = read_fixture(path);
        assert_eq!(header["type"], "session", "{name}");
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.seq, i as u64, "{name}: seqs are contiguous from 0");
            types_seen.insert(e.kind.clone());
        }
        let log = SessionLog::from_events(events.clone(), registry())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let problems = check_log(&events, log.registry());
        assert!(problems.is_empty(), "{name}: {problems:#?}");
        assert!(
            interrupted_turn_closers(&log).is_empty(),
            "{name}: recorded logs are balanced"
        );

        // Surface: incremental equals the obvious model.
        let nodes = naive_surface(&events);
        assert_eq!(log.surface_nodes(), nodes.as_slice(), "{name}");
        // Projection: one message per non-shadowed surface event minus empty assistant messages.
        let derived = log.derive_messages();
        let expected: Vec<&SessionEvent> = nodes
            .iter()
            .map(|s| &events[*s as usize])
            .filter(|e| !is_empty_assistant(e))
            .collect();
        assert_eq!(derived.len(), expected.len(), "{name}");
        for (m, e) in derived.iter().zip(&expected) {
            assert_eq!(m.seq(), e.seq, "{name}");
            let (role, logged) = match e.kind.as_str() {
                "user/message" => (Role::User, &e.data),
                "assistant/message" => (Role::Assistant, &e.data["message"]),
                "tool/result" => (Role::User, &e.data["message"]),
                other => panic!("{name}: {other} on the surface"),
            };
            assert_eq!(m.role(), role, "{name} seq {}", e.seq);
            assert_eq!(
                m.content(),
                logged["content"].as_array().unwrap().as_slice(),
                "exact content"
            );
            assert_eq!(m.source(), &logged["source"], "{name}: provenance");
        }
        let values: Vec<Value> = derived.to_values();
        assert_eq!(log.derived_hash(), messages_hash(&values), "{name}");

        // The envelope round-trips: each event serializes back to the line it was read from.
        let lines: Vec<Value> = events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        let reread: Vec<SessionEvent> = lines
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect();
        assert_eq!(reread, events, "{name}");
        checked += 1;
    }
    assert!(checked >= 100, "checked only {checked}");
    for kind in &types_seen {
        assert!(
            KNOWN_EVENT_TYPES.contains(&kind.as_str()),
            "fixture type {kind} missing from the list"
        );
    }
    println!(
        "checked {checked} logs, {} distinct event types",
        types_seen.len()
    );
}

#[test]
fn recorded_crash_recovery_is_reproduced_byte_for_byte() {
    dsh_test_corpus::needs_corpus!("recorded_crash_recovery_is_reproduced_byte_for_byte");
    // The reference crashed after logging tool/call seq 4; on resume it wrote the closers at 5..=7
    // and the end-seed at 8, all with the last event's time (normalized to 0 in the fixture).
    let path = fixture_root()
        .join("headless/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl");
    let (_, events) = read_fixture(&path);
    let stored: Vec<SessionEvent> = events[..5].to_vec();
    let (resumed, repaired) = SessionLog::resume_cold(stored, registry(), 0).unwrap();
    assert_eq!(repaired, 3);
    let got: Vec<SessionEvent> = resumed.events().iter().map(|e| (**e).clone()).collect();
    assert_eq!(got, events[..9].to_vec());
    // And a resume of the already repaired prefix appends nothing.
    let again = SessionLog::resume_cold(got.clone(), registry(), 0).unwrap();
    assert_eq!((again.0.len(), again.1), (9, 0));
}

#[test]
fn recorded_compaction_replaces_by_seq_and_keeps_raw_events() {
    dsh_test_corpus::needs_corpus!("recorded_compaction_replaces_by_seq_and_keeps_raw_events");
    let path = fixture_root().join("headless/snapshots/compaction-recovery/session.jsonl");
    let (_, events) = read_fixture(&path);
    let log = SessionLog::from_events(events.iter().cloned().map(Arc::new), registry()).unwrap();
    // seq 21 is `{op: replace, start: 4, end: 4}`: 4 is a seq (the first prompt), not a position.
    assert_eq!(log.surface_nodes(), [21, 13, 15, 28]);
    assert_eq!(log.replace_generation(), 1);
    assert_eq!(log.get(4).unwrap().kind, "user/message");
    let summary = log.summary();
    assert_eq!(summary.end_reasons.get("completed"), Some(&1));
    assert_eq!(summary.turns[0].steps, 2);
}
