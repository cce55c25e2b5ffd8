//! What a session cost, as a page shows it: per turn (how long, how soon the first token came,
//! how fast the answer streamed) and for the whole session (turns, steps, time in the model and
//! in tools, tokens in and out and how many the provider served from its cache).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One finished turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStats {
    /// From the turn's start to its end.
    pub duration_ms: u64,
    /// From the turn's start to the model's first token (text or reasoning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    pub output_tokens: u64,
    /// Output tokens per second of streaming (first token to message, summed over the steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_second: Option<f64>,
}

/// The whole session so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    pub turns: u64,
    pub steps: u64,
    /// Time from each step's start to its message, summed.
    pub model_ms: u64,
    /// Time from each tool call to its result, summed.
    pub tool_ms: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens the provider read from its prompt cache (part of `input_tokens`).
    pub cache_read_tokens: u64,
}
