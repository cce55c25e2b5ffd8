//! What DeepSeek (OpenAI-compatible) answers: the `chat.completion.chunk` payloads of a stream
//! and the error body of a non-2xx response. Every field is optional and unknown fields are
//! ignored, since servers differ in what they send (usage-only chunks, `null` for absent
//! values, extra provider fields); a field of the wrong type makes the payload malformed.

use serde::Deserialize;

/// One `data:` payload of a stream.
#[derive(Debug, Default, Deserialize)]
pub struct WireChunk {
    #[serde(default)]
    pub choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireChoice {
    #[serde(default)]
    pub delta: Option<WireDelta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireDelta {
    #[serde(default)]
    pub content: Option<String>,
    /// Thinking mode's reasoning, streamed before the text.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<WireCallDelta>>,
}

/// A fragment of one tool call; the first fragment of a call carries its id and name.
#[derive(Debug, Default, Deserialize)]
pub struct WireCallDelta {
    /// The provider's tool index (absent on lenient servers).
    #[serde(default)]
    pub index: Option<i64>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<WireFunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireFunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    /// The model's raw argument text; never parsed by the adapter.
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Token counts as the provider spells them.
#[derive(Debug, Default, Deserialize)]
pub struct WireUsage {
    /// Includes cache hits.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// DeepSeek's spelling of the cache hits.
    #[serde(default)]
    pub prompt_cache_hit_tokens: Option<u64>,
    /// OpenAI's spelling of the cache hits.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct CompletionDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

/// The body of a non-2xx response: `{"error": {...}}`.
#[derive(Debug, Default, Deserialize)]
pub struct WireErrorBody {
    #[serde(default)]
    pub error: Option<WireError>,
}

/// The error object. `code` is a string on DeepSeek and a number on some gateways, so the
/// scalars stay JSON values and are read as text.
#[derive(Debug, Default, Deserialize)]
pub struct WireError {
    #[serde(default)]
    pub message: Option<serde_json::Value>,
    #[serde(default, rename = "type")]
    pub kind: Option<serde_json::Value>,
    #[serde(default)]
    pub code: Option<serde_json::Value>,
}
