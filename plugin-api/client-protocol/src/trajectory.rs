//! A session as a timeline (the page's Trajectory view): per turn its prompt, time and outcome,
//! per step its time, first token, tokens and cache share, retries, and the calls it made with
//! their status and time. Made from the log by the server, so every client reads the same.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `session.trajectory`'s value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trajectory {
    pub session_id: String,
    pub turns: Vec<TrajectoryTurn>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryTurn {
    pub turn: u64,
    /// The start of the person's message that opened it, if one did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt: String,
    /// When it started (epoch milliseconds).
    pub started_at: i64,
    /// Until its end; absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// How it ended (`completed`, `aborted`, `error`, ...); absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    pub steps: Vec<TrajectoryStep>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryStep {
    pub step: u64,
    pub started_at: i64,
    /// Until its message; absent while the model answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<u64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    /// Characters of the answer's text and of its reasoning.
    pub text_chars: u64,
    pub reasoning_chars: u64,
    /// Requests the retry policy sent again.
    pub retries: u64,
    pub calls: Vec<TrajectoryCall>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryCall {
    pub call_id: String,
    pub name: String,
    /// What the call is about, on one line (the command, the path, the pattern).
    pub summary: String,
    /// Absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}
