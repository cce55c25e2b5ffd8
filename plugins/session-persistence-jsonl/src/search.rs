//! Text search over the stored conversations: every log read with the session reader (so
//! either encoding), its title and its messages' text matched ignoring case, the latest match
//! of each session kept with a snippet around it. Logs are read newest first and the search stops at its limit,
//! so a person looking for last week's conversation does not wait for last year's.

use std::borrow::Cow;
use std::path::Path;

use dsh_protocol::{
    AssistantMessageEvent, SearchHit, SessionEvent, SessionTitleEvent, UserMessageEvent, kinds,
    text_of,
};
use dsh_session_jsonl::{Encoding, list_sessions, read_session_lines};
use dsh_sessions_seam::{SessionError, SessionErrorKind, search_snippet};

/// The event type of a stored line, read without decoding the rest: a line the store wrote
/// begins with it, any other is parsed for it.
fn kind_of(line: &str) -> Option<Cow<'_, str>> {
    if let Some(rest) = line.strip_prefix("{\"type\":\"")
        && let Some(end) = rest.find('"')
        && !rest[..end].contains('\\')
    {
        return Some(Cow::Borrowed(&rest[..end]));
    }
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    serde_json::from_str::<Head<'_>>(line)
        .ok()
        .map(|head| head.kind)
}

/// Where the log at `path` holds `needle`: its title (the latest one) when that does, else its
/// latest message that does; the event's seq and a snippet. The log is read as lines and only
/// titles and messages are decoded, newest first until one holds it (chunks, tool calls and
/// results are most of a long log and never searched).
fn latest_match(path: &Path, needle: &str) -> Option<(u64, String)> {
    let read = read_session_lines(path).ok()?;
    let newest_of = |kinds: &'static [&'static str]| {
        read.lines
            .iter()
            .rev()
            .filter(move |line| kind_of(line).is_some_and(|kind| kinds.contains(&kind.as_ref())))
            .filter_map(|line| serde_json::from_str::<SessionEvent>(line).ok())
    };
    let title = newest_of(&[kinds::SESSION_TITLE]).find_map(|event| {
        event
            .read::<SessionTitleEvent>()
            .map(|title| (event.seq, title.title))
    });
    if let Some((seq, title)) = title
        && let Some(shown) = search_snippet(&title, needle)
    {
        return Some((seq, shown));
    }
    newest_of(&[kinds::USER_MESSAGE, kinds::ASSISTANT_MESSAGE]).find_map(|event| {
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

#[cfg(test)]
mod tests {
    use super::kind_of;

    #[test]
    fn a_lines_kind_is_read_at_its_start_or_parsed_for() {
        let written = r#"{"type":"user/message","seq":4,"time":0,"data":{}}"#;
        assert_eq!(kind_of(written).as_deref(), Some("user/message"));
        // Keys in another order, and a type spelled with an escape: parsed.
        let reordered = r#"{"seq":4,"type":"session/title","time":0,"data":{}}"#;
        assert_eq!(kind_of(reordered).as_deref(), Some("session/title"));
        let escaped = r#"{"type":"user\/message","seq":4,"time":0,"data":{}}"#;
        assert_eq!(kind_of(escaped).as_deref(), Some("user/message"));
        assert_eq!(kind_of("not json"), None);
    }
}
