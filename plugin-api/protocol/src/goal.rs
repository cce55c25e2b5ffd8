//! Goals: one revisioned objective per session that the agent keeps taking turns towards. The
//! durable record is the `goal/change` event (a full snapshot after each mutation, or a
//! revisioned clear tombstone), so a session's log alone says what its goal is; a goal round is
//! a `user/message` whose source is `goal{goalId, revision, round}`. What a client shows (the
//! [`GoalView`]) adds the rounds started and whether this process may continue it on its own
//! (`activation`, never logged: a reopened session's goal waits for a person to resume it).
//! The requests a person makes ([`GoalAction`]) compare and set against an exact revision.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::{EventData, event_data};

/// The version of the `goal/change` data this vocabulary writes and reads.
pub const GOAL_CHANGE_VERSION: u32 = 1;

/// Where a goal stands. Activation (whether this process goes on by itself) is separate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GoalPhase {
    Active,
    Paused,
    Blocked,
    Complete,
}

impl GoalPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Blocked => "blocked",
            Self::Complete => "complete",
        }
    }
}

/// Why a goal is blocked: a lower-kebab-case code and a sentence for people and the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GoalBlockReason {
    pub code: String,
    pub message: String,
}

/// One exact revision of one goal (what a compare-and-set names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GoalRef {
    pub id: String,
    pub revision: u64,
}

/// The whole durable state of a goal after a mutation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalSnapshot {
    pub id: String,
    /// Every mutation adds one.
    pub revision: u64,
    pub objective: String,
    pub phase: GoalPhase,
    /// Present exactly while `phase` is `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<GoalBlockReason>,
    /// How many goal rounds may start in all.
    pub max_goal_rounds: u64,
}

/// The verbs of the `goal/change` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GoalOperation {
    Create,
    Edit,
    Pause,
    Resume,
    Complete,
    Block,
    Clear,
}

impl GoalOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Edit => "edit",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Complete => "complete",
            Self::Block => "block",
            Self::Clear => "clear",
        }
    }
}

/// `goal/change`: one accepted mutation, as the whole goal after it or a clear tombstone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalChangeEvent {
    pub version: u32,
    pub operation: GoalOperation,
    /// The goal after the mutation (absent for a clear).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalSnapshot>,
    /// Rounds started so far (absent for a clear).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_started: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
    /// For a clear: the goal cleared, at the revision the clear took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared: Option<GoalRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared_at: Option<i64>,
}
event_data!(GoalChangeEvent, crate::kinds::GOAL_CHANGE);

/// Whether this process continues an active goal by itself. Never logged: a session opened
/// again (a restart, a resume) has its goal disarmed until someone resumes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GoalActivation {
    Armed,
    Disarmed,
}

/// A session's current goal as clients and the model see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalView {
    #[serde(flatten)]
    pub goal: GoalSnapshot,
    /// The highest round started for this goal.
    pub rounds_started: u64,
    pub created_at: i64,
    pub updated_at: i64,
    pub activation: GoalActivation,
}

/// What a person (a client, the `/goal` command) asks of a session's goal. Every action but
/// `create` names the exact revision it acts on; a stale one is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "action",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum GoalAction {
    Create {
        objective: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_goal_rounds: Option<u64>,
    },
    Edit {
        goal_id: String,
        revision: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        objective: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_goal_rounds: Option<u64>,
    },
    Pause {
        goal_id: String,
        revision: u64,
    },
    Resume {
        goal_id: String,
        revision: u64,
    },
    Complete {
        goal_id: String,
        revision: u64,
    },
    Clear {
        goal_id: String,
        revision: u64,
    },
}

/// What `goal/changed` tells listeners: the operation, the revision it wrote, and the goal
/// after it (absent after a clear).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalChanged {
    pub operation: GoalOperation,
    #[serde(rename = "ref")]
    pub reference: GoalRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<GoalView>,
}

/// The source of a goal round's `user/message`: which goal, at which revision, which round
/// (written as `{kind: "goal", goalId, revision, round}`, a source kind of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalRoundSource {
    pub goal_id: String,
    pub revision: u64,
    pub round: u64,
}

/// The `goal` source kind as the log writes it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoggedGoalSource {
    kind: String,
    goal_id: String,
    revision: u64,
    round: u64,
}

impl GoalRoundSource {
    /// As a message's source.
    pub fn to_source(&self) -> crate::MessageSource {
        crate::MessageSource::Other(serde_json::json!({
            "kind": "goal",
            "goalId": self.goal_id,
            "revision": self.revision,
            "round": self.round,
        }))
    }

    /// The goal round `message` opens, when its source is one.
    pub fn of(message: &crate::Message) -> Option<Self> {
        let crate::MessageSource::Other(value) = &message.source else {
            return None;
        };
        let source = LoggedGoalSource::deserialize(value).ok()?;
        (source.kind == "goal").then_some(Self {
            goal_id: source.goal_id,
            revision: source.revision,
            round: source.round,
        })
    }
}
