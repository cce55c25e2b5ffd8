//! Folding a chunk stream into the assistant message's content blocks.

use std::collections::HashMap;

use dsh_protocol::{
    BlockType, ContentBlock, FinishReason, Message, MessageSource, ReplayEnvelope, Role,
    StreamChunk, TokenUsage,
};

/// A block that was opened but never closed, of a type deltas cannot build (an image or a tool
/// result): the stream is broken, and guessing its content would put an invented block into
/// durable history.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot assemble incomplete block {index} of type {block_type:?}")]
pub struct AssemblyError {
    pub index: u32,
    pub block_type: BlockType,
}

#[derive(Debug, Clone)]
struct Partial {
    block_type: BlockType,
    text: String,
    call_id: Option<String>,
    call_name: Option<String>,
    arguments: String,
    /// Set by `block-end`: authoritative, and it freezes the partial.
    closed: Option<ContentBlock>,
}

impl Partial {
    fn new(block_type: BlockType) -> Self {
        Self {
            block_type,
            text: String::new(),
            call_id: None,
            call_name: None,
            arguments: String::new(),
            closed: None,
        }
    }

    fn assemble(&self, index: u32) -> Result<ContentBlock, AssemblyError> {
        if let Some(block) = &self.closed {
            return Ok(block.clone());
        }
        match self.block_type {
            BlockType::Text => Ok(ContentBlock::text(self.text.clone())),
            BlockType::Reasoning => Ok(ContentBlock::reasoning(self.text.clone())),
            BlockType::ToolCall => Ok(ContentBlock::tool_call(
                self.call_id
                    .clone()
                    .unwrap_or_else(|| format!("call-{index}")),
                self.call_name.clone().unwrap_or_default(),
                self.arguments.clone(),
            )),
            block_type @ (BlockType::Image | BlockType::ToolResult | BlockType::Other) => {
                Err(AssemblyError { index, block_type })
            }
        }
    }
}

/// Incrementally assembles [`StreamChunk`]s into the final content blocks, usage and finish.
///
/// `block-end` wins over accumulated deltas (and the first close wins over later ones); deltas
/// for a closed index are ignored, so a misbehaving adapter can neither grow memory nor change a
/// finished block. Delta-only streams (no start, no end) assemble from their deltas.
#[derive(Debug, Clone, Default)]
pub struct BlockAssembler {
    partials: HashMap<u32, Partial>,
    order: Vec<u32>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    replay_state: Option<ReplayEnvelope>,
}

impl BlockAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, chunk: &StreamChunk) {
        match chunk {
            StreamChunk::BlockStart { index, block_type } => {
                self.ensure(*index, *block_type);
            }
            StreamChunk::TextDelta { index, text } => {
                let partial = self.ensure(*index, BlockType::Text);
                if partial.closed.is_none() {
                    partial.text.push_str(text);
                }
            }
            StreamChunk::ReasoningDelta { index, text } => {
                let partial = self.ensure(*index, BlockType::Reasoning);
                if partial.closed.is_none() {
                    partial.text.push_str(text);
                }
            }
            StreamChunk::ToolCallDelta {
                index,
                id,
                name,
                arguments_delta,
            } => {
                let partial = self.ensure(*index, BlockType::ToolCall);
                if partial.closed.is_none() {
                    partial.call_id = Some(id.clone());
                    if let Some(name) = name.as_ref().filter(|name| !name.is_empty()) {
                        partial.call_name = Some(name.clone());
                    }
                    partial.arguments.push_str(arguments_delta);
                }
            }
            StreamChunk::BlockEnd { index, block } => {
                let partial = self.ensure(*index, block.block_type());
                if partial.closed.is_none() {
                    partial.closed = Some(block.clone());
                }
            }
            StreamChunk::Usage { usage } => self.usage = Some(*usage),
            StreamChunk::Finish {
                reason,
                replay_state,
            } => {
                self.finish = Some(reason.clone());
                self.replay_state = replay_state.clone();
            }
            // A newer adapter's chunk this assembler cannot read: it stays in the log only.
            StreamChunk::Other(_) => {}
        }
    }

    fn ensure(&mut self, index: u32, block_type: BlockType) -> &mut Partial {
        let order = &mut self.order;
        self.partials.entry(index).or_insert_with(|| {
            order.push(index);
            Partial::new(block_type)
        })
    }

    /// Every seen block in first-seen order, plus which of them the finish keeps: a max-tokens
    /// finish drops tool calls, whose arguments may be cut off and must not be executed.
    fn assembled(&self) -> Result<(Vec<ContentBlock>, Vec<bool>), AssemblyError> {
        let mut all = Vec::with_capacity(self.order.len());
        for &index in &self.order {
            if let Some(partial) = self.partials.get(&index) {
                all.push(partial.assemble(index)?);
            }
        }
        let truncated = matches!(self.finish, Some(FinishReason::MaxTokens));
        let kept = all
            .iter()
            .map(|block| !(truncated && matches!(block, ContentBlock::ToolCall { .. })))
            .collect();
        Ok((all, kept))
    }

    /// The assembled content, in stream order (see [`AssemblyError`] for the one failure).
    pub fn blocks(&self) -> Result<Vec<ContentBlock>, AssemblyError> {
        let (all, kept) = self.assembled()?;
        Ok(all
            .into_iter()
            .zip(kept)
            .filter_map(|(block, keep)| keep.then_some(block))
            .collect())
    }

    /// What an interrupted stream may keep: text and reasoning blocks (closed or open) with
    /// non-blank text. Tool calls are left out because they were never dispatched.
    pub fn interrupted_blocks(&self) -> Vec<ContentBlock> {
        self.order
            .iter()
            .filter_map(|index| {
                let partial = self.partials.get(index)?;
                let block = partial.assemble(*index).ok()?;
                match &block {
                    ContentBlock::Text { text } | ContentBlock::Reasoning { text }
                        if !text.trim().is_empty() =>
                    {
                        Some(block)
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// Usage from the last `usage` chunk.
    pub fn usage(&self) -> Option<TokenUsage> {
        self.usage
    }

    /// The finish reason; `stop` when the stream ended without one.
    pub fn finish(&self) -> FinishReason {
        self.finish.clone().unwrap_or(FinishReason::Stop)
    }

    /// Whether a `finish` chunk arrived.
    pub fn finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The finish's replay state with per-block entries pruned in step with [`Self::blocks`];
    /// `None` when its entries do not line up with the emitted blocks.
    pub fn replay_state(&self) -> Option<ReplayEnvelope> {
        let envelope = self.replay_state.clone()?;
        let Some(entries) = &envelope.blocks else {
            return Some(envelope);
        };
        let (all, kept) = self.assembled().ok()?;
        if entries.len() != all.len() {
            return None;
        }
        if kept.iter().all(|keep| *keep) {
            return Some(envelope);
        }
        let blocks = entries
            .iter()
            .zip(&kept)
            .filter(|(_, keep)| **keep)
            .map(|(entry, _)| entry.clone())
            .collect();
        Some(ReplayEnvelope {
            response: envelope.response,
            blocks: Some(blocks),
        })
    }

    /// The assistant message over [`Self::blocks`].
    pub fn message(
        &self,
        id: impl Into<String>,
        source: MessageSource,
    ) -> Result<Message, AssemblyError> {
        Ok(Message {
            id: id.into(),
            role: Role::Assistant,
            content: self.blocks()?,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fold(chunks: &[StreamChunk]) -> BlockAssembler {
        let mut assembler = BlockAssembler::new();
        for chunk in chunks {
            assembler.push(chunk);
        }
        assembler
    }

    fn call_delta(index: u32, id: &str, name: Option<&str>, args: &str) -> StreamChunk {
        StreamChunk::ToolCallDelta {
            index,
            id: id.into(),
            name: name.map(str::to_owned),
            arguments_delta: args.into(),
        }
    }

    #[test]
    fn deltas_accumulate_without_block_end() {
        let assembler = fold(&[
            StreamChunk::ReasoningDelta {
                index: 0,
                text: "th".into(),
            },
            StreamChunk::ReasoningDelta {
                index: 0,
                text: "ink".into(),
            },
            call_delta(1, "c1", Some("bash"), "{\"a\""),
            call_delta(1, "c1", None, ":1}"),
            StreamChunk::TextDelta {
                index: 2,
                text: "hi".into(),
            },
        ]);
        assert_eq!(
            assembler.blocks().unwrap(),
            [
                ContentBlock::reasoning("think"),
                ContentBlock::tool_call("c1", "bash", "{\"a\":1}"),
                ContentBlock::text("hi"),
            ]
        );
        assert_eq!(assembler.finish(), FinishReason::Stop);
        assert!(!assembler.finished());
    }

    #[test]
    fn block_end_wins_and_freezes_the_block() {
        let assembler = fold(&[
            StreamChunk::BlockStart {
                index: 0,
                block_type: BlockType::Text,
            },
            StreamChunk::TextDelta {
                index: 0,
                text: "draft".into(),
            },
            StreamChunk::BlockEnd {
                index: 0,
                block: ContentBlock::text("final"),
            },
            StreamChunk::TextDelta {
                index: 0,
                text: "late".into(),
            },
            StreamChunk::BlockEnd {
                index: 0,
                block: ContentBlock::text("second close"),
            },
        ]);
        assert_eq!(assembler.blocks().unwrap(), [ContentBlock::text("final")]);
    }

    #[test]
    fn max_tokens_drops_tool_calls_and_their_replay_entries() {
        let assembler = fold(&[
            StreamChunk::BlockEnd {
                index: 0,
                block: ContentBlock::text("partial"),
            },
            StreamChunk::BlockEnd {
                index: 1,
                block: ContentBlock::tool_call("c", "todo", "{"),
            },
            StreamChunk::Finish {
                reason: FinishReason::MaxTokens,
                replay_state: Some(ReplayEnvelope {
                    response: json!({"id": "r"}),
                    blocks: Some(vec![json!("a"), json!("b")]),
                }),
            },
        ]);
        assert_eq!(assembler.blocks().unwrap(), [ContentBlock::text("partial")]);
        assert_eq!(
            assembler.replay_state(),
            Some(ReplayEnvelope {
                response: json!({"id": "r"}),
                blocks: Some(vec![json!("a")]),
            })
        );
    }

    #[test]
    fn misaligned_replay_state_is_discarded() {
        let assembler = fold(&[
            StreamChunk::BlockEnd {
                index: 0,
                block: ContentBlock::text("x"),
            },
            StreamChunk::Finish {
                reason: FinishReason::Stop,
                replay_state: Some(ReplayEnvelope {
                    response: json!(null),
                    blocks: Some(vec![]),
                }),
            },
        ]);
        assert_eq!(assembler.replay_state(), None);
    }

    #[test]
    fn an_open_image_block_is_an_error_and_interruption_keeps_visible_text() {
        let assembler = fold(&[
            StreamChunk::TextDelta {
                index: 0,
                text: "kept".into(),
            },
            StreamChunk::ReasoningDelta {
                index: 1,
                text: "  ".into(),
            },
            call_delta(2, "c", Some("f"), "{}"),
            StreamChunk::BlockStart {
                index: 3,
                block_type: BlockType::Image,
            },
        ]);
        assert_eq!(
            assembler.blocks(),
            Err(AssemblyError {
                index: 3,
                block_type: BlockType::Image
            })
        );
        assert_eq!(assembler.interrupted_blocks(), [ContentBlock::text("kept")]);
    }

    #[test]
    fn a_tool_call_without_id_gets_a_positional_one() {
        let assembler = fold(&[StreamChunk::BlockStart {
            index: 4,
            block_type: BlockType::ToolCall,
        }]);
        assert_eq!(
            assembler
                .message("m", MessageSource::model("p", "m"))
                .unwrap()
                .content,
            [ContentBlock::tool_call("call-4", "", "")]
        );
    }
}
