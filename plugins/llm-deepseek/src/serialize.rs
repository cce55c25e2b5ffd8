//! Harness messages to chat-completions messages.
//!
//! Two paths, chosen per request: text-only history keeps the compact string forms; history
//! with images resolves attachments into data-URL parts, and images inside tool results go into
//! one user message after the tool messages (a `tool` message can only carry a string).

use dsh_protocol::{
    ContentBlock, FailureCode, ImageAttachment, LlmFailure, Message, Role, text_of,
};

use crate::wire::{ImageUrl, UserContent, UserPart, WireFunctionCall, WireMessage, WireToolCall};

/// Reads an attachment's bytes (the attachment service, behind whatever the caller uses).
pub type ImageReader<'a> = &'a dyn Fn(&ImageAttachment) -> Result<Vec<u8>, LlmFailure>;

const TOOL_RESULT_IMAGE_TEXT: &str = "Attached image(s) from tool result:";
const NO_OUTPUT: &str = "(no output)";
const SEE_IMAGE: &str = "(see attached image)";

pub(crate) fn unsupported(message: impl Into<String>) -> LlmFailure {
    LlmFailure::new(FailureCode::Other("UNSUPPORTED_CONTENT".into()), message)
}

fn assistant(message: &Message, pass_reasoning: bool) -> WireMessage {
    let reasoning: String = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Reasoning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<WireToolCall> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => Some(WireToolCall {
                id: id.clone(),
                kind: "function".into(),
                function: WireFunctionCall {
                    name: name.clone(),
                    arguments: arguments.clone(),
                },
            }),
            _ => None,
        })
        .collect();
    WireMessage::Assistant {
        content: Some(text_of(&message.content)),
        // Passed back on every turn that reasoned: required on tool-call turns (as a field, even
        // empty: thinking mode refuses a tool-call message without it), ignored by DeepSeek
        // elsewhere, and the only place a gateway can recover that turn's thinking.
        reasoning_content: (pass_reasoning && (!reasoning.is_empty() || !calls.is_empty()))
            .then_some(reasoning),
        tool_calls: (!calls.is_empty()).then_some(calls),
    }
}

fn tool_results(message: &Message) -> impl Iterator<Item = (&String, &[ContentBlock])> {
    message.content.iter().filter_map(|block| match block {
        ContentBlock::ToolResult {
            tool_call_id,
            content,
            ..
        } => Some((tool_call_id, content.as_slice())),
        _ => None,
    })
}

/// Text-only history. A user message contributes each tool result as its own `tool` message,
/// then its text: the provider wants a call's answers right after the call.
pub(crate) fn text_messages(messages: &[Message], pass_reasoning: bool) -> Vec<WireMessage> {
    let mut wire = Vec::new();
    for message in messages {
        match message.role {
            Role::System => wire.push(WireMessage::System {
                content: text_of(&message.content),
            }),
            Role::Assistant => wire.push(assistant(message, pass_reasoning)),
            Role::User => {
                let mut answered = false;
                for (id, content) in tool_results(message) {
                    let text = text_of(content);
                    wire.push(WireMessage::Tool {
                        tool_call_id: id.clone(),
                        content: if text.is_empty() {
                            NO_OUTPUT.into()
                        } else {
                            text
                        },
                    });
                    answered = true;
                }
                let text = text_of(&message.content);
                if !text.is_empty() || !answered {
                    wire.push(WireMessage::User {
                        content: UserContent::Text(text),
                    });
                }
            }
        }
    }
    wire
}

fn image_part(attachment: &ImageAttachment, read: ImageReader<'_>) -> Result<UserPart, LlmFailure> {
    let bytes = read(attachment)?;
    Ok(UserPart::ImageUrl {
        image_url: ImageUrl {
            url: format!(
                "data:{};base64,{}",
                attachment.media_type,
                crate::base64::encode(&bytes)
            ),
        },
    })
}

/// Ordered parts of user or tool-result content; non-input blocks are skipped.
fn parts(
    blocks: &[ContentBlock],
    read: ImageReader<'_>,
    out: &mut Vec<UserPart>,
) -> Result<(), LlmFailure> {
    for block in blocks {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => {
                out.push(UserPart::Text { text: text.clone() });
            }
            ContentBlock::Image { attachment } => out.push(image_part(attachment, read)?),
            ContentBlock::ToolResult { content, .. } => parts(content, read, out)?,
            _ => {}
        }
    }
    Ok(())
}

fn joined_text(parts: &[UserPart]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            UserPart::Text { text } => Some(text.as_str()),
            UserPart::ImageUrl { .. } => None,
        })
        .collect()
}

/// History holding images. Only user messages may carry them.
pub(crate) fn image_messages(
    messages: &[Message],
    read: ImageReader<'_>,
    pass_reasoning: bool,
) -> Result<Vec<WireMessage>, LlmFailure> {
    if let Some(message) = messages
        .iter()
        .find(|m| m.role != Role::User && dsh_protocol::content_has_image(&m.content))
    {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        return Err(unsupported(format!(
            "The DeepSeek chat-completions adapter cannot represent image content in a {role} message."
        )));
    }
    let mut wire = Vec::new();
    // Images from consecutive tool results share one user message after their tool messages.
    let mut pending: Vec<UserPart> = Vec::new();
    let flush = |wire: &mut Vec<WireMessage>, pending: &mut Vec<UserPart>| {
        if pending.is_empty() {
            return;
        }
        let mut content = vec![UserPart::Text {
            text: TOOL_RESULT_IMAGE_TEXT.into(),
        }];
        content.append(pending);
        wire.push(WireMessage::User {
            content: UserContent::Parts(content),
        });
    };
    for message in messages {
        match message.role {
            Role::System => {
                flush(&mut wire, &mut pending);
                wire.push(WireMessage::System {
                    content: text_of(&message.content),
                });
            }
            Role::Assistant => {
                flush(&mut wire, &mut pending);
                wire.push(assistant(message, pass_reasoning));
            }
            Role::User => {
                let regular: Vec<ContentBlock> = message
                    .content
                    .iter()
                    .filter(|block| !matches!(block, ContentBlock::ToolResult { .. }))
                    .cloned()
                    .collect();
                let mut own = Vec::new();
                parts(&regular, read, &mut own)?;
                let has_image = own.iter().any(|p| matches!(p, UserPart::ImageUrl { .. }));
                let content = if has_image {
                    UserContent::Parts(own)
                } else {
                    UserContent::Text(joined_text(&own))
                };
                let empty = match &content {
                    UserContent::Text(text) => text.is_empty(),
                    UserContent::Parts(parts) => parts.is_empty(),
                };
                let mut answered = false;
                for (id, content) in tool_results(message) {
                    answered = true;
                    let mut result_parts = Vec::new();
                    parts(content, read, &mut result_parts)?;
                    let text = joined_text(&result_parts);
                    let (images, _): (Vec<UserPart>, Vec<UserPart>) = result_parts
                        .into_iter()
                        .partition(|p| matches!(p, UserPart::ImageUrl { .. }));
                    let content = match (text.is_empty(), images.is_empty()) {
                        (false, _) => text,
                        (true, false) => SEE_IMAGE.into(),
                        (true, true) => NO_OUTPUT.into(),
                    };
                    wire.push(WireMessage::Tool {
                        tool_call_id: id.clone(),
                        content,
                    });
                    pending.extend(images);
                }
                if !empty || !answered {
                    flush(&mut wire, &mut pending);
                    wire.push(WireMessage::User { content });
                }
            }
        }
    }
    flush(&mut wire, &mut pending);
    Ok(wire)
}
