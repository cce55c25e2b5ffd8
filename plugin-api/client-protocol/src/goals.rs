//! The goal methods: a person reads a session's goal and acts on it (`goal.get`,
//! `goal.create`, `goal.edit`, `goal.pause`, `goal.resume`, `goal.complete`, `goal.clear`).
//! Every action but `create` names the exact revision it acts on, as the goal projection
//! (`session/projection` key `goal`) showed it; a stale one is refused.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `goal.create`'s params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalCreate {
    pub session_id: String,
    pub objective: String,
    /// How many goal rounds may start in all (1 to 256; 256 without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_goal_rounds: Option<u64>,
}

/// `goal.edit`'s params: a new objective, a new round cap, or both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalEdit {
    pub session_id: String,
    pub goal_id: String,
    pub revision: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_goal_rounds: Option<u64>,
}

/// The params of `goal.pause`, `goal.resume`, `goal.complete` and `goal.clear`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalTarget {
    pub session_id: String,
    pub goal_id: String,
    pub revision: u64,
}

/// A session's goal after a goal method (`null` when it has none, or after a clear); also the
/// value of the `goal` projection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GoalState {
    pub goal: Option<dsh_protocol::GoalView>,
}
