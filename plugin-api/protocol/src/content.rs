//! Messages and their content blocks, exactly as the session log and the model seam carry them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::unknown::{OpenTags, Unknown};

/// Provider-neutral conversation role. Tool results ride in `user` messages; adapters turn them
/// into their provider's tool-role messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    /// The role as messages spell it (`user`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One message of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// The log's message id; empty in a derived history, which providers never see ids of.
    #[serde(default)]
    pub id: String,
    pub role: Role,
    pub content: Vec<ContentBlock>,
    pub source: MessageSource,
}

impl Message {
    /// A user-role message of `content` from `source`.
    pub fn user(id: impl Into<String>, content: Vec<ContentBlock>, source: MessageSource) -> Self {
        Self {
            id: id.into(),
            role: Role::User,
            content,
            source,
        }
    }

    /// The concatenated text blocks.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

/// Fields of a source that its kind does not name, kept verbatim (the kinds are merge-extensible:
/// a producer may add its own).
pub type SourceExtra = serde_json::Map<String, serde_json::Value>;

/// Where a message came from. The kinds are open: the known ones are typed, any other
/// (goal rounds, compaction checkpoints, skill catalogs...) is kept as it was written, and every
/// kind keeps the fields it does not name, so a message reads back exactly as it was logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MessageSource {
    /// Typed by a person.
    User {
        #[serde(flatten)]
        extra: SourceExtra,
    },
    /// Contributed by a plugin: a context snapshot, a hook's additional context, a continuation.
    Plugin(PluginSource),
    /// Written by a model.
    Model(ModelSource),
    /// The result of a tool call.
    Tool {
        #[serde(rename = "callId")]
        call_id: String,
        #[serde(flatten)]
        extra: SourceExtra,
    },
    /// A kind this vocabulary does not name, verbatim.
    #[serde(untagged)]
    Other(serde_json::Value),
}

/// The `plugin` source kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PluginSource {
    /// The plugin that contributed the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// How it contributed it (`snapshot` for a context snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<String>,
    /// The snapshot's key, for `snapshot` messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The named parts of a snapshot, for readers that show them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<SnapshotSection>>,
    #[serde(flatten)]
    pub extra: SourceExtra,
}

/// One named part of a context snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SnapshotSection {
    pub name: String,
    pub text: String,
}

/// The `model` source kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelSource {
    pub provider: String,
    pub model: String,
    /// Adapter-private state for replaying the response (see [`crate::ReplayEnvelope`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_state: Option<serde_json::Value>,
    #[serde(flatten)]
    pub extra: SourceExtra,
}

impl MessageSource {
    /// A message typed by a person.
    pub fn user() -> Self {
        Self::User {
            extra: SourceExtra::new(),
        }
    }

    /// A message a plugin contributed, without naming itself.
    pub fn plugin() -> Self {
        Self::Plugin(PluginSource::default())
    }

    /// A context snapshot `key` of `plugin`.
    pub fn snapshot(plugin: impl Into<String>, key: impl Into<String>) -> Self {
        Self::Plugin(PluginSource {
            plugin: Some(plugin.into()),
            form: Some("snapshot".to_owned()),
            key: Some(key.into()),
            sections: None,
            extra: SourceExtra::new(),
        })
    }

    /// A message of `model` at `provider`.
    pub fn model(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self::Model(ModelSource {
            provider: provider.into(),
            model: model.into(),
            replay_state: None,
            extra: SourceExtra::new(),
        })
    }

    /// The result of call `call_id`.
    pub fn tool(call_id: impl Into<String>) -> Self {
        Self::Tool {
            call_id: call_id.into(),
            extra: SourceExtra::new(),
        }
    }
}

/// Durable metadata of one stored image; the bytes live in the attachment service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// A block type this vocabulary does not name (made by a newer plugin), verbatim: kept in
    /// the log and passed on, never shown to a model that cannot read it.
    #[serde(untagged)]
    Other(Unknown<ContentBlock>),
}

impl OpenTags for ContentBlock {
    const TAG: &'static str = "type";
    const KNOWN: &'static [&'static str] =
        &["text", "reasoning", "image", "tool-call", "tool-result"];
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
            Self::Other(_) => BlockType::Other,
        }
    }
}

/// The `type` tag vocabulary of [`ContentBlock`] (as carried by `block-start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BlockType {
    Text,
    Reasoning,
    Image,
    ToolCall,
    ToolResult,
    /// A type this vocabulary does not name (started by a newer adapter).
    #[serde(other)]
    Other,
}

/// The text blocks of `blocks` (direct children only), concatenated.
pub fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unnamed_block_type_is_kept_verbatim_and_a_malformed_named_one_fails() {
        let newer = json!({"type": "document", "title": "spec", "pages": 3});
        let block: ContentBlock = serde_json::from_value(newer.clone()).unwrap();
        let ContentBlock::Other(unknown) = &block else {
            panic!("expected the fallback: {block:?}");
        };
        assert_eq!(unknown.tag(), Some("document"));
        assert_eq!(block.block_type(), BlockType::Other);
        assert_eq!(serde_json::to_value(&block).unwrap(), newer);
        // A message holding it still reads, and writes it back unchanged.
        let message = json!({"id": "m", "role": "user", "content": [{"type": "text", "text": "see"}, newer], "source": {"kind": "user"}});
        let read: Message = serde_json::from_value(message.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), message);
        for malformed in [
            json!({"type": "text"}),
            json!({"type": "tool-call", "id": "c"}),
            json!({"text": "no tag"}),
        ] {
            assert!(
                serde_json::from_value::<ContentBlock>(malformed.clone()).is_err(),
                "{malformed}"
            );
        }
    }

    #[test]
    fn the_named_tags_are_the_variants_tags() {
        let named = [
            ContentBlock::text("t"),
            ContentBlock::reasoning("r"),
            ContentBlock::Image {
                attachment: ImageAttachment {
                    attachment_id: "sha256:0".into(),
                    media_type: "image/png".into(),
                    bytes: 1,
                    width: 1,
                    height: 1,
                    name: None,
                },
            },
            ContentBlock::tool_call("c", "n", "{}"),
            ContentBlock::ToolResult {
                tool_call_id: "c".into(),
                content: Vec::new(),
                is_error: None,
            },
        ];
        let tags: Vec<String> = named
            .iter()
            .map(|block| {
                serde_json::to_value(block).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(tags, <ContentBlock as OpenTags>::KNOWN);
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
    fn every_source_kind_reads_back_as_it_was_written() {
        let cases = [
            (json!({"kind": "user"}), "user"),
            (json!({"kind": "user", "clientTimeZone": "UTC"}), "user"),
            (
                json!({"kind": "plugin", "plugin": "system-prompt", "form": "snapshot", "key": "k", "sections": [{"name": "a", "text": "b"}]}),
                "plugin",
            ),
            (json!({"kind": "plugin", "goalId": "g"}), "plugin"),
            (
                json!({"kind": "model", "provider": "p", "model": "m", "replayState": {"r": 1}}),
                "model",
            ),
            (json!({"kind": "tool", "callId": "c"}), "tool"),
            (json!({"kind": "goal", "goalId": "g", "round": 2}), "other"),
            (json!({"no": "kind"}), "other"),
        ];
        for (value, kind) in cases {
            let source: MessageSource = serde_json::from_value(value.clone()).unwrap();
            let read = match &source {
                MessageSource::User { .. } => "user",
                MessageSource::Plugin(_) => "plugin",
                MessageSource::Model(_) => "model",
                MessageSource::Tool { .. } => "tool",
                MessageSource::Other(_) => "other",
            };
            assert_eq!(read, kind, "{value}");
            assert_eq!(serde_json::to_value(&source).unwrap(), value);
        }
        assert_eq!(
            serde_json::to_value(MessageSource::snapshot("system-prompt", "k")).unwrap(),
            json!({"kind": "plugin", "plugin": "system-prompt", "form": "snapshot", "key": "k"})
        );
    }

    #[test]
    fn finds_images_nested_in_tool_results() {
        let image = ContentBlock::Image {
            attachment: ImageAttachment {
                attachment_id: "sha256:3".into(),
                media_type: "image/png".into(),
                bytes: 3,
                width: 1,
                height: 1,
                name: None,
            },
        };
        let nested = ContentBlock::ToolResult {
            tool_call_id: "c".into(),
            content: vec![image],
            is_error: None,
        };
        assert!(content_has_image(&[nested]));
        assert!(!content_has_image(&[ContentBlock::text("x")]));
    }
}
