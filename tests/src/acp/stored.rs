//! The logs an ACP run stored (the tests' plain store under `$DSH_HOME/sessions`): read while
//! they may be mid-write, waited on, and harvested as the reference's harness harvests them.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The logs stored under `home` whose events hold a `turn/end` (every turn closed) or all of
/// them: the top-level session's first, then its children by `createdAt`, then id.
pub fn harvest(home: &Path) -> Vec<(Value, Vec<Value>)> {
    let mut logs = crate::sessions::stored_logs(home);
    logs.sort_by(|(a, _), (b, _)| {
        let top = |header: &Value| header.get("parentSession").is_some();
        (top(a), a["createdAt"].as_i64(), a["id"].as_str()).cmp(&(
            top(b),
            b["createdAt"].as_i64(),
            b["id"].as_str(),
        ))
    });
    logs
}

/// The stored log of session `id` under `home`, if it was written yet.
pub fn stored_events(home: &Path, id: &str) -> Vec<Value> {
    crate::sessions::session_logs(&home.join("sessions"))
        .into_iter()
        .find(|path| {
            path.parent()
                .and_then(Path::file_name)
                .is_some_and(|name| name == id)
        })
        .map(|path| read_lenient(&path))
        .unwrap_or_default()
}

/// A log read while it may be mid-write: complete lines only, the header left out.
fn read_lenient(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits (at most `timeout`) until `check` holds for the stored events of session `id`.
pub fn wait_stored(
    home: &Path,
    id: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(&[Value]) -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        if check(&stored_events(home, id)) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out after {timeout:?} waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The stored child logs under `home` (those with a `parentSession`), by `createdAt`: their
/// ids.
pub fn stored_children(home: &Path) -> Vec<String> {
    harvest(home)
        .into_iter()
        .filter(|(header, _)| header.get("parentSession").is_some())
        .filter_map(|(header, _)| header["id"].as_str().map(str::to_owned))
        .collect()
}
