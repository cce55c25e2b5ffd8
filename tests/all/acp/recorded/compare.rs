//! What a recorded case is judged by: its normalized transcript against
//! `stdout.expected.jsonl`, and the logs it stored against the recorded ones (the same
//! durable events in order, the same calls and results, the same turn endings).

use std::path::Path;

use dsh_tests::TestDir;
use dsh_tests::acp::{Volatile, harvest};
use dsh_tests::events::{calls_and_results, durable_types};
use dsh_tests::sessions::read_log;
use serde_json::Value;

use super::TIMING_DEPENDENT;

/// Whether two normalized transcripts agree; `timing`: the answers and the rest each in
/// order, but not interleaved alike (where the reference fenced a background child behind the
/// answer with a test-only plugin, and ours settles when it settles).
pub(super) fn same_transcript(ours: &[Value], expected: &[Value], timing: bool) -> bool {
    if !timing {
        return ours == expected;
    }
    let split = |frames: &[Value]| -> (Vec<Value>, Vec<Value>) {
        frames
            .iter()
            .cloned()
            .partition(|frame| frame.get("result").is_some() || frame.get("error").is_some())
    };
    split(ours) == split(expected)
}

pub(super) fn lines(frames: &[Value]) -> String {
    frames
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n    ")
}

/// The stored logs against the recorded ones: parent first, then children by creation.
pub(super) fn compare_logs(
    problems: &mut Vec<String>,
    folder: &Path,
    dir: &TestDir,
    volatile: &Volatile,
    name: &str,
) {
    let recorded: Vec<Vec<Value>> = std::iter::once(folder.join("session.jsonl"))
        .chain(
            (1..)
                .map(|n| folder.join(format!("session.{n}.jsonl")))
                .take_while(|path| path.is_file()),
        )
        .map(|path| read_log(&path).1)
        .collect();
    let ours: Vec<Vec<Value>> = harvest(&dir.home())
        .into_iter()
        .map(|(_, events)| events)
        .collect();
    // A recording made outside the temp roots kept its real working directory (the
    // reference tokenizes only generated temp directories).
    let (header, _) = read_log(&folder.join("session.jsonl"));
    let recorded_volatile = Volatile::of(
        Path::new(header["cwd"].as_str().unwrap_or("{{cwd}}")),
        Vec::new(),
    );
    if ours.len() != recorded.len() {
        problems.push(format!(
            "{} logs stored, {} recorded",
            ours.len(),
            recorded.len()
        ));
    }
    let ordered = !TIMING_DEPENDENT.contains(&name);
    for (index, (ours, recorded)) in ours.iter().zip(&recorded).enumerate() {
        let what = match index {
            0 => "parent".to_owned(),
            n => format!("child {n}"),
        };
        if ordered && durable_types(ours) != durable_types(recorded) {
            problems.push(format!(
                "{what}: durable events differ:\n  ours     {:?}\n  recorded {:?}",
                durable_types(ours),
                durable_types(recorded)
            ));
        }
        let scrub = |lines: Vec<String>| -> Vec<String> {
            lines
                .iter()
                .map(|line| dsh_tests::acp::scrub_line(line, volatile))
                .collect()
        };
        let theirs: Vec<String> = calls_and_results(recorded)
            .iter()
            .map(|line| dsh_tests::acp::scrub_line(line, &recorded_volatile))
            .collect();
        let (mine, theirs) = (scrub(calls_and_results(ours)), scrub(theirs));
        if mine != theirs {
            problems.push(format!(
                "{what}: calls and results differ:\n  ours     {mine:?}\n  recorded {theirs:?}"
            ));
        }
        let ends = |events: &[Value]| -> Vec<Value> {
            events
                .iter()
                .filter(|event| event["type"] == "turn/end")
                .map(|event| event["data"]["reason"]["kind"].clone())
                .collect()
        };
        if ordered && ends(ours) != ends(recorded) {
            problems.push(format!(
                "{what}: turn endings differ: ours {:?}, recorded {:?}",
                ends(ours),
                ends(recorded)
            ));
        }
    }
}
