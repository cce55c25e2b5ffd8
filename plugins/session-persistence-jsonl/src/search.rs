//! Text search over the stored conversations: every log read with the session reader (so
//! either encoding), its title and its messages' text matched ignoring case, the latest match of each session
//! kept with a snippet around it. Logs are read newest first and the search stops at its limit,
//! so a person looking for last week's conversation does not wait for last year's.

use std::path::Path;

use dsh_protocol::{
    AssistantMessageEvent, SearchHit, SessionTitleEvent, UserMessageEvent, text_of,
};
use dsh_session_jsonl::{Encoding, list_sessions, read_session};
use dsh_sessions_seam::{SessionError, SessionErrorKind, search_snippet};

/// Where the log at `path` holds `needle`: its title (the latest one) when that does, else its
/// latest message that does; the event's seq and a snippet.
fn latest_match(path: &Path, needle: &str) -> Option<(u64, String)> {
    let log = read_session(path).ok()?;
    let title = log.events.iter().rev().find_map(|event| {
        event
            .read::<SessionTitleEvent>()
            .map(|title| (event.seq, title.title))
    });
    if let Some((seq, title)) = title
        && let Some(shown) = search_snippet(&title, needle)
    {
        return Some((seq, shown));
    }
    log.events.iter().rev().find_map(|event| {
        let content = match (
            event.read::<UserMessageEvent>(),
            event.read::<AssistantMessageEvent>(),
        ) {
            (Some(UserMessageEvent(message)), _) => message.content,
            (_, Some(answer)) => answer.message.content,
            _ => return None,
        };
        search_snippet(&text_of(&content), needle).map(|shown| (event.seq, shown))
    })
}

/// The sessions under `root` whose title or messages hold `query`.
pub(crate) fn search(
    root: &Path,
    encoding: Encoding,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, SessionError> {
    let needle = query.trim().to_lowercase();
    if needle.is_empty() {
        return Ok(Vec::new());
    }
    let listing = list_sessions(root, encoding)
        .map_err(|problem| SessionError::new(SessionErrorKind::Unreadable, problem.to_string()))?;
    let mut sessions = listing.sessions;
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    sessions.sort_by_key(|listed| std::cmp::Reverse(modified(&listed.path)));
    let mut hits = Vec::new();
    for listed in sessions {
        if hits.len() >= limit {
            break;
        }
        if let Some((seq, snippet)) = latest_match(&listed.path, &needle) {
            hits.push(SearchHit {
                session_id: listed.header.id,
                seq,
                snippet,
            });
        }
    }
    Ok(hits)
}
