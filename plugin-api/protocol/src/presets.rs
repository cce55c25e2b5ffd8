//! Agent presets as their service, the registry and the clients talk about them: a preset's
//! summary, its files, and the runtime an activated preset answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The tool scope of preset `id`: its rows register their tools there, and the sessions that
/// run it see the tools through it.
pub fn preset_scope(id: &str) -> String {
    format!("preset:{id}")
}

/// Where a preset comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PresetSource {
    /// Compiled into the presets plugin; read-only.
    Shipped,
    /// A folder under the user's preset root; copied from another and edited.
    User,
}

/// One preset as lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PresetSummary {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub order: i64,
    pub source: PresetSource,
    /// Why the preset cannot be used (the file and the field), if it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Whether new sessions run it when none is named.
    #[serde(default)]
    pub default: bool,
}

/// How the sessions of an active preset run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PresetRuntime {
    pub id: String,
    /// The tool scope its sessions' chains hold.
    pub scope: String,
}

/// A preset's files, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PresetFiles {
    pub summary: PresetSummary,
    /// `preset.yml`.
    pub preset: String,
    /// `agent.yml`.
    pub agent: String,
    /// `prompt.md`, when the preset has a fixed prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}
