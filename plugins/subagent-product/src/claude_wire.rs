//! Claude Code's stream-json vocabulary, the part a one-shot run reads and writes, as serde
//! types: the user message sent, the assistant messages, control requests and the result
//! read, and the control responses answered. Message types and fields Claude Code adds are
//! ignored.

use dsh_plugin_api::{Deserialize, Serialize};
use serde_json::Value;

/// A line Claude Code prints.
#[derive(Debug, Deserialize)]
#[serde(
    crate = "dsh_plugin_api::serde",
    tag = "type",
    rename_all = "snake_case"
)]
pub(crate) enum Printed {
    Assistant {
        message: AssistantMessage,
    },
    ControlRequest {
        request_id: Value,
        request: ControlRequest,
    },
    Result {
        #[serde(default)]
        subtype: String,
        #[serde(default)]
        is_error: bool,
        #[serde(default)]
        result: Option<String>,
    },
    /// `system` messages, tool results echoed as `user`, and whatever comes later.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct AssistantMessage {
    #[serde(default)]
    pub(crate) content: Vec<Block>,
}

#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Block {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) text: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct ControlRequest {
    #[serde(default)]
    pub(crate) subtype: String,
    #[serde(default)]
    pub(crate) tool_use_id: Option<String>,
}

/// The task, as the one user message of the query.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct UserMessage<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) session_id: &'static str,
    pub(crate) parent_tool_use_id: Option<String>,
    pub(crate) message: UserBody<'a>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct UserBody<'a> {
    pub(crate) role: &'static str,
    pub(crate) content: Vec<TextBlock<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct TextBlock<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) text: &'a str,
}

/// `{"type": "control_response", "response": ...}`.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct ControlResponse<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) response: Answer<'a>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Answer<'a> {
    pub(crate) subtype: &'static str,
    pub(crate) request_id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response: Option<Decision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// What was decided for the product.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", untagged)]
pub(crate) enum Decision {
    Deny {
        behavior: &'static str,
        message: &'static str,
        #[serde(rename = "toolUseID", skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
    },
    Decline {
        action: &'static str,
    },
}

/// `{"type": "control_request", "request_id": ..., "request": {"subtype": "interrupt"}}`.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Interrupt {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) request_id: &'static str,
    pub(crate) request: InterruptRequest,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct InterruptRequest {
    pub(crate) subtype: &'static str,
}
