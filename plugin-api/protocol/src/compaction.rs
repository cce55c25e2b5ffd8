//! The data of the `compaction/*` events, as the reference logs them: a compaction opens with
//! `compaction/start`, a successful summary records its provenance in `compaction/summary`, the
//! summary replaces the shadowed span of the surface (a `user/message` with a `replace` surface
//! op), and `compaction/end` closes it, with the error when it failed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::{EventData, event_data};
use crate::{ContentBlock, TokenUsage};

/// `compaction/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionStartEvent {
    pub compaction_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_command_id: Option<String>,
    /// The turn it runs in; `None` for a manual compaction between turns.
    pub turn: Option<u64>,
}
event_data!(CompactionStartEvent, crate::kinds::COMPACTION_START);

/// The inclusive range of surface seqs a replace shadows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShadowedRange {
    pub start: u64,
    pub end: u64,
}

/// `compaction/summary`: the summary and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryEvent {
    pub compaction_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_command_id: Option<String>,
    pub summary: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Vec<ContentBlock>>,
    /// The summary came from a model stream (not a replay of a recorded one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_stream_call: Option<bool>,
    pub shadowed_range: ShadowedRange,
    pub shadowed_seqs: Vec<u64>,
    /// The estimated tokens of the shadowed span.
    pub shadowed_token_count: u64,
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}
event_data!(CompactionSummaryEvent, crate::kinds::COMPACTION_SUMMARY);

/// `compaction/end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEndEvent {
    pub compaction_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_command_id: Option<String>,
    pub turn: Option<u64>,
    /// Why it failed (the log is left as it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
event_data!(CompactionEndEvent, crate::kinds::COMPACTION_END);

/// The reference's framing of a summary that replaces a span: the opening text, the summary's
/// blocks, then the closing tag.
pub const SUMMARY_PREAMBLE: &str = "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. Treat the captured context as established background and build on it without restating it. Continue the task directly from the messages that follow, without acknowledging this checkpoint.\n\n<compacted-summary>";
pub const SUMMARY_CLOSE: &str = "</compacted-summary>";

/// The token meter of a session: what its next request would carry against its model's
/// window. `tokens` is the provider's count of the latest answered request (`measured`) plus
/// an estimate of what was appended since (`estimatedSince`), or an estimate of everything
/// before the provider counted anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenMeter {
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<u64>,
    pub estimated_since: u64,
    /// The model's context window, when the catalog or the row names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Of the latest request's input, the tokens the provider served from its cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<u64>,
}
