//! Building the HTTP request for one model call: URL, headers and body.

use dsh_llm_kit::offload_request_images;
use dsh_protocol::{
    FailureCode, GenerateRequest, LlmFailure, Modality, Purpose, content_has_image,
};

use crate::config::{AdapterConfig, ReasoningEffort, Thinking};
use crate::serialize::{ImageReader, image_messages, text_messages, unsupported};
use crate::wire::{
    ChatRequest, StreamOptions, ThinkingToggle, WireFunction, WireMessage, WireTool,
};

/// Per-installation and per-call identities that go into the attribution headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderIds {
    /// The anonymous user id of this harness home (`x-deepseek-harness-user-id`).
    pub user_id: String,
}

/// Everything the HTTP client needs to send one call.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    /// `POST` target: `{base}/chat/completions`.
    pub url: String,
    /// Lower-case names, in sending order.
    pub headers: Vec<(String, String)>,
    pub body: ChatRequest,
}

impl WireRequest {
    /// The JSON body bytes.
    pub fn body_bytes(&self) -> Vec<u8> {
        // Cannot fail: every map key is a string and no value has a fallible Serialize
        // (serde_json writes non-finite floats as null rather than failing).
        serde_json::to_vec(&self.body).unwrap_or_default()
    }

    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Judges a key as resolved from the credentials service or the environment (`None` when
/// nothing was found). Surrounding whitespace is trimmed silently; anything a header cannot
/// carry verbatim (only printable ASCII without spaces can) is refused here, with a message that
/// names where to fix it and never echoes the key. For an endpoint that takes none
/// (`keyRequired: false`), no key found is the empty key: no authorization header is sent.
pub fn check_api_key(config: &AdapterConfig, raw: Option<&str>) -> Result<String, LlmFailure> {
    let env = &config.api_key_env;
    if !config.key_required && raw.is_none_or(|raw| raw.trim().is_empty()) {
        return Ok(String::new());
    }
    let Some(raw) = raw.filter(|raw| !raw.is_empty()) else {
        return Err(LlmFailure::new(
            FailureCode::MissingCredential,
            format!(
                "llm-deepseek: no API key for provider route \"{}\"; store {env} through the credentials service (the web Models page writes it), or export {env} in the launching environment",
                config.provider
            ),
        ));
    };
    let key = raw.trim();
    if key.is_empty() {
        return Err(LlmFailure::new(
            FailureCode::InvalidCredential,
            format!(
                "llm-deepseek: the API key resolved from {env} is blank; set {env} to the raw key (the web Models page writes it) or export it in the launching environment"
            ),
        ));
    }
    if !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(LlmFailure::new(
            FailureCode::InvalidCredential,
            format!(
                "llm-deepseek: the API key resolved from {env} contains characters no HTTP header can carry; set {env} to the raw key alone (the web Models page writes it)"
            ),
        ));
    }
    Ok(key.to_owned())
}

fn unsupported_effort(message: String) -> LlmFailure {
    LlmFailure::new(
        FailureCode::Other("UNSUPPORTED_REASONING_EFFORT".into()),
        message,
    )
}

/// The one legal thinking/effort pair for this call; `off` becomes `thinking: disabled` and is
/// never sent as an effort.
fn resolve_thinking(
    config: &AdapterConfig,
    request: &GenerateRequest,
) -> Result<(Option<Thinking>, Option<ReasoningEffort>), LlmFailure> {
    // Titles are short and cheap; thinking would only add latency.
    if request.purpose == Some(Purpose::SessionTitle) {
        return Ok((Some(Thinking::Disabled), None));
    }
    let effort = match &request.config.reasoning_effort {
        Some(id) => Some(ReasoningEffort::parse(id).ok_or_else(|| {
            unsupported_effort(format!(
                "DeepSeek does not support reasoning effort \"{id}\""
            ))
        })?),
        None => config.reasoning_effort,
    };
    if config.thinking == Some(Thinking::Disabled)
        && let Some(effort) = effort.filter(|effort| *effort != ReasoningEffort::Off)
    {
        return Err(unsupported_effort(format!(
            "DeepSeek deployment does not support reasoning effort \"{}\"",
            effort.as_str()
        )));
    }
    Ok(match effort {
        Some(ReasoningEffort::Off) => (Some(Thinking::Disabled), None),
        Some(effort) => (Some(Thinking::Enabled), Some(effort)),
        None => (config.thinking, None),
    })
}

/// Builds the request for one call without images (history holding an image fails with
/// `UNSUPPORTED_CONTENT`, as it does when no attachment service is mounted).
pub fn build_request(
    config: &AdapterConfig,
    request: &GenerateRequest,
    key: &str,
    ids: &HeaderIds,
) -> Result<WireRequest, LlmFailure> {
    let no_images = |_: &dsh_protocol::ImageAttachment| -> Result<Vec<u8>, LlmFailure> {
        Err(unsupported(
            "DeepSeek image conversion requires the durable attachment service.",
        ))
    };
    build_request_with_images(config, request, key, ids, &no_images)
}

/// Builds the request for one call, reading image bytes through `images` when the history holds
/// images (the model must be catalogued as accepting them).
pub fn build_request_with_images(
    config: &AdapterConfig,
    request: &GenerateRequest,
    key: &str,
    ids: &HeaderIds,
    images: ImageReader<'_>,
) -> Result<WireRequest, LlmFailure> {
    let model = &request.config.model;
    let has_images = request
        .messages
        .iter()
        .any(|message| content_has_image(&message.content));
    if has_images
        && !config
            .catalog_entry(model)
            .is_some_and(|entry| entry.accepts(Modality::Image))
    {
        return Err(unsupported(format!(
            "DeepSeek model \"{model}\" does not accept image input."
        )));
    }
    let key = check_api_key(config, Some(key))?;

    let pass_reasoning = config.compat.reasoning_content;
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        messages.push(WireMessage::System {
            content: system.clone(),
        });
    }
    if has_images {
        // Oldest images give way first, decided from metadata before any bytes are read.
        let history =
            offload_request_images(&request.messages, Some(config.max_request_image_bytes));
        messages.extend(image_messages(&history, images, pass_reasoning)?);
    } else {
        messages.extend(text_messages(&request.messages, pass_reasoning));
    }

    let (thinking, effort) = resolve_thinking(config, request)?;
    let max_tokens = request.config.max_tokens.or_else(|| {
        config.compat.max_tokens_default.then(|| {
            config
                .catalog_entry(model)
                .and_then(|entry| entry.max_tokens)
                .unwrap_or(config.max_tokens)
        })
    });
    let body = ChatRequest {
        model: model.clone(),
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        thinking: thinking
            .filter(|_| config.compat.thinking)
            .map(|thinking| ThinkingToggle {
                kind: thinking.as_str().into(),
            }),
        reasoning_effort: effort
            .filter(|_| config.compat.reasoning_effort)
            .map(|effort| effort.as_str().into()),
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                kind: "function".into(),
                function: WireFunction {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                },
            })
            .collect(),
        // A summary is text: the tools are kept for the provider's prefix cache, and calling one
        // is forbidden, so a model cannot end the compaction with a call nobody would run.
        tool_choice: (request.purpose == Some(Purpose::Compaction) && !request.tools.is_empty())
            .then(|| "none".to_owned()),
        temperature: request.config.temperature,
        max_tokens,
        stop: request.config.stop.clone(),
    };

    let mut headers = crate::discovery::authorization(&key);
    headers.extend([
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "text/event-stream".to_owned()),
        ("user-agent".to_owned(), config.identity.user_agent()),
    ]);
    if config.compat.harness_headers {
        if !ids.user_id.is_empty() {
            headers.push(("x-deepseek-harness-user-id".into(), ids.user_id.clone()));
        }
        if let Some(session) = &request.session_id {
            headers.push(("x-deepseek-harness-session-id".into(), session.clone()));
        }
        if request.purpose == Some(Purpose::Compaction) {
            headers.push(("x-deepseek-harness-compact".into(), "1".into()));
        }
    }
    Ok(WireRequest {
        url: config.endpoint(),
        headers,
        body,
    })
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
