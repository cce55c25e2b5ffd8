//! "Model-visible means logged", checked where a request leaves for the model (the innermost
//! step of `llm/stream`, and the replay adapter, which answers in its place): the request's
//! messages must be exactly the session's derived history, compared by the log's rolling
//! history hash (kept with the snapshot, so the log side costs nothing), and its config, system
//! prompt and tools must be the last logged `request/header`. A request without a session is
//! not checked: it is not part of any conversation.

use abi_stable::std_types::RString;
use dsh_llm_api::GenerateRequest;
use dsh_plugin_api::Context;
use dsh_session_api::{SESSIONS, SessionBox, SessionsService};
use serde_json::{Value, json};

/// Events read per window while looking back for the last `request/header`.
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

/// The last logged `request/header`'s header, read backwards in windows.
fn last_header(session: &SessionBox) -> Option<Value> {
    let mut end = session.event_count();
    while end > 0 {
        let start = end.saturating_sub(HEADER_WINDOW);
        let window = session.events(start, end);
        for record in window.iter().rev() {
            if record.kind.as_str() == "request/header" {
                let event: Value = serde_json::from_str(&record.json).ok()?;
                return Some(event["data"]["header"].clone());
            }
        }
        end = start;
    }
    None
}

/// `Err` names the session and what differs.
pub fn check(session: &SessionBox, request: &GenerateRequest) -> Result<(), String> {
    let id = session.id();
    let logged = session.derive_messages().hash();
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
    let Some(header) = last_header(session) else {
        return Err(format!(
            "session `{id}` has no logged request/header for this request"
        ));
    };
    let config_matches = header["config"]["provider"] == json!(request.config.provider)
        && header["config"]["model"] == json!(request.config.model);
    let system_matches = header["system"] == json!(request.system);
    let tools_matches = header["tools"] == json!(request.tools);
    if config_matches && system_matches && tools_matches {
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
