//! The sessions a run stored under its `$DSH_HOME/sessions`: the patch layer that keeps them
//! plain JSONL (so a test can read them), the logs found there, read as a header and events,
//! and the session ids.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A patch layer (the home's `cordis.patch.yml`) under which the store writes plain JSONL,
/// uncompressed, so a test reads every log it stored (a child's too) or plants one by hand.
pub const PLAIN_STORE: &str = "- id: session-persistence-jsonl\n  config:\n    root: !home sessions\n    trash: !home trash\n    compression: none\n";

/// A session log: its header line and its events.
pub fn read_log(path: &Path) -> (Value, Vec<Value>) {
    parse_lines(&std::fs::read_to_string(path).unwrap())
}

/// A session log a running host may be appending to: its header and the events whose lines
/// are complete. A line is an event once its newline is written; a read that lands in the
/// middle of an append sees the start of a line without it, which is left for the next read
/// (as the store's own reader leaves a torn tail). Every complete line must still parse.
/// `None` while not even the header is complete (a log just created).
pub fn read_live_log(path: &Path) -> Option<(Value, Vec<Value>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let end = text.rfind('\n')?;
    Some(parse_lines(&text[..=end]))
}

fn parse_lines(text: &str) -> (Value, Vec<Value>) {
    let mut lines = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap());
    let header = lines.next().unwrap();
    (header, lines.collect())
}

/// Every `session.jsonl` below `dir`.
pub fn session_logs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|name| name == "session.jsonl") {
                found.push(path);
            }
        }
    }
    found
}

/// The logs the runs under `home` stored (header, events), by header `createdAt`.
pub fn stored_logs(home: &Path) -> Vec<(Value, Vec<Value>)> {
    let mut logs: Vec<(Value, Vec<Value>)> = session_logs(&home.join("sessions"))
        .iter()
        .map(|path| read_log(path))
        .collect();
    logs.sort_by_key(|(header, _)| header["createdAt"].as_i64());
    logs
}

/// The ids of the sessions stored under `home` (the folders of `sessions/<project>/`).
pub fn stored_session_ids(home: &Path) -> Vec<String> {
    let folders = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect()
    };
    folders(&home.join("sessions"))
        .iter()
        .flat_map(|project| folders(project))
        .map(|session| session.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}
