//! The `session/update` notifications: the one kind automation mode sends
//! (`agent_message_chunk`) and the rest an editor shows (thoughts, tool calls with their
//! content, the plan, usage, commands, the mode and the config options).

use serde::Serialize;

use crate::schema::ConfigOption;

/// `session/update` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionNotification<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) update: SessionUpdate,
}

/// One update of a session.
#[derive(Debug, Serialize)]
#[serde(
    tag = "sessionUpdate",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum SessionUpdate {
    UserMessageChunk {
        content: Content,
    },
    AgentMessageChunk {
        content: Content,
    },
    AgentThoughtChunk {
        content: Content,
    },
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCallUpdate),
    Plan {
        entries: Vec<PlanEntry>,
    },
    AvailableCommandsUpdate {
        available_commands: Vec<AvailableCommand>,
    },
    CurrentModeUpdate {
        current_mode_id: String,
    },
    ConfigOptionUpdate {
        config_options: Vec<ConfigOption>,
    },
    UsageUpdate {
        used: u64,
        size: u64,
    },
}

/// Content the agent sends (text only: no image ever reaches an assistant message here).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Content {
    Text { text: String },
}

impl Content {
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// What kind of work a tool call is, for the client's icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolKind {
    Read,
    Edit,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolCallStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

/// A new tool call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCall {
    pub(crate) tool_call_id: String,
    pub(crate) title: String,
    pub(crate) kind: ToolKind,
    pub(crate) status: ToolCallStatus,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) locations: Vec<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) raw_input: Option<serde_json::Value>,
}

/// A change of a tool call: only the members that changed.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallUpdate {
    pub(crate) tool_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<ToolKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<ToolCallStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<Vec<ToolCallContent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) locations: Option<Vec<Location>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) raw_input: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) raw_output: Option<RawOutput>,
}

/// What a finished call produced, for clients that show it raw.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawOutput {
    pub(crate) output: String,
    pub(crate) is_error: bool,
}

/// What a tool call shows: text, a diff of a file it changed, or the client's terminal its
/// command ran in.
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum ToolCallContent {
    Content {
        content: Content,
    },
    Diff {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        old_text: Option<String>,
        new_text: String,
    },
    /// A terminal of the client's, which it shows live (and after its release).
    Terminal {
        terminal_id: String,
    },
}

/// A file (and line) a tool call touches, for the client to follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Location {
    pub(crate) path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) line: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct PlanEntry {
    pub(crate) content: String,
    pub(crate) priority: &'static str,
    pub(crate) status: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct AvailableCommand {
    pub(crate) name: String,
    pub(crate) description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) input: Option<CommandInput>,
}

/// A command takes the rest of the line, described by `hint`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CommandInput {
    pub(crate) hint: String,
}
