//! The `tool/call` and `tool/result` session-event payloads, in the exact shape the reference
//! logs them (the envelope, `surfaceOp` and `sourceEventSeqs` are the session log's business).

use dsh_llm_api::{ContentBlock, Message, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::failure::ToolErrorInfo;
use crate::outcome::{FinalOutcome, present};

/// Session event type of a started call.
pub const TOOL_CALL_EVENT: &str = "tool/call";
/// Session event type of a call's result.
pub const TOOL_RESULT_EVENT: &str = "tool/result";

/// `tool/call` data: one call, logged before policy runs, with the model's raw argument string
/// (never re-encoded, so replay and the logged card stay byte-exact).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEventData {
    pub turn: u64,
    pub step: u64,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCallEventData {
    pub fn new(
        turn: u64,
        step: u64,
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            turn,
            step,
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// `tool/result` data: the model-facing result message plus the structured error and the
/// tool-private `meta` (for example a diff), both only when present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEventData {
    pub turn: u64,
    pub step: u64,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolErrorInfo>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<Value>,
}

impl ToolResultEventData {
    /// The event for one finished outcome. `message_id` is the caller's (the reference mints a
    /// UUID); everything else comes from the outcome.
    pub fn new(
        turn: u64,
        step: u64,
        message_id: impl Into<String>,
        call_id: &str,
        outcome: &FinalOutcome,
    ) -> Self {
        Self {
            turn,
            step,
            message: tool_result_message(
                message_id,
                call_id,
                outcome.content().to_vec(),
                outcome.is_error(),
            ),
            error: outcome.error_info().cloned(),
            meta: outcome.meta().cloned(),
        }
    }

    /// The single `tool-result` block's call id, content and error flag.
    pub fn tool_result(&self) -> Option<(&str, &[ContentBlock], bool)> {
        self.message.content.iter().find_map(|block| match block {
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => Some((
                tool_call_id.as_str(),
                content.as_slice(),
                *is_error == Some(true),
            )),
            _ => None,
        })
    }
}

/// The user-role message carrying one tool result, sourced `{kind: "tool", callId}`.
pub fn tool_result_message(
    message_id: impl Into<String>,
    call_id: &str,
    content: Vec<ContentBlock>,
    is_error: bool,
) -> Message {
    Message {
        id: message_id.into(),
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: call_id.to_owned(),
            content,
            is_error: Some(is_error),
        }],
        source: json!({ "kind": "tool", "callId": call_id }),
    }
}
