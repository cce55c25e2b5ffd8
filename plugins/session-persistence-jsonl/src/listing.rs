//! The store's listing: every stored session as a summary, newest first, the ones that do not
//! read among them with why (runs on the blocking pool).

use std::path::Path;

use dsh_protocol::SessionSummary;
use dsh_session_jsonl::{Encoding, list_sessions};
use dsh_sessions_seam::{SessionError, SessionErrorKind};

use crate::store::{ACTIVITY_FILE, TITLE_FILE};

/// When the conversation of the log at `path` last had a message, from the activity file
/// beside it; a log written before those files existed is read once and its file written.
fn activity(path: &Path) -> Option<i64> {
    let dir = path.parent()?;
    if let Ok(text) = std::fs::read_to_string(dir.join(ACTIVITY_FILE)) {
        return text.trim().parse().ok();
    }
    let log = dsh_session_jsonl::read_session(path).ok()?;
    let found = log
        .events
        .iter()
        .rev()
        .find(|event| {
            event.kind == dsh_protocol::kinds::USER_MESSAGE
                || event.kind == dsh_protocol::kinds::ASSISTANT_MESSAGE
        })
        .map(|event| event.time);
    let written = found.map(|time| time.to_string()).unwrap_or_default();
    crate::store::write_listing_file(dir, ACTIVITY_FILE, &written);
    found
}

/// Records in `dir` that the conversation last had a message at `ms`. The first time the file
/// is written aside and renamed in (a listing never sees it empty); after that it is rewritten
/// in place when the value keeps its width (13 digits until the year 2286): a new file per
/// message, and the inode each rename frees, cost every session's turn a file creation that
/// the file system's allocator makes slower the more of them it has just freed. A listing
/// reading during the one write reads the old or the new value (both a moment apart).
pub(crate) fn write_activity(dir: &Path, ms: i64) {
    use std::os::unix::fs::FileExt;
    let text = ms.to_string();
    let path = dir.join(ACTIVITY_FILE);
    let rewritten = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|file| match file.metadata()?.len() == text.len() as u64 {
            true => file.write_all_at(text.as_bytes(), 0),
            false => Err(std::io::ErrorKind::InvalidData.into()),
        });
    if rewritten.is_err() {
        crate::store::write_listing_file(dir, ACTIVITY_FILE, &text);
    }
}

/// When `path` last changed, in milliseconds since the epoch.
fn modified_ms(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

/// The summaries of the sessions under `root`, titled from the title file beside each log (no
/// log is read whole).
pub(crate) fn summaries(
    root: &Path,
    encoding: Encoding,
) -> Result<Vec<SessionSummary>, SessionError> {
    let listing = list_sessions(root, encoding)
        .map_err(|problem| SessionError::new(SessionErrorKind::Unreadable, problem.to_string()))?;
    let broken = listing.broken.into_iter().map(|broken| {
        let changed = modified_ms(&broken.path).unwrap_or(0);
        SessionSummary {
            id: broken.id,
            cwd: broken.cwd,
            created_at: changed,
            updated_at: changed,
            active_at: None,
            title: None,
            live: false,
            waiting: false,
            archived: false,
            subagent_of: None,
            fork_of: None,
            broken: Some(broken.reason),
            agent_preset: None,
        }
    });
    let mut summaries: Vec<SessionSummary> = listing
        .sessions
        .into_iter()
        .map(|listed| {
            let updated_at = modified_ms(&listed.path).unwrap_or(listed.header.created_at);
            let title = listed
                .path
                .parent()
                .and_then(|dir| std::fs::read_to_string(dir.join(TITLE_FILE)).ok())
                .filter(|title| !title.is_empty());
            // A child's parent is a subagent's; anyone else's is the session it was forked from.
            let (subagent_of, fork_of) = match listed.header.origin.as_deref() {
                Some("subagent") => (listed.header.parent_session, None),
                _ => (None, listed.header.parent_session),
            };
            SessionSummary {
                id: listed.header.id,
                cwd: listed.header.cwd,
                created_at: listed.header.created_at,
                updated_at,
                active_at: activity(&listed.path),
                title,
                live: false,
                waiting: false,
                archived: listed
                    .path
                    .parent()
                    .is_some_and(|dir| dir.join(crate::trash::ARCHIVED_FILE).exists()),
                subagent_of,
                fork_of,
                broken: None,
                agent_preset: listed.header.agent_preset,
            }
        })
        .chain(broken)
        .collect();
    summaries
        .sort_by_key(|summary| std::cmp::Reverse(summary.active_at.unwrap_or(summary.updated_at)));
    Ok(summaries)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn activity_is_rewritten_in_place_while_its_width_holds() {
        let dir = std::env::temp_dir().join(format!("dsh-activity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(ACTIVITY_FILE);
        write_activity(&dir, 1_796_571_831_423);
        let first = std::fs::metadata(&file).unwrap().ino();
        write_activity(&dir, 1_796_571_839_999);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "1796571839999");
        assert_eq!(std::fs::metadata(&file).unwrap().ino(), first);
        // Another width: written aside and renamed in, whole.
        write_activity(&dir, 42);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "42");
        assert_eq!(activity(&dir.join("session.jsonl")), Some(42));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
