//! The listing, the trash, archiving and search, as queries. A trashed session keeps its rows
//! (`trashed_at` set): nothing is erased, and restoring it clears the mark.

use dsh_plugin_api::io::postgres::{PgStatement, PgValue};
use dsh_protocol::{
    AssistantMessageEvent, SearchHit, SessionSummary, SessionTitleEvent, UserMessageEvent, kinds,
    text_of,
};
use dsh_session_jsonl::SessionHeader;
use dsh_sessions_seam::{SessionError, SessionErrorKind, search_snippet};

use crate::store::{Store, error, from_db};

async fn query(
    store: &Store,
    session: &str,
    sql: &str,
    params: Vec<PgValue>,
) -> Result<dsh_plugin_api::io::postgres::PgRows, SessionError> {
    store
        .inner
        .db
        .query(PgStatement::new(sql, params))
        .await
        .into_result()
        .map_err(|problem| from_db(session, problem))
}

/// Every stored session not in the trash, most recently active first.
pub(crate) async fn list(store: &Store) -> Result<Vec<SessionSummary>, SessionError> {
    let rows = query(
        store,
        "*",
        "SELECT id, header, updated_at, active_at, title, archived FROM dsh_sessions
         WHERE trashed_at IS NULL ORDER BY coalesce(active_at, updated_at) DESC",
        Vec::new(),
    )
    .await?;
    let mut summaries = Vec::with_capacity(rows.rows.len());
    for row in rows.rows.iter() {
        let text = |index: usize| row.get(index).and_then(PgValue::as_text);
        let int = |index: usize| row.get(index).and_then(PgValue::as_int);
        let id = text(0).unwrap_or_default().to_owned();
        let updated_at = int(2).unwrap_or(0);
        let summary = match SessionHeader::parse(&id, text(1).unwrap_or_default()) {
            Ok(header) => {
                // A child's parent is a subagent's; anyone else's is the session it was forked
                // from.
                let (subagent_of, fork_of) = match header.origin.as_deref() {
                    Some("subagent") => (header.parent_session, None),
                    _ => (None, header.parent_session),
                };
                SessionSummary {
                    id,
                    cwd: header.cwd,
                    created_at: header.created_at,
                    updated_at,
                    active_at: int(3),
                    title: text(4).map(str::to_owned),
                    live: false,
                    waiting: false,
                    archived: row.get(5).and_then(PgValue::as_bool).unwrap_or(false),
                    subagent_of,
                    fork_of,
                    broken: None,
                    agent_preset: header.agent_preset,
                }
            }
            Err(problem) => SessionSummary {
                id,
                cwd: None,
                created_at: updated_at,
                updated_at,
                active_at: None,
                title: None,
                live: false,
                waiting: false,
                archived: false,
                subagent_of: None,
                fork_of: None,
                broken: Some(problem.to_string()),
                agent_preset: None,
            },
        };
        summaries.push(summary);
    }
    Ok(summaries)
}

/// Puts a session that no host holds into the trash.
pub(crate) async fn delete(store: &Store, id: &str) -> Result<(), SessionError> {
    if store.holds(id) {
        return Err(error(
            SessionErrorKind::Locked,
            format!("session `{id}` is open: close it before deleting it"),
        ));
    }
    let moved = query(
        store,
        id,
        "UPDATE dsh_sessions SET trashed_at = dsh_now_ms()
         WHERE id = $1 AND trashed_at IS NULL AND NOT EXISTS
            (SELECT 1 FROM dsh_leases WHERE session = $1 AND expires_at > dsh_now_ms())",
        vec![PgValue::text(id)],
    )
    .await?;
    if moved.affected == 1 {
        return Ok(());
    }
    let leased = query(
        store,
        id,
        "SELECT owner FROM dsh_leases WHERE session = $1 AND expires_at > dsh_now_ms()",
        vec![PgValue::text(id)],
    )
    .await?;
    match crate::store::first_text(&leased) {
        Some(owner) => Err(error(
            SessionErrorKind::Locked,
            format!("session `{id}` is open on host `{owner}`: close it there first"),
        )),
        None => Err(error(
            SessionErrorKind::NotFound,
            format!("no stored session `{id}`"),
        )),
    }
}

/// Takes a session back out of the trash.
pub(crate) async fn restore(store: &Store, id: &str) -> Result<(), SessionError> {
    let restored = query(
        store,
        id,
        "UPDATE dsh_sessions SET trashed_at = NULL WHERE id = $1 AND trashed_at IS NOT NULL",
        vec![PgValue::text(id)],
    )
    .await?;
    match restored.affected {
        0 => Err(error(
            SessionErrorKind::NotFound,
            format!("session `{id}` is not in the trash"),
        )),
        _ => Ok(()),
    }
}

pub(crate) async fn archive(store: &Store, id: &str, archived: bool) -> Result<(), SessionError> {
    let marked = query(
        store,
        id,
        "UPDATE dsh_sessions SET archived = $2 WHERE id = $1 AND trashed_at IS NULL",
        vec![PgValue::text(id), PgValue::Bool(archived)],
    )
    .await?;
    match marked.affected {
        0 => Err(error(
            SessionErrorKind::NotFound,
            format!("no stored session `{id}`"),
        )),
        _ => Ok(()),
    }
}

/// `needle` as a LIKE pattern over the stored JSON lines: the text as JSON spells it, with
/// LIKE's own characters escaped. Matching is then confirmed on the decoded text.
fn like_pattern(needle: &str) -> String {
    let spelled = serde_json::to_string(needle).unwrap_or_default();
    let inner = spelled
        .get(1..spelled.len().saturating_sub(1))
        .unwrap_or_default();
    let escaped = inner
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// The sessions whose title or messages hold `query`, ignoring case, most recently active
/// first: the title when it holds it, else the latest message that does.
pub(crate) async fn search(
    store: &Store,
    query_text: &str,
    limit: u32,
) -> Result<Vec<SearchHit>, SessionError> {
    let needle = query_text.trim().to_lowercase();
    if needle.is_empty() {
        return Ok(Vec::new());
    }
    let pattern = like_pattern(&needle);
    let candidates = query(
        store,
        "*",
        "SELECT s.id FROM dsh_sessions s WHERE s.trashed_at IS NULL AND EXISTS
            (SELECT 1 FROM dsh_events e WHERE e.session = s.id AND e.kind = ANY($2::text[])
             AND e.line ILIKE $1)
         ORDER BY coalesce(s.active_at, s.updated_at) DESC",
        vec![
            PgValue::text(&pattern),
            PgValue::Texts(
                [
                    kinds::SESSION_TITLE,
                    kinds::USER_MESSAGE,
                    kinds::ASSISTANT_MESSAGE,
                ]
                .into_iter()
                .map(Into::into)
                .collect(),
            ),
        ],
    )
    .await?;
    let mut hits = Vec::new();
    for row in candidates.rows.iter() {
        if hits.len() >= limit as usize {
            break;
        }
        let Some(id) = row.first().and_then(PgValue::as_text) else {
            continue;
        };
        if let Some((seq, snippet)) = latest_match(store, id, &pattern, &needle).await? {
            hits.push(SearchHit {
                session_id: id.to_owned(),
                seq,
                snippet,
            });
        }
    }
    Ok(hits)
}

/// Where session `id` holds `needle`: its latest title when that does, else its latest message
/// that does.
async fn latest_match(
    store: &Store,
    id: &str,
    pattern: &str,
    needle: &str,
) -> Result<Option<(u64, String)>, SessionError> {
    let title = query(
        store,
        id,
        "SELECT seq, line FROM dsh_events WHERE session = $1 AND kind = $2
         ORDER BY seq DESC LIMIT 1",
        vec![PgValue::text(id), PgValue::text(kinds::SESSION_TITLE)],
    )
    .await?;
    let decode = |row: &abi_stable::std_types::RVec<PgValue>| {
        let seq = row.first().and_then(PgValue::as_int)?;
        let line = row.get(1).and_then(PgValue::as_text)?;
        let event: dsh_protocol::SessionEvent = serde_json::from_str(line).ok()?;
        Some((u64::try_from(seq).ok()?, event))
    };
    if let Some((seq, event)) = title.rows.first().and_then(decode)
        && let Some(title) = event.read::<SessionTitleEvent>()
        && let Some(shown) = search_snippet(&title.title, needle)
    {
        return Ok(Some((seq, shown)));
    }
    let messages = query(
        store,
        id,
        "SELECT seq, line FROM dsh_events WHERE session = $1 AND kind = ANY($2::text[])
         AND line ILIKE $3 ORDER BY seq DESC",
        vec![
            PgValue::text(id),
            PgValue::Texts(
                [kinds::USER_MESSAGE, kinds::ASSISTANT_MESSAGE]
                    .into_iter()
                    .map(Into::into)
                    .collect(),
            ),
            PgValue::text(pattern),
        ],
    )
    .await?;
    Ok(messages
        .rows
        .iter()
        .filter_map(decode)
        .find_map(|(seq, event)| {
            let content = match (
                event.read::<UserMessageEvent>(),
                event.read::<AssistantMessageEvent>(),
            ) {
                (Some(UserMessageEvent(message)), _) => message.content,
                (_, Some(answer)) => answer.message.content,
                _ => return None,
            };
            search_snippet(&text_of(&content), needle).map(|shown| (seq, shown))
        }))
}
