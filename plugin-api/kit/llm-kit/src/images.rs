//! Request image budgets: the oldest images of a history give way to a stand-in text until the
//! request's base64 image payload fits the provider's limit.

use std::borrow::Cow;

use dsh_protocol::{ContentBlock, Message};

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
    use dsh_protocol::{ImageAttachment, Role};

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
            source: dsh_protocol::MessageSource::user(),
        }
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
