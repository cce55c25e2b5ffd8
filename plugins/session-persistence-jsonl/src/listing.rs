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
