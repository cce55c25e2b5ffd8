//! Prompt assembly as the loop and the prompt's contributors talk about it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::content::{MessageSource, SnapshotSection};

/// What a prompt is assembled for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptRequest {
    pub session: String,
    pub cwd: String,
    /// The tool scope chain the request's tools are seen from.
    #[serde(default)]
    pub scope: Vec<String>,
    /// The route of the request (the `{{provider}}` and `{{model}}` variables).
    pub provider: String,
    pub model: String,
}

/// One section of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptSection {
    /// Unique among the sections; equal orders sort by it.
    pub id: String,
    /// Identity -100, persona 0, tool guidance 100-199.
    pub order: i64,
    /// The text, with `{{variable}}` references.
    pub text: String,
}

/// A snapshot the loop appends to the history (as a plugin-sourced user message) when its
/// text changed, instead of rewriting the system prompt: the prefix a provider caches stays
/// the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromptContext {
    pub key: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<SnapshotSection>>,
    /// The source the message is logged under, for a contributor whose messages have a kind of
    /// their own (a skill catalog); absent: the system prompt's snapshot source with `key`.
    /// Such a contributor answers its context only when it changed, reading the log itself:
    /// the loop remembers only its own snapshots across turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<MessageSource>,
}

/// An assembled prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssembledPrompt {
    pub system: String,
    #[serde(default)]
    pub contexts: Vec<PromptContext>,
}
