//! Agents as the registry, its drivers and its observers talk about them: how one is created,
//! what the registry lists, and the data of the `agent/*` notifications.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::content::Message;
use crate::failure::LlmFailure;

/// How to create an agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptions {
    /// The absolute working directory of its tools (required).
    pub cwd: String,
    /// Continue this session (live or stored) instead of creating one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// The id of the new session (a fresh one when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model route; empty: no model (its turns end `NO_MODEL`).
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    /// The tool scope chain, farthest ancestor first (empty: the global view).
    #[serde(default)]
    pub scope: Vec<String>,
    /// A child agent's parent session (written in the child's header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// 0 for a top-level agent; a child is one deeper than its parent.
    #[serde(default)]
    pub delegation_depth: u64,
    /// Seeds a new session with the first events of a live one (a forked child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<AgentSeed>,
    /// The agent preset a new session runs (written in its header); absent: the session runs
    /// the plain agent, or, on resume, the preset its log names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_preset: Option<String>,
}

/// The events a new agent's session starts from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSeed {
    /// The live session copied from.
    pub session: String,
    /// How many of its first events are copied.
    pub prefix_len: u64,
}

/// Whether an agent's driver is running turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AgentStatus {
    Idle,
    Running,
}

/// One live agent, as the registry lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentSummary {
    /// The agent's id (its session's id).
    pub id: String,
    pub status: AgentStatus,
    pub cwd: String,
    pub provider: String,
    pub model: String,
    /// The agent preset it runs (absent: the plain agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_preset: Option<String>,
    /// Why it does not run the preset its log names (a preset renamed or removed since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset_note: Option<String>,
}

/// What a session's inbox holds, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxListing {
    /// Messages that start turns, one per turn.
    pub next_turn: Vec<Message>,
    /// Messages that join the running turn at its next step boundary.
    pub next_step: Vec<Message>,
}

/// A change to one message waiting in a session's inbox (`session.updateQueue`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum QueueAction {
    /// Dropped unrun (logged as a cancelled splice).
    Remove,
    /// Moved from the next-turn list into the running turn, at its next step boundary.
    Steer,
    /// Its content replaced; it keeps its id and its place.
    Edit { content: Vec<crate::ContentBlock> },
}

/// Why an agent's session started in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionStartSource {
    /// A new session.
    Startup,
    /// A session continued.
    Resume,
}

/// The data of an `agent/*` notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AgentNoticeData {
    /// `agent/created`: published, after its session was created or loaded.
    Created,
    /// `agent/disposed`: removed, after its driver went quiet.
    Disposed,
    /// `agent/status`: `running` before its first `turn/start`, `idle` after its last
    /// `turn/end`.
    Status { status: AgentStatus },
    /// `agent/session-start`: once, right after `agent/created`. `delegated`: the session is a
    /// child another agent started (its policies come from the delegation, not the host's
    /// defaults).
    SessionStart {
        source: SessionStartSource,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        delegated: bool,
    },
    /// `agent/inbox/inserted`: a message was queued (after its splice was logged).
    InboxInserted { message: Message },
    /// `agent/inbox/claimed`: a queued message entered turn `turn`.
    InboxClaimed { message: Message, turn: u64 },
    /// `agent/inbox/discarded`: a cancel removed a message unrun.
    InboxDiscarded { message: Message },
    /// `agent/route`: the route of its next turns was set (a model chosen in a client, by a
    /// command, by an editor), whoever set it.
    Route { provider: String, model: String },
    /// `agent/error`: a turn ends `error` (after its last `step/end`, before its `turn/end`).
    Error {
        turn: u64,
        step: u64,
        error: LlmFailure,
    },
}
