//! A `tools/call` result as a tool reply. Text stays text; a resource (linked or embedded) is
//! named, with its text when it has one; structured content is the reply's value, and its JSON
//! the text when the server sent no content. Images that reach here are described, not shown
//! (`images` passes them on where the session's model takes them), and so is audio: base64 in
//! a text block would only burn the model's window. `isError` makes the reply an error with the same content.

use dsh_protocol::{ContentBlock, ToolError, ToolReply, ToolSuccess};
use serde_json::Value;

use crate::protocol::{CallResult, Content};

/// Bytes the base64 text `data` decodes to.
fn decoded_len(data: &str) -> usize {
    let data = data.trim();
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() * 3 / 4).saturating_sub(padding)
}

fn block(content: &Content) -> Option<String> {
    match content {
        Content::Text { text } => Some(text.clone()),
        Content::Image { data, mime_type } => Some(format!(
            "[image: {mime_type}, {} bytes; not shown]",
            decoded_len(data)
        )),
        Content::Audio { data, mime_type } => Some(format!(
            "[audio: {mime_type}, {} bytes; not shown]",
            decoded_len(data)
        )),
        Content::ResourceLink {
            uri,
            name,
            mime_type,
        } => Some(match mime_type {
            Some(kind) => format!("[resource link: {name} <{uri}> ({kind})]"),
            None => format!("[resource link: {name} <{uri}>]"),
        }),
        Content::Resource { resource } => Some(match (&resource.text, &resource.blob) {
            (Some(text), _) => format!("[resource <{}>]\n{text}", resource.uri),
            (None, Some(blob)) => format!(
                "[resource <{}>: {}, {} bytes; not shown]",
                resource.uri,
                resource.mime_type.as_deref().unwrap_or("binary"),
                decoded_len(blob)
            ),
            (None, None) => format!("[resource <{}>]", resource.uri),
        }),
        Content::Unknown => None,
    }
}

/// The reply of a call to `tool` of `server` that answered `result`.
pub(crate) fn reply(server: &str, tool: &str, result: CallResult) -> ToolReply {
    let mut texts: Vec<String> = result.content.iter().filter_map(block).collect();
    if texts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        texts.push(structured.to_string());
    }
    // One block: providers join a message's text blocks without a separator.
    let joined = texts.join("\n");
    let content = match joined.is_empty() {
        true => Vec::new(),
        false => vec![ContentBlock::text(joined.clone())],
    };
    if result.is_error {
        // The pipeline shows the model `Error: <message>`, so it reads as the failure it is.
        let message = match joined.is_empty() {
            true => format!("the MCP tool `{tool}` of server `{server}` failed"),
            false => joined,
        };
        return ToolReply::Error(ToolError::new(message).coded("McpToolError", "MCP_TOOL_ERROR"));
    }
    let value = result
        .structured_content
        .unwrap_or_else(|| Value::String(joined));
    ToolReply::Ok(ToolSuccess {
        value,
        content,
        meta: None,
        concludes_turn: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(json: &str) -> CallResult {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn text_images_and_resources_become_text_and_structured_content_the_value() {
        let reply = reply(
            "s",
            "t",
            result(
                r#"{"content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "resource", "resource": {"uri": "x://y", "text": "body"}}], "structuredContent": {"sum": 3}}"#,
            ),
        );
        let ToolReply::Ok(success) = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(
            success.content,
            vec![ContentBlock::text(
                "hi\n[image: image/png, 3 bytes; not shown]\n[resource <x://y>]\nbody"
            )]
        );
        assert_eq!(success.value["sum"], 3);
    }

    #[test]
    fn is_error_is_an_error_reply_with_the_servers_words() {
        let reply = reply(
            "s",
            "t",
            result(r#"{"content": [{"type": "text", "text": "no such file"}], "isError": true}"#),
        );
        let ToolReply::Error(error) = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(error.message, "no such file");
        assert_eq!(error.code.as_deref(), Some("MCP_TOOL_ERROR"));
    }

    #[test]
    fn structured_content_alone_is_shown_as_json() {
        let ToolReply::Ok(success) = reply("s", "t", result(r#"{"structuredContent": {"a": 1}}"#))
        else {
            panic!()
        };
        assert_eq!(success.content, vec![ContentBlock::text("{\"a\":1}")]);
    }
}
