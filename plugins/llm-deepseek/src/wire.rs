//! The chat-completions request body as DeepSeek (OpenAI-compatible) reads it. Field order
//! follows the reference so captured bodies read the same; optional fields are omitted rather
//! than sent as null, so provider defaults apply.

use serde::{Deserialize, Serialize};

/// The body of `POST {base}/chat/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<WireMessage>,
    /// Always true: the adapter only streams.
    pub stream: bool,
    pub stream_options: StreamOptions,
    /// Top level on the wire (not inside `extra_body`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingToggle>,
    /// `low`, `high` or `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool>,
    /// `none` on a compaction's summary request: its tools stay (the cached prefix holds them)
    /// but the model may not call one. Absent otherwise (the provider's `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Asks for the usage chunk at the end of the stream.
    pub include_usage: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingToggle {
    /// `enabled` or `disabled`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// One entry of `messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum WireMessage {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    /// The adapter always sends a string `content` (empty on tool-call-only and reasoning-only
    /// turns): the live API rejects a null-content assistant message without tool calls, and
    /// such a message would sit in every later request of the session.
    Assistant {
        content: Option<String>,
        /// The turn's reasoning, passed back (required on tool-call turns in thinking mode).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<WireToolCall>>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A user message's content: a plain string when it is text only, ordered parts otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Parts(Vec<UserPart>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// `data:<media type>;base64,<bytes>`.
    pub url: String,
}

/// A finished tool call replayed in history; `arguments` is the model's raw string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: WireFunctionCall,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFunctionCall {
    pub name: String,
    pub arguments: String,
}

/// One entry of `tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTool {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: WireFunction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireFunction {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments, as the tool registry wrote it.
    pub parameters: dsh_protocol::RawJson,
}
