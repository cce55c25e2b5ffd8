//! The title request: one user message framing the first human message as JSON (so nothing in
//! it can pass for the instruction around it), the recorded instruction as the system prompt,
//! thinking off and a small output cap; and the `session/title-llm-request` event that logs it
//! whole before it leaves.

use dsh_plugin_api::serde::Serialize;
use dsh_protocol::{
    ContentBlock, GenerateRequest, LlmCallConfig, Message, MessageSource, PluginSource, Purpose,
    SessionTitleLlmRequestEvent, TitleRoute,
};

use crate::config::LlmTitleConfig;

/// The title provider the requests and titles are logged under (the reference's name, so logs
/// of either read the same).
pub(crate) const TITLE_PROVIDER: &str = "session-title-first-prompt-llm";

/// The plugin the request's message is attributed to, as the reference records it.
const MESSAGE_PLUGIN: &str = "dsh-session-title-llm";

/// The effort id every adapter reads as "no thinking": a title needs none.
const NO_THINKING: &str = "off";

/// The instruction, as the reference's recorded sessions show it word for word (the model
/// sees the same request whichever harness asks).
fn system_prompt(words: usize, cjk_characters: usize) -> String {
    format!(
        "Create a concise title for an AI coding-assistant session from the supplied human messages.\n\
         Return only the title on one line, **in plain text of natural language**, with no quotes, prefix, explanation, Markdown, XML, or terminal control codes. No code is allowed.\n\
         Use the language of the messages.\n\
         Aim for about {words} words in non-CJK languages or {cjk_characters} CJK characters."
    )
}

/// One human message as the request frames it.
#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Framed<'a> {
    seq: u64,
    text: &'a str,
}

/// The user message's text: the messages as a JSON array after one line saying what it is.
fn framed(seq: u64, text: &str) -> String {
    let array = serde_json::to_string(&[Framed { seq, text }]).unwrap_or_default();
    format!("Generate the session title from this JSON array of human messages:\n{array}")
}

/// Why no request is made.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RequestError {
    #[error("the first message frames to {bytes} bytes, over llm.maxInputBytes ({max})")]
    TooLong { bytes: usize, max: usize },
}

/// The request for a title of the human message `seq` saying `text`, sent to `route`, and the
/// event that logs it.
pub(crate) fn build(
    config: &LlmTitleConfig,
    route: TitleRoute,
    seq: u64,
    text: &str,
) -> Result<(SessionTitleLlmRequestEvent, GenerateRequest), RequestError> {
    let input = framed(seq, text);
    if input.len() > config.max_input_bytes {
        return Err(RequestError::TooLong {
            bytes: input.len(),
            max: config.max_input_bytes,
        });
    }
    let source = MessageSource::Plugin(PluginSource {
        plugin: Some(MESSAGE_PLUGIN.to_owned()),
        ..PluginSource::default()
    });
    let message = Message::user(
        dsh_protocol::fresh_uuid(),
        vec![ContentBlock::text(input)],
        source,
    );
    let system = system_prompt(config.target_words, config.target_cjk_characters);
    let mut call = LlmCallConfig::new(route.provider.as_str(), route.model.as_str());
    call.reasoning_effort = Some(NO_THINKING.to_owned());
    call.max_tokens = Some(config.max_output_tokens);
    let request = GenerateRequest {
        config: call,
        system: Some(system.clone()),
        messages: vec![message.clone()],
        history: None,
        tools: Vec::new(),
        // No session: a session's request is checked to be exactly its logged conversation,
        // and this one is not part of it. The event below is its record instead.
        session_id: None,
        purpose: Some(Purpose::SessionTitle),
    };
    let event = SessionTitleLlmRequestEvent {
        title_provider: TITLE_PROVIDER.to_owned(),
        message_seqs: vec![seq],
        route,
        system,
        messages: vec![message],
        max_tokens: config.max_output_tokens,
    };
    Ok((event, request))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn route() -> TitleRoute {
        TitleRoute {
            provider: "title-replay".into(),
            model: "title-model".into(),
        }
    }

    /// The `data` of the recorded `session/title-llm-request` (seq 9 of the reference's
    /// `session-title-after-turn` session), with its output cap at this row's default.
    fn recorded() -> Value {
        json!({
            "titleProvider": "session-title-first-prompt-llm",
            "messageSeqs": [4],
            "route": {"provider": "title-replay", "model": "title-model"},
            "system": "Create a concise title for an AI coding-assistant session from the supplied human messages.\nReturn only the title on one line, **in plain text of natural language**, with no quotes, prefix, explanation, Markdown, XML, or terminal control codes. No code is allowed.\nUse the language of the messages.\nAim for about 5 words in non-CJK languages or 10 CJK characters.",
            "messages": [{
                "content": [{"type": "text", "text": "Generate the session title from this JSON array of human messages:\n[{\"seq\":4,\"text\":\"Reply with exactly TITLE_DONE. Do not use tools.\"}]"}],
                "source": {"kind": "plugin", "plugin": "dsh-session-title-llm"},
                "role": "user",
                "id": "626a7388-f08d-4d7b-b6c1-51056828182e"
            }],
            "maxTokens": 64
        })
    }

    #[test]
    fn the_logged_request_is_the_recorded_one() {
        let config = LlmTitleConfig::default();
        let (event, _) = build(
            &config,
            route(),
            4,
            "Reply with exactly TITLE_DONE. Do not use tools.",
        )
        .unwrap();
        let mut logged = serde_json::to_value(&event).unwrap();
        let id = logged["messages"][0]["id"].take();
        let mut expected = recorded();
        expected["messages"][0]["id"] = Value::Null;
        assert_eq!(logged, expected);
        let id = id.as_str().unwrap();
        assert_eq!((id.len(), &id[14..15]), (36, "4"));
        // The recorded line reads back as the same event.
        let back: SessionTitleLlmRequestEvent = serde_json::from_value(recorded()).unwrap();
        assert_eq!(back.message_seqs, [4]);
        assert_eq!(back.route, route());
    }

    #[test]
    fn the_request_thinks_not_and_names_no_session() {
        let config = LlmTitleConfig::default();
        let (event, request) = build(&config, route(), 7, "fix it").unwrap();
        assert_eq!(request.config.provider, "title-replay");
        assert_eq!(request.config.model, "title-model");
        assert_eq!(request.config.reasoning_effort.as_deref(), Some("off"));
        assert_eq!(request.config.max_tokens, Some(64));
        assert_eq!(request.purpose, Some(Purpose::SessionTitle));
        assert_eq!(request.session_id, None);
        assert!(request.tools.is_empty() && request.history.is_none());
        assert_eq!(request.system.as_deref(), Some(event.system.as_str()));
        assert_eq!(request.messages, event.messages);
    }

    #[test]
    fn quotes_and_newlines_stay_inside_the_json() {
        let text = framed(2, "say \"hi\"\nthen \\ stop");
        assert_eq!(
            text,
            "Generate the session title from this JSON array of human messages:\n[{\"seq\":2,\"text\":\"say \\\"hi\\\"\\nthen \\\\ stop\"}]"
        );
    }

    #[test]
    fn a_message_over_the_input_budget_is_not_sent() {
        let config = LlmTitleConfig {
            max_input_bytes: 100,
            ..LlmTitleConfig::default()
        };
        let error = build(&config, route(), 1, &"x".repeat(100)).unwrap_err();
        assert!(matches!(error, RequestError::TooLong { max: 100, .. }));
        assert!(build(&config, route(), 1, "short").is_ok());
    }
}
