//! The raw streaming protocol adapters emit (`assistant/chunk` data), with usage and finish.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::unknown::{OpenTags, Unknown};

use crate::content::{BlockType, ContentBlock};
use crate::failure::LlmFailure;

/// One chunk of a model response.
///
/// Block indexes correlate interleaved deltas; `block-end` carries the finished block and is
/// authoritative. An adapter emits `usage` (if any) before the single terminal `finish`, and
/// nothing after it. Tool arguments stay raw JSON strings throughout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum StreamChunk {
    BlockStart {
        index: u32,
        block_type: BlockType,
    },
    TextDelta {
        index: u32,
        text: String,
    },
    ReasoningDelta {
        index: u32,
        text: String,
    },
    /// A fragment of a tool call's arguments. `id` is repeated on every delta (empty until the
    /// provider has sent it); `name` appears once known.
    ToolCallDelta {
        index: u32,
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        arguments_delta: String,
    },
    BlockEnd {
        index: u32,
        block: ContentBlock,
    },
    Usage {
        usage: TokenUsage,
    },
    Finish {
        reason: FinishReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay_state: Option<ReplayEnvelope>,
    },
    /// A chunk type this vocabulary does not name (sent by a newer adapter), verbatim: logged
    /// with the attempt, skipped by assembly.
    #[serde(untagged)]
    Other(Unknown<StreamChunk>),
}

impl OpenTags for StreamChunk {
    const TAG: &'static str = "type";
    const KNOWN: &'static [&'static str] = &[
        "block-start",
        "text-delta",
        "reasoning-delta",
        "tool-call-delta",
        "block-end",
        "usage",
        "finish",
    ];
}

impl StreamChunk {
    /// A terminal finish without replay state.
    pub fn finish(reason: FinishReason) -> Self {
        Self::Finish {
            reason,
            replay_state: None,
        }
    }

    /// The terminal error finish a runtime writes when an adapter fails: the way every failure
    /// (thrown before or during the stream) reaches the log.
    pub fn error_finish(failure: LlmFailure) -> Self {
        Self::finish(FinishReason::Error { failure })
    }
}

/// Token accounting for one call. Counts are disjoint: `input_tokens` is uncached input only,
/// cache reads and writes are reported beside it (billed input is the sum).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl TokenUsage {
    /// The two summed; an optional count stays absent only when absent in both.
    pub fn saturating_add(self, other: Self) -> Self {
        Self {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cache_read_tokens: add_optional(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens: add_optional(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens: add_optional(self.reasoning_tokens, other.reasoning_tokens),
        }
    }

    /// `self` less `other`, each count floored at zero.
    pub fn saturating_sub(self, other: Self) -> Self {
        let sub = |a: Option<u64>, b: Option<u64>| a.map(|a| a.saturating_sub(b.unwrap_or(0)));
        Self {
            input_tokens: self.input_tokens.saturating_sub(other.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(other.output_tokens),
            cache_read_tokens: sub(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens: sub(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens: sub(self.reasoning_tokens, other.reasoning_tokens),
        }
    }
}

fn add_optional(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

/// Why a response stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// The output cap was hit; the assembled message drops its tool calls (they may be cut).
    MaxTokens,
    Aborted {
        failure: LlmFailure,
    },
    Error {
        failure: LlmFailure,
    },
}

impl FinishReason {
    pub fn error(failure: LlmFailure) -> Self {
        Self::Error { failure }
    }

    /// The failure of an `error` or `aborted` finish.
    pub fn failure(&self) -> Option<&LlmFailure> {
        match self {
            Self::Aborted { failure } | Self::Error { failure } => Some(failure),
            _ => None,
        }
    }
}

/// Adapter-private state for replaying a successful response, carried by `finish` and stored on
/// the assistant message's model source. Both halves are opaque to the harness; only the split
/// is shared, so assembly can keep per-block entries aligned with the blocks it keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayEnvelope {
    /// Response-level metadata.
    #[serde(default)]
    pub response: serde_json::Value,
    /// One entry per emitted block in first-seen order, when the adapter has per-block state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Vec<serde_json::Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureCode;
    use serde_json::json;

    #[test]
    fn an_unnamed_chunk_type_is_kept_and_the_named_tags_are_the_variants() {
        let newer = json!({"type": "citation", "index": 0, "url": "u"});
        let chunk: StreamChunk = serde_json::from_value(newer.clone()).unwrap();
        assert!(matches!(&chunk, StreamChunk::Other(unknown) if unknown.tag() == Some("citation")));
        assert_eq!(serde_json::to_value(&chunk).unwrap(), newer);
        assert!(
            serde_json::from_value::<StreamChunk>(json!({"type": "text-delta", "index": 0}))
                .is_err()
        );
        let named = [
            StreamChunk::BlockStart {
                index: 0,
                block_type: BlockType::Text,
            },
            StreamChunk::TextDelta {
                index: 0,
                text: String::new(),
            },
            StreamChunk::ReasoningDelta {
                index: 0,
                text: String::new(),
            },
            StreamChunk::ToolCallDelta {
                index: 0,
                id: String::new(),
                name: None,
                arguments_delta: String::new(),
            },
            StreamChunk::BlockEnd {
                index: 0,
                block: ContentBlock::text(""),
            },
            StreamChunk::Usage {
                usage: TokenUsage::default(),
            },
            StreamChunk::finish(FinishReason::Stop),
        ];
        let tags: Vec<String> = named
            .iter()
            .map(|chunk| {
                serde_json::to_value(chunk).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(tags, <StreamChunk as OpenTags>::KNOWN);
    }

    #[test]
    fn chunks_use_the_logged_field_names() {
        let cases = [
            (
                StreamChunk::BlockStart {
                    index: 0,
                    block_type: BlockType::ToolCall,
                },
                json!({"type": "block-start", "index": 0, "blockType": "tool-call"}),
            ),
            (
                StreamChunk::ToolCallDelta {
                    index: 1,
                    id: "c".into(),
                    name: None,
                    arguments_delta: "{".into(),
                },
                json!({"type": "tool-call-delta", "index": 1, "id": "c", "argumentsDelta": "{"}),
            ),
            (
                StreamChunk::error_finish(
                    LlmFailure::new(FailureCode::RateLimit, "x").with_status(429),
                ),
                json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": "x", "code": "RATE_LIMIT", "status": 429}}}),
            ),
            (
                StreamChunk::Usage {
                    usage: TokenUsage {
                        input_tokens: 1,
                        output_tokens: 2,
                        reasoning_tokens: Some(3),
                        ..TokenUsage::default()
                    },
                },
                json!({"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 3}}),
            ),
        ];
        for (chunk, expected) in cases {
            assert_eq!(serde_json::to_value(&chunk).unwrap(), expected);
            assert_eq!(
                serde_json::from_value::<StreamChunk>(expected).unwrap(),
                chunk
            );
        }
    }

    #[test]
    fn replay_state_rides_on_finish() {
        let value = json!({"type": "finish", "reason": {"kind": "stop"}, "replayState": {"response": {"id": "r"}, "blocks": [1, 2]}});
        let chunk: StreamChunk = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&chunk).unwrap(), value);
    }
}
