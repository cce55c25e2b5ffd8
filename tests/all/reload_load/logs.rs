//! The stored logs of the reload-under-load test: found by session, waited on until a turn
//! ends, and checked for lost or doubled events beyond the host's own `session check`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dsh_tests::sessions::{read_live_log, session_logs};
use dsh_tests::web::Web;
use serde_json::Value;

use super::LAST;

/// How long a whole round of turns may take before the test calls one stuck.
const TURNS_WITHIN: Duration = Duration::from_secs(40);

/// The stored log of every session, by session id (the folder holding `session.jsonl`): its
/// complete lines, since the running host may be appending to it.
pub(super) fn logs_by_session(home: &Path) -> BTreeMap<String, (PathBuf, Vec<Value>)> {
    session_logs(&home.join("sessions"))
        .into_iter()
        .filter_map(|path| {
            let id = path.parent()?.file_name()?.to_string_lossy().into_owned();
            let (_, events) = read_live_log(&path)?;
            Some((id, (path, events)))
        })
        .collect()
}

/// The `turn/end` of turn `turn` in `events`.
pub(super) fn turn_end(events: &[Value], turn: u64) -> Option<&Value> {
    events
        .iter()
        .find(|event| event["type"] == "turn/end" && event["data"]["turn"] == turn)
}

/// Waits until every session's log holds the end of turn `turn`; panics naming the sessions
/// still running after [`TURNS_WITHIN`].
fn wait_turn_ends(web: &Web, home: &Path, sessions: &[String], turn: u64) {
    let deadline = Instant::now() + TURNS_WITHIN;
    loop {
        let logs = logs_by_session(home);
        let open: Vec<&String> = sessions
            .iter()
            .filter(|id| {
                logs.get(*id)
                    .is_none_or(|(_, events)| turn_end(events, turn).is_none())
            })
            .collect();
        if open.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            let tails: Vec<String> = open
                .iter()
                .map(|id| {
                    let events = logs
                        .get(*id)
                        .map(|(_, events)| events.as_slice())
                        .unwrap_or_default();
                    let tail: Vec<String> = events
                        .iter()
                        .skip(events.len().saturating_sub(12))
                        .map(|event| {
                            format!("{} {}", event["type"], event["data"])
                                .chars()
                                .take(300)
                                .collect()
                        })
                        .collect();
                    format!("{id}:\n    {}", tail.join("\n    "))
                })
                .collect();
            let noted: Vec<String> = web
                .host
                .stderr()
                .into_iter()
                .filter(|line| !line.contains(" INFO ") && !line.contains("session-title"))
                .collect();
            panic!(
                "turn {turn} never ended in {} session(s): {open:?}\n{}\nhost:\n{}",
                open.len(),
                tails.join("\n"),
                noted.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The seqs one stored line stands for: an event's own, or the run a packed chunk row
/// (`text-chunks`, `reasoning-chunks`, `tool-call-chunks`) holds from its `seq0`.
fn seqs_of(id: &str, line: &Value) -> Vec<u64> {
    if let Some(seq) = line["seq"].as_u64() {
        return vec![seq];
    }
    let seq0 = line["seq0"]
        .as_u64()
        .unwrap_or_else(|| panic!("{id}: a line with neither seq nor seq0: {line}"));
    let members = line["data"]["texts"]
        .as_array()
        .or_else(|| line["data"]["args"].as_array())
        .map_or(0, Vec::len);
    assert!(members > 0, "{id}: an empty packed row: {line}");
    (seq0..seq0 + members as u64).collect()
}

/// What a sound log promises beyond the host's own check: contiguous seqs, each tool call
/// answered exactly once, each turn started and ended once.
pub(super) fn assert_nothing_lost_or_doubled(id: &str, events: &[Value]) {
    let seqs: Vec<u64> = events.iter().flat_map(|event| seqs_of(id, event)).collect();
    assert_eq!(seqs.first(), Some(&0), "{id}: the log starts at seq 0");
    for pair in seqs.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "{id}: seqs not contiguous: {seqs:?}");
    }
    let mut results: BTreeMap<String, usize> = BTreeMap::new();
    for event in events.iter().filter(|event| event["type"] == "tool/result") {
        for part in event["data"]["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let call = part["toolCallId"].as_str().unwrap_or_default().to_owned();
            *results.entry(call).or_default() += 1;
        }
    }
    let calls: BTreeSet<String> = events
        .iter()
        .filter(|event| event["type"] == "tool/call")
        .map(|event| {
            event["data"]["callId"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let call_count = events
        .iter()
        .filter(|event| event["type"] == "tool/call")
        .count();
    assert_eq!(call_count, calls.len(), "{id}: a tool call logged twice");
    for call in &calls {
        assert_eq!(
            results.get(call),
            Some(&1),
            "{id}: call {call} has {:?} results",
            results.get(call)
        );
    }
    assert_eq!(
        results.len(),
        calls.len(),
        "{id}: a result without its call: {results:?}"
    );
    for kind in ["turn/start", "turn/end"] {
        let turns: Vec<u64> = events
            .iter()
            .filter(|event| event["type"] == kind)
            .filter_map(|event| event["data"]["turn"].as_u64())
            .collect();
        assert_eq!(
            turns,
            (1..=LAST as u64).collect::<Vec<_>>(),
            "{id}: {kind} per turn"
        );
    }
}

/// How every session's turn `turn` ended, counted by reason (`completed`, or the kind and its
/// named cause, such as `aborted/disposed`); panics on an end that names no reason.
pub(super) fn turn_reasons(
    web: &Web,
    home: &Path,
    sessions: &[String],
    turn: u64,
) -> BTreeMap<String, usize> {
    wait_turn_ends(web, home, sessions, turn);
    let logs = logs_by_session(home);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for session in sessions {
        let end = turn_end(&logs[session].1, turn).unwrap();
        let reason = &end["data"]["reason"];
        let named = match reason["kind"].as_str().unwrap_or_default() {
            "completed" => "completed".to_owned(),
            kind @ ("aborted" | "error") => {
                let why = reason["reason"]["kind"]
                    .as_str()
                    .or_else(|| reason["message"].as_str())
                    .unwrap_or_default();
                assert!(
                    !why.is_empty(),
                    "{session}: turn {turn} ended without a named reason: {end}"
                );
                format!("{kind}/{why}")
            }
            _ => panic!("{session}: turn {turn} ended with an unknown reason: {end}"),
        };
        *reasons.entry(named).or_default() += 1;
    }
    reasons
}
