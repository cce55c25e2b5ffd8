//! "Model-visible means logged", checked where a request leaves for the model (the innermost
//! step of `llm/stream`, and the replay adapter, which answers in its place): the request's
//! messages must be exactly the session's derived history, compared by the log's rolling
//! history hash (kept with the snapshot, so the log side costs nothing), and its config, system
//! prompt and tools must be the last logged `request/header`. A request without a session is
//! not checked: it is not part of any conversation.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use abi_stable::std_types::RString;
use dsh_llm_api::{GenerateRequest, LlmCallConfig, ToolSchema};
use dsh_plugin_api::{Context, lock};
use dsh_session_seam::{SESSIONS, SessionBox, SessionsService};
use serde_json::{Value, json};

/// Events read per window while looking for the last `request/header`.
const HEADER_WINDOW: u64 = 64;

/// The request's history hash, computed the way the log computes its own.
pub fn request_hash(request: &GenerateRequest) -> u64 {
    let values: Vec<Value> = request
        .messages
        .iter()
        .map(|message| {
            json!({"role": message.role, "content": message.content, "source": message.source})
        })
        .collect();
    dsh_session_log::messages_hash(&values)
}

/// Per session: how many events were looked at, and the last `request/header` among them.
type HeaderCache = HashMap<String, (u64, Option<Value>)>;

/// Sessions whose header cache is kept; past this the cache starts over (a long-lived process
/// with many sessions must not grow without bound).
const CACHED_SESSIONS: usize = 256;

/// Per session: the header a request was last verified against, with that request's parts.
type VerifiedCache = HashMap<String, (Value, LlmCallConfig, Option<String>, Vec<ToolSchema>)>;

fn verified_cache() -> &'static Mutex<VerifiedCache> {
    static CACHE: OnceLock<Mutex<VerifiedCache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

fn header_cache() -> &'static Mutex<HeaderCache> {
    static CACHE: OnceLock<Mutex<HeaderCache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// The last logged `request/header`'s header. Only the events appended since the previous
/// check of the session are read, so a long session costs no more than a short one.
fn last_header(session: &SessionBox) -> Option<Value> {
    let id = session.id().into_string();
    let count = session.event_count();
    let (seen, mut header) = lock(header_cache())
        .get(&id)
        .cloned()
        .filter(|(seen, _)| *seen <= count)
        .unwrap_or((0, None));
    let mut start = seen;
    while start < count {
        let end = count.min(start + HEADER_WINDOW);
        for record in session.events(start, end).iter() {
            if record.kind.as_str() == "request/header"
                && let Ok(event) = serde_json::from_str::<Value>(&record.json)
            {
                header = Some(event["data"]["header"].clone());
            }
        }
        start = end;
    }
    let mut cache = lock(header_cache());
    if cache.len() >= CACHED_SESSIONS && !cache.contains_key(&id) {
        cache.clear();
    }
    cache.insert(id, (count, header.clone()));
    header
}

/// `Err` names the session and what differs. A history by reference is checked in constant
/// time against the log's rolling hash; inline messages are hashed the way the log hashes them.
pub fn check(session: &SessionBox, request: &GenerateRequest) -> Result<(), String> {
    let id = session.id();
    let view = session.derive_messages();
    let logged = view.hash();
    if let Some(history) = &request.history {
        if !request.messages.is_empty() {
            return Err(format!(
                "model-visible history of session `{id}` is not its log: the request carries {} \
                 message(s) beside its logged history (something added them after the history \
                 was derived)",
                request.messages.len()
            ));
        }
        let sent = u64::from_str_radix(&history.hash, 16).ok();
        if history.count != view.message_count() || sent != Some(logged) {
            return Err(format!(
                "model-visible history of session `{id}` is not its log: the request refers to \
                 {} message(s) hashing to {}, the log derives {} hashing to {logged:016x}",
                history.count,
                history.hash,
                view.message_count()
            ));
        }
        return check_header(session, request);
    }
    let sent = request_hash(request);
    if logged != sent {
        return Err(format!(
            "model-visible history of session `{id}` is not its log: the request carries {} \
             message(s) hashing to {sent:016x}, the log derives {} hashing to {logged:016x} \
             (something added to or changed the request after it was derived)",
            request.messages.len(),
            session.derive_messages().message_count()
        ));
    }
    check_header(session, request)
}

/// The request's config, system prompt and tools against the last logged `request/header`.
fn check_header(session: &SessionBox, request: &GenerateRequest) -> Result<(), String> {
    let id = session.id();
    let Some(header) = last_header(session) else {
        return Err(format!(
            "session `{id}` has no logged request/header for this request"
        ));
    };
    // A request that matches what the same header last verified needs no new comparison: the
    // tools, the largest part, are compared as structures, without encoding them again.
    let key = id.to_string();
    if lock(verified_cache())
        .get(&key)
        .is_some_and(|(seen, config, system, tools)| {
            *seen == header
                && config.provider == request.config.provider
                && config.model == request.config.model
                && *system == request.system
                && *tools == request.tools
        })
    {
        return Ok(());
    }
    let config_matches = header["config"]["provider"] == json!(request.config.provider)
        && header["config"]["model"] == json!(request.config.model);
    let system_matches = header["system"] == json!(request.system);
    let tools_matches = header["tools"] == json!(request.tools);
    if config_matches && system_matches && tools_matches {
        let mut cache = lock(verified_cache());
        if cache.len() >= CACHED_SESSIONS && !cache.contains_key(&key) {
            cache.clear();
        }
        cache.insert(
            key,
            (
                header,
                request.config.clone(),
                request.system.clone(),
                request.tools.clone(),
            ),
        );
        Ok(())
    } else {
        Err(format!(
            "the request of session `{id}` does not match its logged request/header (config {}, system {}, tools {})",
            if config_matches { "same" } else { "differs" },
            if system_matches { "same" } else { "differs" },
            if tools_matches { "same" } else { "differs" },
        ))
    }
}

/// [`check`] for a request about to leave, with the session looked up through `ctx`; a
/// violation is logged loudly before it is returned.
pub async fn check_request(ctx: &Context, request: &GenerateRequest) -> Result<(), String> {
    let Some(id) = &request.session_id else {
        return Ok(());
    };
    let Ok(Some(sessions)) = ctx.get::<SessionsService>(SESSIONS) else {
        return Ok(());
    };
    let session = match sessions
        .open(RString::from(id.as_str()))
        .await
        .into_result()
    {
        Ok(session) => session,
        Err(error) => return Err(format!("session `{id}` of the request: {error}")),
    };
    check(&session, request).inspect_err(|violation| {
        ctx.log(dsh_plugin_api::LogLevel::Error, violation);
    })
}

/// Replaces a history reference by the messages it names, read from the session's log, for an
/// adapter that puts the request on a wire.
pub async fn materialize(ctx: &Context, request: &mut GenerateRequest) -> Result<(), String> {
    let Some(history) = request.history.take() else {
        return Ok(());
    };
    let id = request
        .session_id
        .clone()
        .ok_or("a request with a history reference names no session")?;
    let sessions = match ctx.get::<SessionsService>(SESSIONS) {
        Ok(Some(sessions)) => sessions,
        _ => {
            return Err(format!(
                "no `sessions` service to read the history of `{id}`"
            ));
        }
    };
    let session = sessions
        .open(RString::from(id.as_str()))
        .await
        .into_result()
        .map_err(|error| format!("session `{id}` of the request: {error}"))?;
    let view = session.derive_messages();
    if view.message_count() < history.count {
        return Err(format!(
            "session `{id}` derives {} message(s), the request refers to {}",
            view.message_count(),
            history.count
        ));
    }
    let mut messages = Vec::new();
    for index in 0..history.count {
        let json = view
            .message(index)
            .into_option()
            .ok_or_else(|| format!("message {index} of session `{id}` is missing"))?;
        let message = serde_json::from_str(&json)
            .map_err(|error| format!("message {index} of session `{id}`: {error}"))?;
        messages.push(message);
    }
    request.messages = messages;
    Ok(())
}
