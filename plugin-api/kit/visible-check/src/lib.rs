//! `dsh-visible-check`: "model-visible means logged", checked where a request leaves for the
//! model (the innermost step of `llm/stream`, and the replay adapter, which answers in its
//! place). The request's messages must be exactly the session's derived history, compared by
//! the log's rolling history hash (kept with the snapshot, so the log side costs nothing), and
//! its config, system prompt and tools must be the last logged `request/header`. A compaction's
//! summary request may carry one instruction of its plugin after that history. A request
//! without a session is not checked: it is not part of any conversation. A session's request
//! that cannot be checked (no `sessions` service, a session that cannot be opened) is refused.
//!
//! A checked request's session is handed back, so the step that checks a request is the one
//! that gives the adapter its history, and no adapter touches a session.

mod unchanged;

use std::sync::OnceLock;

use abi_stable::std_types::RString;
use dsh_plugin_api::Context;
use dsh_protocol::{
    ContentBlock, GenerateRequest, HistoryRef, MessageSource, RequestHeader, RequestHeaderEvent,
    Role,
};
use dsh_sessions_seam::{DerivedViewBox, LatestOf, SESSIONS_SERVICE, SessionBox, SessionsService};
use serde::Serialize;

pub use unchanged::{RequestParts, check_unchanged};

/// Why a request may not leave.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "model-visible history of session `{session}` is not its log: the request carries {extra} message(s) beside its logged history (something added them after the history was derived)"
    )]
    MessagesBesideReference { session: String, extra: usize },
    #[error(
        "model-visible history of session `{session}` is not its log: the request refers to {sent_count} message(s) hashing to {sent_hash}, the log derives {logged_count} hashing to {logged_hash:016x}"
    )]
    ReferenceMismatch {
        session: String,
        sent_count: u64,
        sent_hash: String,
        logged_count: u64,
        logged_hash: u64,
    },
    #[error(
        "model-visible history of session `{session}` is not its log: the request carries {sent_count} message(s) hashing to {sent_hash:016x}, the log derives {logged_count} hashing to {logged_hash:016x} (something added to or changed the request after it was derived)"
    )]
    HistoryMismatch {
        session: String,
        sent_count: usize,
        sent_hash: u64,
        logged_count: u64,
        logged_hash: u64,
    },
    #[error("session `{0}` has no logged request/header for this request")]
    NoHeader(String),
    #[error(
        "the request of session `{session}` does not match its logged request/header (config {config}, system {system}, tools {tools})"
    )]
    HeaderMismatch {
        session: String,
        config: &'static str,
        system: &'static str,
        tools: &'static str,
    },
    #[error(
        "the request of session `{0}` cannot be checked against its log: no `sessions` service is mounted"
    )]
    NoSessions(String),
    #[error("session `{session}` of the request: {message}")]
    Session { session: String, message: String },
    #[error("a request with a history reference names no session")]
    ReferenceWithoutSession,
}

/// A message as the log hashes it: role, content and source.
#[derive(Serialize)]
struct Hashed<'a> {
    role: &'a Role,
    content: &'a [ContentBlock],
    source: &'a MessageSource,
}

/// The request's history hash, computed the way the log computes its own.
pub fn request_hash(request: &GenerateRequest) -> u64 {
    messages_hash(&request.messages)
}

/// The history hash of `messages`, computed the way the log computes its own.
fn messages_hash(messages: &[dsh_protocol::Message]) -> u64 {
    let values: Vec<serde_json::Value> = messages
        .iter()
        .filter_map(|message| {
            serde_json::to_value(Hashed {
                role: &message.role,
                content: &message.content,
                source: &message.source,
            })
            .ok()
        })
        .collect();
    dsh_history_hash::messages_hash(&values)
}

/// The last logged `request/header`'s header. Only the events appended since the previous
/// check of the session are read, so a long session costs no more than a short one.
fn last_header(session: &SessionBox) -> Option<RequestHeader> {
    static HEADERS: OnceLock<LatestOf<RequestHeaderEvent>> = OnceLock::new();
    HEADERS
        .get_or_init(LatestOf::default)
        .of(session)
        .map(|event| event.header)
}

/// Checks `request` against the log of `session`. A history by reference is checked in
/// constant time against the log's rolling hash; inline messages are hashed the way the log
/// hashes them.
pub fn check(session: &SessionBox, request: &GenerateRequest) -> Result<(), Refusal> {
    let id = session.id().into_string();
    let view = session.derive_messages();
    let logged = view.hash();
    if let Some(history) = &request.history {
        if !request.messages.is_empty() {
            return Err(Refusal::MessagesBesideReference {
                session: id,
                extra: request.messages.len(),
            });
        }
        if !reference_holds(&view, history) {
            return Err(Refusal::ReferenceMismatch {
                session: id,
                sent_count: history.count,
                sent_hash: history.hash.clone(),
                logged_count: view.message_count(),
                logged_hash: logged,
            });
        }
        return check_header(session, &id, request);
    }
    // A compaction's summary request is the conversation plus one instruction of the
    // compacting plugin: the conversation must be the log's, the instruction is logged with
    // the summary it asks for.
    let history = match request.purpose {
        Some(dsh_protocol::Purpose::Compaction) => match request.messages.split_last() {
            Some((last, rest))
                if last.role == Role::User && matches!(last.source, MessageSource::Plugin(_)) =>
            {
                rest
            }
            _ => &request.messages[..],
        },
        _ => &request.messages[..],
    };
    let sent = messages_hash(history);
    if logged != sent {
        return Err(Refusal::HistoryMismatch {
            session: id,
            sent_count: history.len(),
            sent_hash: sent,
            logged_count: view.message_count(),
            logged_hash: logged,
        });
    }
    check_header(session, &id, request)
}

/// The request's config, system prompt and tools against the last logged `request/header`.
fn check_header(session: &SessionBox, id: &str, request: &GenerateRequest) -> Result<(), Refusal> {
    let Some(header) = last_header(session) else {
        return Err(Refusal::NoHeader(id.to_owned()));
    };
    let config = header.config.provider == request.config.provider
        && header.config.model == request.config.model;
    let system = header.system == request.system;
    let tools = header.tools.as_deref().unwrap_or_default() == request.tools.as_slice();
    if config && system && tools {
        return Ok(());
    }
    let word = |same: bool| if same { "same" } else { "differs" };
    Err(Refusal::HeaderMismatch {
        session: id.to_owned(),
        config: word(config),
        system: word(system),
        tools: word(tools),
    })
}

/// Whether `history` names the derived history of `view`: its count and its rolling hash.
fn reference_holds(view: &DerivedViewBox, history: &HistoryRef) -> bool {
    let sent = u64::from_str_radix(&history.hash, 16).ok();
    history.count == view.message_count() && sent == Some(view.hash())
}

/// The session a request names (`id`), opened through `ctx`; `None` for a request without one.
async fn session_of(ctx: &Context, id: Option<&str>) -> Result<Option<SessionBox>, Refusal> {
    let Some(id) = id else {
        return Ok(None);
    };
    let Ok(Some(sessions)) = ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
        return Err(Refusal::NoSessions(id.to_owned()));
    };
    sessions
        .open(RString::from(id))
        .await
        .into_result()
        .map(Some)
        .map_err(|error| Refusal::Session {
            session: id.to_owned(),
            message: error.to_string(),
        })
}

/// [`check`] for a request about to leave, with the session looked up through `ctx`; a
/// refusal is logged loudly before it is returned. Answers the request's session (`None` for a
/// request without one), whose derived history is what the request refers to.
pub async fn check_request(
    ctx: &Context,
    request: &GenerateRequest,
) -> Result<Option<SessionBox>, Refusal> {
    let checked = match session_of(ctx, request.session_id.as_deref()).await {
        Ok(Some(session)) => check(&session, request).map(|()| Some(session)),
        Ok(None) if request.history.is_some() => Err(Refusal::ReferenceWithoutSession),
        Ok(None) => Ok(None),
        Err(refusal) => Err(refusal),
    };
    checked.inspect_err(|refusal| {
        ctx.log(dsh_plugin_api::LogLevel::Error, &refusal.to_string());
    })
}
