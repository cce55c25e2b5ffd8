//! The check of a request that refers to its session's history, read as its text: the system
//! prompt and the tools stay JSON text and are compared with the last logged header written
//! out the same way (once per header, not per request).
//!
//! Why: reading the whole request into its types at every step (the system prompt's and every
//! tool description's strings built, then compared) was the largest single cost of a step
//! against an instant model. Equal texts are equal requests (both are the same types written
//! out by the same serializer), so a request whose texts match passes here; any other request
//! (messages of its own, a header that differs, a session that cannot be opened) is left to
//! [`crate::check_request`], which reads it whole and says exactly what differs.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use dsh_plugin_api::Context;
use dsh_protocol::{HistoryRef, LlmCallConfig, RequestHeaderEvent};
use dsh_sessions_seam::{LatestOf, SessionBox};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A request read without building its text: the fields a check and a route need, and where
/// in the text its system prompt and tools are (their JSON as it came).
#[derive(Debug, Clone)]
pub struct RequestParts {
    pub config: LlmCallConfig,
    pub history: Option<HistoryRef>,
    pub session_id: Option<String>,
    /// Whether it carries messages of its own.
    pub has_messages: bool,
    system: Option<Range<usize>>,
    tools: Option<Range<usize>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Borrowed<'a> {
    config: LlmCallConfig,
    #[serde(default, borrow)]
    system: Option<&'a RawValue>,
    #[serde(default, borrow)]
    messages: Option<&'a RawValue>,
    #[serde(default)]
    history: Option<HistoryRef>,
    #[serde(default, borrow)]
    tools: Option<&'a RawValue>,
    #[serde(default)]
    session_id: Option<String>,
}

impl RequestParts {
    /// Reads the parts of a request's JSON text (one pass, no string of it built).
    pub fn read(text: &str) -> Result<Self, serde_json::Error> {
        let parts: Borrowed<'_> = serde_json::from_str(text)?;
        // Where a part's text sits in `text` (it is a slice of it).
        let span = |raw: &RawValue| {
            let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            start..start + raw.get().len()
        };
        Ok(Self {
            config: parts.config,
            history: parts.history,
            session_id: parts.session_id,
            has_messages: parts
                .messages
                .is_some_and(|messages| messages.get() != "[]"),
            system: parts.system.map(span),
            tools: parts.tools.map(span),
        })
    }
}

/// The last logged header, its system prompt and tools written out as a request writes them.
struct HeaderText {
    provider: String,
    model: String,
    system: Option<String>,
    tools: Option<String>,
}

fn header_text(event: RequestHeaderEvent) -> Option<Arc<HeaderText>> {
    let header = event.header;
    let system = match &header.system {
        Some(system) => Some(serde_json::to_string(system).ok()?),
        None => None,
    };
    let tools = match &header.tools {
        Some(tools) => Some(serde_json::to_string(tools).ok()?),
        None => None,
    };
    Some(Arc::new(HeaderText {
        provider: header.config.provider,
        model: header.config.model,
        system,
        tools,
    }))
}

/// The session of a request (`parts` read from `text`) that refers to its logged history and
/// matches its logged header text for text; `None` when that is not so or cannot be told this
/// way (the whole check decides then).
pub async fn check_unchanged(
    ctx: &Context,
    parts: &RequestParts,
    text: &str,
) -> Option<SessionBox> {
    let history = parts.history.as_ref()?;
    if parts.has_messages {
        return None;
    }
    let session = crate::session_of(ctx, parts.session_id.as_deref())
        .await
        .ok()
        .flatten()?;
    if !crate::reference_holds(&session.derive_messages(), history) {
        return None;
    }
    static TEXTS: OnceLock<LatestOf<RequestHeaderEvent, Option<Arc<HeaderText>>>> = OnceLock::new();
    let header = TEXTS
        .get_or_init(LatestOf::default)
        .of_derived(&session, header_text)
        .flatten()?;
    let config = header.provider == parts.config.provider && header.model == parts.config.model;
    let part = |span: &Option<Range<usize>>| match span {
        Some(span) => text.get(span.clone()).map(Some),
        None => Some(None),
    };
    let (Some(sent_system), Some(sent_tools)) = (part(&parts.system), part(&parts.tools)) else {
        return None;
    };
    let system = sent_system == header.system.as_deref();
    // A request leaves out an empty tool list; a header may log it as `[]`.
    let tools = match (sent_tools, header.tools.as_deref()) {
        (None, None | Some("[]")) => true,
        (Some(sent), Some(logged)) => sent == logged,
        _ => false,
    };
    (config && system && tools).then_some(session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{GenerateRequest, Message, ToolSchema};

    fn written(request: &GenerateRequest) -> String {
        serde_json::to_string(request).expect("a request writes out")
    }

    #[test]
    fn the_parts_point_at_the_system_prompt_and_tools_as_written() {
        let mut request = GenerateRequest::new(
            LlmCallConfig {
                provider: "deepseek-official".to_owned(),
                ..serde_json::from_str(r#"{"provider":"p","model":"deepseek-chat"}"#)
                    .expect("a config")
            },
            Vec::new(),
        );
        request.system = Some("Say \"hi\"\nand stop.".to_owned());
        request.tools = vec![
            serde_json::from_str::<ToolSchema>(
                r#"{"name":"noop","description":"does nothing","parameters":{"type":"object"}}"#,
            )
            .expect("a tool schema"),
        ];
        request.history = Some(HistoryRef {
            count: 3,
            hash: "00000000000000ff".to_owned(),
        });
        request.session_id = Some("s1".to_owned());
        let text = written(&request);
        let parts = RequestParts::read(&text).expect("parts");
        assert_eq!(parts.config.provider, "deepseek-official");
        assert_eq!(parts.session_id.as_deref(), Some("s1"));
        assert_eq!(parts.history.as_ref().map(|history| history.count), Some(3));
        assert!(!parts.has_messages);
        let system = parts.system.clone().map(|span| &text[span]);
        assert_eq!(
            system,
            serde_json::to_string(&request.system.clone().expect("a system prompt"))
                .ok()
                .as_deref()
        );
        let tools = parts.tools.clone().map(|span| &text[span]);
        assert_eq!(tools, serde_json::to_string(&request.tools).ok().as_deref());
    }

    #[test]
    fn messages_of_its_own_are_noticed_and_absent_parts_are_none() {
        let config: LlmCallConfig =
            serde_json::from_str(r#"{"provider":"p","model":"m"}"#).expect("a config");
        let bare = written(&GenerateRequest::new(config.clone(), Vec::new()));
        let parts = RequestParts::read(&bare).expect("parts");
        assert!(!parts.has_messages && parts.system.is_none() && parts.tools.is_none());
        let with = written(&GenerateRequest::new(
            config,
            vec![Message::user(
                "m1",
                vec![dsh_protocol::ContentBlock::text("hello")],
                dsh_protocol::MessageSource::user(),
            )],
        ));
        assert!(RequestParts::read(&with).expect("parts").has_messages);
        assert!(RequestParts::read("{\"config\":1}").is_err());
    }
}
