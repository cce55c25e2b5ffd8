//! The `agentPreset.*` methods' payloads: the presets a session can be made with, a preset's
//! files, a copy to edit, and the choice of a session that has had no turn.

use dsh_protocol::PresetSummary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `agentPreset.list`'s value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PresetList {
    /// Shipped then the user's, by order; a broken one carries its problem.
    pub presets: Vec<PresetSummary>,
    /// What new sessions run when none is named.
    pub default: String,
}

/// A preset named by id (`agentPreset.read`, `agentPreset.remove`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PresetRef {
    pub preset_id: String,
}

/// `agentPreset.copy`'s payload: a new user preset `to` from preset `from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CopyPreset {
    pub from: String,
    pub to: String,
    /// Its display name (default: the source's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `agentPreset.select`'s payload: the preset of a session that has had no turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectPreset {
    pub session_id: String,
    pub preset_id: String,
}
