//! Messages and their content blocks, exactly as the session log and the model seam carry them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// Provider-neutral conversation role. Tool results ride in `user` messages; adapters turn them
/// into their provider's tool-role messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One message of the history. `source` stays open JSON: its kinds (`user`, `plugin{...}`,
/// `model{provider, model, replayState?}`, `tool{callId}`, goal rounds, checkpoints...) are
/// merge-extensible and owned by their producers, and the seam only passes them through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The log's message id; empty in a derived history, which providers never see ids of.
    #[serde(default)]
    pub id: String,
    pub role: Role,
    pub content: Vec<ContentBlock>,
    pub source: serde_json::Value,
}

/// Durable metadata of one stored image; the bytes live in the attachment service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageAttachment {
    /// Opaque storage id (`sha256:...`), never a path or URL.
    pub attachment_id: String,
    /// `image/png`, `image/jpeg`, `image/webp` or `image/gif`.
    pub media_type: String,
    /// Exact encoded byte length (request budgets are computed from it without reading bytes).
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One block of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ContentBlock {
    /// Text visible to the user.
    Text { text: String },
    /// Reasoning (thinking) text, kept apart from visible text.
    Reasoning { text: String },
    /// A stored image.
    Image { attachment: ImageAttachment },
    /// A tool invocation requested by the model; `arguments` is the model's raw JSON string,
    /// never re-encoded, so replay and passback stay byte-exact.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    /// The result of one tool call, sent back to the model.
    ToolResult {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        content: Vec<ContentBlock>,
        #[serde(rename = "isError", default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    pub fn reasoning(text: impl Into<String>) -> Self {
        Self::Reasoning { text: text.into() }
    }

    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// The block's `type` tag.
    pub fn block_type(&self) -> BlockType {
        match self {
            Self::Text { .. } => BlockType::Text,
            Self::Reasoning { .. } => BlockType::Reasoning,
            Self::Image { .. } => BlockType::Image,
            Self::ToolCall { .. } => BlockType::ToolCall,
            Self::ToolResult { .. } => BlockType::ToolResult,
        }
    }
}

/// The `type` tag vocabulary of [`ContentBlock`] (as carried by `block-start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockType {
    Text,
    Reasoning,
    Image,
    ToolCall,
    ToolResult,
}

/// Whether any block, including blocks nested in tool results, is an image. The one recursive
/// walk every image policy shares, so none of them can disagree on nesting depth.
pub fn content_has_image(content: &[ContentBlock]) -> bool {
    content.iter().any(|block| match block {
        ContentBlock::Image { .. } => true,
        ContentBlock::ToolResult { content, .. } => content_has_image(content),
        _ => false,
    })
}

/// The model-facing stand-in for an image dropped to fit a request's image budget.
pub const OFFLOADED_IMAGE_TEXT: &str = "[image omitted to keep the request within its image limit; older images are omitted first. If this image is still needed, read its file again when a path is available; otherwise ask the user to attach it again.]";

/// Base64 length of `bytes` raw bytes, padding included.
pub fn base64_len(bytes: u64) -> u64 {
    bytes.div_ceil(3) * 4
}

fn collect_image_lengths(blocks: &[ContentBlock], lengths: &mut Vec<u64>) {
    for block in blocks {
        match block {
            ContentBlock::Image { attachment } => lengths.push(base64_len(attachment.bytes)),
            ContentBlock::ToolResult { content, .. } => collect_image_lengths(content, lengths),
            _ => {}
        }
    }
}

fn replace_oldest(blocks: &[ContentBlock], remaining: &mut usize) -> Vec<ContentBlock> {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Image { .. } if *remaining > 0 => {
                *remaining -= 1;
                ContentBlock::text(OFFLOADED_IMAGE_TEXT)
            }
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => ContentBlock::ToolResult {
                tool_call_id: tool_call_id.clone(),
                content: replace_oldest(content, remaining),
                is_error: *is_error,
            },
            other => other.clone(),
        })
        .collect()
}

/// The request history with its oldest images replaced by [`OFFLOADED_IMAGE_TEXT`] until the
/// total base64 payload fits `max_request_image_bytes`. The choice depends only on message order
/// and attachment metadata, so the same history always yields the same request (prompt caches
/// stay warm) and no image bytes are read to decide it.
pub fn offload_request_images(
    messages: &[Message],
    max_request_image_bytes: Option<u64>,
) -> Cow<'_, [Message]> {
    let Some(max) = max_request_image_bytes else {
        return Cow::Borrowed(messages);
    };
    let mut lengths = Vec::new();
    for message in messages {
        collect_image_lengths(&message.content, &mut lengths);
    }
    let mut total: u64 = lengths.iter().sum();
    let mut count = 0usize;
    for bytes in &lengths {
        if total <= max {
            break;
        }
        total -= bytes;
        count += 1;
    }
    if count == 0 {
        return Cow::Borrowed(messages);
    }
    let mut remaining = count;
    Cow::Owned(
        messages
            .iter()
            .map(|message| Message {
                content: replace_oldest(&message.content, &mut remaining),
                ..message.clone()
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn image(bytes: u64) -> ContentBlock {
        ContentBlock::Image {
            attachment: ImageAttachment {
                attachment_id: format!("sha256:{bytes}"),
                media_type: "image/png".into(),
                bytes,
                width: 1,
                height: 1,
                name: None,
            },
        }
    }

    fn user(content: Vec<ContentBlock>) -> Message {
        Message {
            id: "m".into(),
            role: Role::User,
            content,
            source: json!({"kind": "user"}),
        }
    }

    #[test]
    fn tool_result_serializes_with_reference_field_names() {
        let block = ContentBlock::ToolResult {
            tool_call_id: "c1".into(),
            content: vec![ContentBlock::text("ok")],
            is_error: Some(false),
        };
        assert_eq!(
            serde_json::to_value(&block).unwrap(),
            json!({"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "ok"}], "isError": false})
        );
    }

    #[test]
    fn finds_images_nested_in_tool_results() {
        let nested = ContentBlock::ToolResult {
            tool_call_id: "c".into(),
            content: vec![image(3)],
            is_error: None,
        };
        assert!(content_has_image(&[nested]));
        assert!(!content_has_image(&[ContentBlock::text("x")]));
    }

    #[test]
    fn offloads_oldest_images_first() {
        // 3 bytes -> 4 base64 bytes each; a budget of 8 keeps the newest two of three.
        let messages = vec![user(vec![image(3), image(3)]), user(vec![image(3)])];
        assert!(matches!(
            offload_request_images(&messages, Some(12)),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            offload_request_images(&messages, None),
            Cow::Borrowed(_)
        ));
        let out = offload_request_images(&messages, Some(8));
        assert_eq!(out[0].content[0], ContentBlock::text(OFFLOADED_IMAGE_TEXT));
        assert_eq!(out[0].content[1], image(3));
        assert_eq!(out[1].content[0], image(3));
    }
}
