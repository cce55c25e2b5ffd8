//! Shared helpers: the fixture corpus (read in place) and scratch directories under target/.

use std::path::{Path, PathBuf};

use dsh_session_log::SessionEvent;
use serde_json::{Value, json};

/// The recorded reference logs, read where they are.
pub(crate) fn fixtures_dir() -> PathBuf {
    dsh_test_corpus::corpus().expect("the recorded corpus (the test checks for it first)")
}

/// Every `session*.jsonl` under the fixtures, sorted.
pub(crate) fn fixture_logs() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("session") && n.ends_with(".jsonl"))
            {
                out.push(path);
            }
        }
    }
    let dir = fixtures_dir();
    assert!(dir.is_dir(), "fixture corpus missing at {}", dir.display());
    let mut out = Vec::new();
    walk(&dir, &mut out);
    out.sort();
    assert!(
        out.len() > 50,
        "expected the recorded corpus, found {} logs",
        out.len()
    );
    out
}

/// Replay scripts, not durable logs (REFERENCE §10): no `delegationDepth`, chunks outside turns.
pub(crate) fn is_replay_script(path: &Path) -> bool {
    path.to_string_lossy()
        .contains("headless/snapshots/ralph-loop/")
}

/// A fresh scratch directory for one test.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("session-jsonl-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) fn event(seq: u64, kind: &str, data: Value) -> SessionEvent {
    SessionEvent {
        kind: kind.to_owned(),
        seq,
        time: 1_000 + seq as i64,
        data,
        surface_op: None,
        source_event_seqs: None,
        ignorable: None,
    }
}

/// A small turn: boundaries, a reasoning run, a text run, a tool-call run, the message, turn end.
pub(crate) fn sample_turn(start: u64, turn: u64) -> Vec<SessionEvent> {
    let mut out = Vec::new();
    let mut push = |kind: &str, data: Value| {
        let seq = start + out.len() as u64;
        out.push(event(seq, kind, data));
    };
    push("turn/start", json!({"turn": turn}));
    push("step/start", json!({"turn": turn, "step": 1}));
    for t in ["I", " think", " so", "."] {
        push(
            "assistant/chunk",
            json!({"turn":turn,"step":1,"chunk":{"type":"reasoning-delta","index":0,"text":t}}),
        );
    }
    for t in ["Hel", "lo", " there", "!"] {
        push(
            "assistant/chunk",
            json!({"turn":turn,"step":1,"chunk":{"type":"text-delta","index":1,"text":t}}),
        );
    }
    for a in ["{", "\"cmd\"", ":1", "}"] {
        push(
            "assistant/chunk",
            json!({"turn":turn,"step":1,"chunk":{"type":"tool-call-delta","index":2,"id":"c1","name":"bash","argumentsDelta":a}}),
        );
    }
    push(
        "assistant/chunk",
        json!({"turn":turn,"step":1,"chunk":{"type":"finish","reason":"stop"}}),
    );
    push("step/end", json!({"turn": turn, "step": 1}));
    push(
        "turn/end",
        json!({"turn": turn, "reason": {"kind": "completed"}}),
    );
    out
}

/// `read_session(path)`, after checking that `read_session_lines` reads the file the same way:
/// both succeed with the same header and repair note and the lines decode to the same events,
/// or both fail with the same error.
pub(crate) fn read_both(
    path: &Path,
) -> Result<dsh_session_jsonl::ReadSession, dsh_session_jsonl::ReadError> {
    let events = dsh_session_jsonl::read_session(path);
    let lines = dsh_session_jsonl::read_session_lines(path);
    match (&events, &lines) {
        (Ok(events), Ok(lines)) => {
            assert_eq!(events.header, lines.header, "{}", path.display());
            assert_eq!(events.repair, lines.repair, "{}", path.display());
            assert_eq!(events.file_len, lines.file_len, "{}", path.display());
            let decoded: Vec<SessionEvent> = lines
                .lines
                .iter()
                .map(|line| serde_json::from_str(line).expect("each kept line decodes"))
                .collect();
            assert_eq!(decoded, events.events, "{}", path.display());
        }
        (Err(events), Err(lines)) => {
            assert_eq!(events.to_string(), lines.to_string(), "{}", path.display());
        }
        _ => panic!(
            "{}: the two readings differ: {:?} against {:?}",
            path.display(),
            events.as_ref().map(|read| read.events.len()),
            lines.as_ref().map(|read| read.lines.len())
        ),
    }
    events
}
