//! The store's listing: every stored session as a summary, newest first, the ones that do not
//! read among them with why (runs on the blocking pool).

use std::path::Path;

use dsh_protocol::{SessionSummary, SessionTitleEvent, UserMessageEvent, text_of};
use dsh_session_jsonl::{ARCHIVED_FILE, Encoding, ListingFile, last_message_time, list_sessions};
use dsh_sessions_seam::{SessionError, SessionErrorKind, shown_title};

/// The listing beside the log at `path`; a log written before the listing files existed is
/// read once and its listing written.
fn listing_beside(path: &Path) -> ListingFile {
    let Some(dir) = path.parent() else {
        return ListingFile::default();
    };
    if let Some(listing) = ListingFile::read(dir) {
        return listing;
    }
    let Ok(log) = dsh_session_jsonl::read_session(path) else {
        return ListingFile::default();
    };
    let title = log
        .events
        .iter()
        .rev()
        .find_map(|event| event.read::<SessionTitleEvent>())
        .map(|title| {
            let said = log
                .events
                .iter()
                .filter(|event| title.message_seqs.contains(&event.seq))
                .find_map(|event| event.read::<UserMessageEvent>())
                .map(|UserMessageEvent(message)| text_of(&message.content));
            shown_title(title, said.as_deref())
        });
    let listing = ListingFile {
        active_at: last_message_time(&log.events),
        title,
    };
    let _ = listing.write(dir);
    listing
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
            let ListingFile { active_at, title } = listing_beside(&listed.path);
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
                active_at,
                title,
                live: false,
                waiting: false,
                archived: listed
                    .path
                    .parent()
                    .is_some_and(|dir| dir.join(ARCHIVED_FILE).exists()),
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
