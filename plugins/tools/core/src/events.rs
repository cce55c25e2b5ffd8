//! The `tool/result` event of a finished call, in the exact shape the reference logs it (the
//! envelope, `surfaceOp` and `sourceEventSeqs` are the session log's business). The event types
//! themselves are `dsh-protocol`'s.

use dsh_protocol::{ContentBlock, Message, MessageSource, Role, ToolResultEvent};

use crate::outcome::FinalOutcome;

/// The `tool/result` data of one finished outcome. `message_id` is the caller's (the
/// reference mints a UUID); everything else comes from the outcome.
pub fn result_event(
    turn: u64,
    step: u64,
    message_id: impl Into<String>,
    call_id: &str,
    outcome: &FinalOutcome,
) -> ToolResultEvent {
    ToolResultEvent {
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

/// The single `tool-result` block of a result: its call id, content and error flag.
pub fn tool_result_of(event: &ToolResultEvent) -> Option<(&str, &[ContentBlock], bool)> {
    event.message.content.iter().find_map(|block| match block {
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
        source: MessageSource::tool(call_id),
    }
}
