//! SSE `data:` payloads (chat.completion.chunk JSON, then `[DONE]`) to harness stream chunks.
//!
//! One block per kind of content: a reasoning block, a text block, and one tool-call block per
//! provider tool index, numbered in the order they open. Deltas stream as they arrive; block
//! ends, usage and finish all wait for `[DONE]`, which covers usage attached to the finish chunk
//! and usage in a trailing chunk alike and guarantees nothing follows `finish`.

use dsh_protocol::{
    BlockType, ContentBlock, FailureCode, FinishReason, LlmFailure, StreamChunk, TokenUsage,
};

use crate::response::{WireChoice, WireChunk, WireDelta, WireUsage};

/// The payload that ends a successful stream.
pub const DONE: &str = "[DONE]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
    ToolCall,
}

#[derive(Debug, Clone)]
struct OpenBlock {
    index: u32,
    kind: Kind,
    text: String,
    call_id: Option<String>,
    name: Option<String>,
}

impl OpenBlock {
    fn close(&self) -> ContentBlock {
        match self.kind {
            Kind::Text => ContentBlock::text(self.text.clone()),
            Kind::Reasoning => ContentBlock::reasoning(self.text.clone()),
            Kind::ToolCall => ContentBlock::tool_call(
                self.call_id.clone().unwrap_or_default(),
                self.name.clone().unwrap_or_default(),
                self.text.clone(),
            ),
        }
    }
}

/// Maps a wire `finish_reason`. Reasons the harness has no kind for (`content_filter`,
/// `insufficient_system_resource`, future ones) become an error finish coded with the
/// upper-cased reason.
pub fn map_finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" => FinishReason::ToolCalls,
        "length" => FinishReason::MaxTokens,
        other => FinishReason::error(LlmFailure::new(
            FailureCode::parse(&other.to_uppercase()),
            format!("model stopped: {other}"),
        )),
    }
}

/// Maps wire usage. DeepSeek's `prompt_tokens` includes cache hits; harness counts are
/// disjoint, so the hits are subtracted out of `input_tokens`.
pub fn map_usage(usage: &WireUsage) -> TokenUsage {
    let prompt = usage.prompt_tokens.unwrap_or(0);
    let cache_read = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|details| details.cached_tokens)
        .or(usage.prompt_cache_hit_tokens);
    TokenUsage {
        input_tokens: prompt.saturating_sub(cache_read.unwrap_or(0)),
        output_tokens: usage.completion_tokens.unwrap_or(0),
        cache_read_tokens: cache_read,
        cache_write_tokens: None,
        reasoning_tokens: usage
            .completion_tokens_details
            .as_ref()
            .and_then(|details| details.reasoning_tokens),
    }
}

fn malformed(payload: &str) -> LlmFailure {
    let head: String = payload.chars().take(120).collect();
    LlmFailure::new(
        FailureCode::MalformedResponse,
        format!("malformed SSE payload: {head}"),
    )
}

/// The stream-closed failure: the response ended before `[DONE]`, so it cannot be trusted.
pub fn stream_closed() -> LlmFailure {
    LlmFailure::new(FailureCode::StreamClosed, "SSE stream ended without [DONE]")
}

/// Stateful translator for one response.
#[derive(Debug, Clone, Default)]
pub struct StreamTranslator {
    blocks: Vec<OpenBlock>,
    text: Option<usize>,
    reasoning: Option<usize>,
    /// Provider tool index (absent on lenient servers) → position in `blocks`.
    tools: Vec<(Option<i64>, usize)>,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    done: bool,
}

impl StreamTranslator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `[DONE]` was seen (and the terminal chunks emitted).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// At end of stream: fine after `[DONE]`, [`stream_closed`] otherwise.
    pub fn end(&self) -> Result<(), LlmFailure> {
        if self.done {
            Ok(())
        } else {
            Err(stream_closed())
        }
    }

    /// Translates one `data:` payload. Payloads after `[DONE]` are ignored.
    pub fn push(&mut self, payload: &str) -> Result<Vec<StreamChunk>, LlmFailure> {
        if self.done {
            return Ok(Vec::new());
        }
        if payload == DONE {
            self.done = true;
            return Ok(self.terminal());
        }
        let chunk: WireChunk = serde_json::from_str(payload).map_err(|_| malformed(payload))?;
        let mut out = Vec::new();
        for choice in chunk.choices.iter().flatten() {
            self.choice(choice, &mut out);
        }
        // Usage comes on the finish chunk and/or a trailing usage-only chunk: keep the latest.
        if let Some(usage) = &chunk.usage {
            self.usage = Some(map_usage(usage));
        }
        Ok(out)
    }

    fn open(&mut self, kind: Kind, out: &mut Vec<StreamChunk>) -> usize {
        let index = u32::try_from(self.blocks.len()).unwrap_or(u32::MAX);
        self.blocks.push(OpenBlock {
            index,
            kind,
            text: String::new(),
            call_id: None,
            name: None,
        });
        let block_type = match kind {
            Kind::Text => BlockType::Text,
            Kind::Reasoning => BlockType::Reasoning,
            Kind::ToolCall => BlockType::ToolCall,
        };
        out.push(StreamChunk::BlockStart { index, block_type });
        self.blocks.len() - 1
    }

    fn choice(&mut self, choice: &WireChoice, out: &mut Vec<StreamChunk>) {
        if let Some(delta) = &choice.delta {
            self.delta(delta, out);
        }
        if let Some(reason) = &choice.finish_reason {
            self.finish = Some(map_finish_reason(reason));
        }
    }

    fn delta(&mut self, delta: &WireDelta, out: &mut Vec<StreamChunk>) {
        // Reasoning first: thinking mode streams it before text. The first chunk of a thinking
        // stream carries an empty reasoning string, which must not open a block.
        if let Some(text) = delta.reasoning_content.as_deref().filter(|t| !t.is_empty()) {
            let at = match self.reasoning {
                Some(at) => at,
                None => {
                    let at = self.open(Kind::Reasoning, out);
                    *self.reasoning.insert(at)
                }
            };
            self.blocks[at].text.push_str(text);
            out.push(StreamChunk::ReasoningDelta {
                index: self.blocks[at].index,
                text: text.to_owned(),
            });
        }
        if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            let at = match self.text {
                Some(at) => at,
                None => {
                    let at = self.open(Kind::Text, out);
                    *self.text.insert(at)
                }
            };
            self.blocks[at].text.push_str(text);
            out.push(StreamChunk::TextDelta {
                index: self.blocks[at].index,
                text: text.to_owned(),
            });
        }
        for call in delta.tool_calls.iter().flatten() {
            let key = call.index;
            let at = match self.tools.iter().find(|(k, _)| *k == key) {
                Some(&(_, at)) => at,
                None => {
                    let at = self.open(Kind::ToolCall, out);
                    self.tools.push((key, at));
                    at
                }
            };
            let block = &mut self.blocks[at];
            if let Some(id) = &call.id {
                block.call_id = Some(id.clone());
            }
            let function = call.function.as_ref();
            if let Some(name) = function.and_then(|function| function.name.as_ref()) {
                block.name = Some(name.clone());
            }
            // Arguments stay the model's raw fragments; they are never parsed here.
            let fragment = function
                .and_then(|function| function.arguments.as_deref())
                .unwrap_or_default();
            block.text.push_str(fragment);
            out.push(StreamChunk::ToolCallDelta {
                index: block.index,
                id: block.call_id.clone().unwrap_or_default(),
                name: block.name.clone(),
                arguments_delta: fragment.to_owned(),
            });
        }
    }

    fn terminal(&mut self) -> Vec<StreamChunk> {
        let mut out: Vec<StreamChunk> = self
            .blocks
            .iter()
            .map(|block| StreamChunk::BlockEnd {
                index: block.index,
                block: block.close(),
            })
            .collect();
        if let Some(usage) = self.usage.take() {
            out.push(StreamChunk::Usage { usage });
        }
        let reason = match self.finish.take().unwrap_or(FinishReason::Stop) {
            // A normal completion with nothing in it would end the turn silently; as a failure
            // it is retried, which is safe because nothing durable was produced.
            FinishReason::Stop if self.blocks.is_empty() => FinishReason::error(LlmFailure::new(
                FailureCode::EmptyResponse,
                "model returned a completed response with no content",
            )),
            reason => reason,
        };
        out.push(StreamChunk::finish(reason));
        out
    }
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
