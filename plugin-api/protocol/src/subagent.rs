//! The agent tree: how a child agent is described in its own log (`subagent/descriptor`), what
//! the delegation tools take, the notices a parent receives from its children, and how the
//! tree is listed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::content::MessageSource;
use crate::events::{EventData, event_data};

/// Whether a child reports once or stays available for more work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SubagentMode {
    /// Runs one task; its result is the parent's tool result.
    OneShot,
    /// Runs in the background; `send_message` gives it more turns.
    Continuable,
}

/// `subagent/descriptor`: what a child session is (logged once, in the child, when it starts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentDescriptorEvent {
    /// The descriptor's format (2).
    pub version: u32,
    pub mode: SubagentMode,
    /// The provider that started it: `spawn` (fresh) or `fork` (seeded with the parent's
    /// completed turns).
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The model route a continuable child keeps for its later turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_model: Option<String>,
}
event_data!(SubagentDescriptorEvent, crate::kinds::SUBAGENT_DESCRIPTOR);

/// Arguments of `subagent` and `subagent_fork`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct DelegateArgs {
    pub description: String,
    pub prompt: String,
    /// Absent: the tool's own default (background for `subagent`; `subagent_fork` always
    /// waits).
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// Arguments of `send_message`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct SendMessageArgs {
    pub subagent_id: String,
    pub message: String,
}

/// Arguments of `interrupt_agent`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct InterruptArgs {
    pub agent_id: String,
}

/// Which part of the tree `list_agents` walks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ListScope {
    #[default]
    Children,
    Descendants,
}

/// Arguments of `list_agents`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct ListAgentsArgs {
    #[serde(default)]
    pub scope: ListScope,
}

/// Arguments of `report`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct ReportArgs {
    pub output: String,
}

/// Where a child stands, as the tree lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChildStatus {
    /// Working right now.
    Running,
    /// Loaded, between turns.
    Idle,
    /// Its run settled: it does nothing until it is sent more.
    Ready,
}

/// One child of the agent tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildSummary {
    /// The child's agent id (its session id).
    pub id: String,
    /// Its direct parent's session id.
    pub parent: String,
    /// 1 for a direct child of a top-level session.
    pub depth: u64,
    pub mode: SubagentMode,
    pub provider: String,
    #[serde(default)]
    pub label: String,
    pub status: ChildStatus,
}

/// `subagent/start` and `subagent/end` on the harness bus: a child began or its run settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentNotice {
    pub parent: String,
    pub child: String,
    pub mode: SubagentMode,
    #[serde(default)]
    pub label: String,
    /// At the end: the child's last assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// At the end: the kind of the child's last turn end (`completed`, `error`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
}

impl MessageSource {
    /// A background child's settled notice, as the reference logs it.
    pub fn subagent_settled(summary: &str, sender: &str) -> Self {
        Self::Other(serde_json::json!({
            "kind": "subagent-settled",
            "form": "notice",
            "summary": summary,
            "senderSessionId": sender,
        }))
    }

    /// A child's `report`, relayed to its parent.
    pub fn subagent_report(sender: &str) -> Self {
        Self::Other(serde_json::json!({
            "kind": "subagent-report",
            "form": "relay",
            "senderSessionId": sender,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_descriptor_reads_and_writes_back_the_same() {
        let line = r#"{"version":2,"mode":"continuable","provider":"spawn","label":"Reply with CHILD_OK","agentProvider":"deepseek-official","agentModel":"deepseek-v4-flash"}"#;
        let event: SubagentDescriptorEvent = serde_json::from_str(line).unwrap();
        assert_eq!(event.mode, SubagentMode::Continuable);
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
    }

    #[test]
    fn a_settled_notice_source_has_the_reference_fields() {
        let source = MessageSource::subagent_settled("done", "child-1");
        let json = serde_json::to_value(&source).unwrap();
        assert_eq!(json["kind"], "subagent-settled");
        assert_eq!(json["senderSessionId"], "child-1");
    }
}
