//! What the host and the session store list: one stored session as a list shows it, one
//! message found by a search, one row of the running tree. The store and the host produce
//! them; the client protocol carries them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One row of `session.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// The working directory the session runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    /// When its log last changed (milliseconds since the epoch).
    pub updated_at: i64,
    /// When its conversation last had a message, a person's or the model's; absent while it
    /// has none. A list orders by it: opening, renaming or configuring a session is no activity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whether it is open in this host.
    pub live: bool,
    /// Whether its running turn waits for a person's answer (an approval, a question).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
    /// Put away by a person: kept, searchable, listed apart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
    /// The parent session of a subagent's session (a child shown under its parent's card,
    /// not in the list of conversations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_of: Option<String>,
    /// The session a fork was seeded from (its conversation up to a point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_of: Option<String>,
    /// Why the stored session cannot be opened (its file does not read as a session): listed
    /// beside the others so one bad file hides nothing. Its `id` is then its folder's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broken: Option<String>,
    /// The agent preset it runs (absent: the plain agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_preset: Option<String>,
}

/// A session whose conversation holds the text searched for: its latest message that does,
/// around the match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub session_id: String,
    /// The message's seq in the session's log.
    pub seq: u64,
    /// Up to a line of the message around the match.
    pub snippet: String,
}

/// The settings document's key that turns a row off (`false`) or on (`true`), in the row's
/// namespace (`tool-web: {$enabled: false}`); the host's loader reads it.
pub const ROW_ENABLED_KEY: &str = "$enabled";

/// `host.plugins`' state of a row the tree has but does not run (its `disabled` is set).
pub const ROW_DISABLED_STATE: &str = "DISABLED";

/// One row of the running tree, as `host.plugins` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginRow {
    pub row: String,
    pub plugin: String,
    /// PENDING, LOADING, ACTIVE, FAILED, UNLOADING or DISPOSED; DISABLED for a row the tree
    /// has but does not run.
    pub state: String,
    /// For a pending row: the services it waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether a client may turn the row off and on (`false` for the rows the client's own
    /// door runs on: turning one off would end the client itself). The door that lists the
    /// rows says so; the host lists every row switchable.
    #[serde(default = "switchable")]
    pub switchable: bool,
}

fn switchable() -> bool {
    true
}
