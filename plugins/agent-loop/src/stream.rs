//! One model attempt of a step: the request through `llm`, every chunk logged as it arrives
//! (`assistant/chunk`, the adapter's own text), then the assembled `assistant/message` citing
//! those chunks. A cancel or a cut stream keeps what arrived as an interrupted message.

use std::sync::Arc;

use abi_stable::std_types::{RErr, ROk, RSome};
use dsh_llm_kit::BlockAssembler;
use dsh_llm_seam::LlmService;
use dsh_plugin_api::Json;
use dsh_plugin_api::cancel::CancelFlag;
use dsh_protocol::{
    AssistantMessageEvent, ContentBlock, FailureCode, FinishReason, GenerateRequest, LlmFailure,
    Message, MessageSource, Role, StreamChunk, TokenUsage,
};

use crate::error::LoopError;
use crate::log::Log;

/// How an attempt ended.
pub(crate) enum Attempt {
    /// The stream finished; the message was logged.
    Finished {
        blocks: Vec<ContentBlock>,
        finish: FinishReason,
        usage: Option<TokenUsage>,
    },
    /// Cancelled mid-stream; what arrived was logged as an interrupted message.
    Cancelled,
    /// The request failed or the stream broke; what arrived is not logged as a message yet,
    /// because a retry replaces it (see [`Partial::keep`]).
    Failed(LlmFailure, Partial),
}

/// What a broken stream delivered before it broke.
#[derive(Default)]
pub(crate) struct Partial {
    blocks: Vec<ContentBlock>,
    usage: Option<TokenUsage>,
    seqs: Vec<u64>,
}

impl Partial {
    fn of(assembler: &BlockAssembler, seqs: Vec<u64>) -> Self {
        Self {
            blocks: assembler.interrupted_blocks(),
            usage: assembler.usage(),
            seqs,
        }
    }

    /// Logs the delivered prefix as an interrupted message (when the turn ends on it). Tool
    /// calls are left out: they never ran, and a logged call without a result would make
    /// every later request of the session invalid.
    pub(crate) fn keep(&self, place: &StepPlace<'_>) -> Result<(), LoopError> {
        let blocks: Vec<ContentBlock> = self
            .blocks
            .iter()
            .filter(|block| !matches!(block, ContentBlock::ToolCall { .. }))
            .cloned()
            .collect();
        if blocks.is_empty() {
            return Ok(());
        }
        place.message(blocks, self.usage, true, &self.seqs)
    }
}

/// Where the attempt's events go.
pub(crate) struct StepPlace<'a> {
    pub(crate) log: &'a Log<'a>,
    pub(crate) turn: u64,
    pub(crate) step: u64,
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) message_id: String,
}

impl StepPlace<'_> {
    fn chunk(&self, chunk: &Json<StreamChunk>) -> Result<u64, LoopError> {
        self.log.chunk(self.turn, self.step, chunk)
    }

    fn failure(&self, failure: &LlmFailure) -> Result<u64, LoopError> {
        self.chunk(&Json::encode(&StreamChunk::error_finish(failure.clone())))
    }

    fn message(
        &self,
        blocks: Vec<ContentBlock>,
        usage: Option<TokenUsage>,
        interrupted: bool,
        sources: &[u64],
    ) -> Result<(), LoopError> {
        let data = AssistantMessageEvent {
            turn: self.turn,
            step: self.step,
            message: Message {
                id: self.message_id.clone(),
                role: Role::Assistant,
                content: blocks,
                source: MessageSource::model(self.provider, self.model),
            },
            usage,
            interrupted: interrupted.then_some(true),
        };
        self.log.append_citing(&data, sources).map(|_| ())
    }
}

fn failure(message: impl Into<String>) -> LlmFailure {
    LlmFailure::new(FailureCode::Unknown, message.into())
}

/// A failure as it crossed, or one that says it could not be read.
fn failure_of(crossed: &Json<LlmFailure>) -> LlmFailure {
    crossed
        .decode()
        .unwrap_or_else(|error| failure(format!("the model failed: {error}")))
}

/// Runs one attempt; an error is a log failure (the turn ends `error`).
pub(crate) async fn attempt(
    llm: &LlmService,
    request: Json<GenerateRequest>,
    place: &StepPlace<'_>,
    cancel: &Arc<CancelFlag>,
) -> Result<Attempt, LoopError> {
    let opening = llm.stream(request);
    let Some(opened) = cancel.until(opening).await else {
        return Ok(Attempt::Cancelled);
    };
    let stream = match opened {
        ROk(stream) => stream,
        RErr(crossed) => {
            let failure = failure_of(&crossed);
            place.failure(&failure)?;
            return Ok(Attempt::Failed(failure, Partial::default()));
        }
    };
    let mut assembler = BlockAssembler::new();
    let mut seqs = Vec::new();
    loop {
        let Some(arrived) = cancel.until(stream.next()).await else {
            Partial::of(&assembler, seqs).keep(place)?;
            return Ok(Attempt::Cancelled);
        };
        match arrived {
            ROk(RSome(chunk)) => {
                // Parsed once, to assemble the message; the log takes the adapter's text.
                let Ok(parsed) = chunk.decode() else {
                    let failure = failure(format!(
                        "the model stream sent a malformed chunk: {}",
                        chunk.text()
                    ));
                    return Ok(Attempt::Failed(failure, Partial::of(&assembler, seqs)));
                };
                seqs.push(place.chunk(&chunk)?);
                assembler.push(&parsed);
            }
            ROk(_) => break,
            RErr(crossed) => {
                let failure = failure_of(&crossed);
                seqs.push(place.failure(&failure)?);
                return Ok(Attempt::Failed(failure, Partial::of(&assembler, seqs)));
            }
        }
    }
    if !assembler.finished() {
        let failure = failure("the model stream ended without a finish chunk");
        return Ok(Attempt::Failed(failure, Partial::default()));
    }
    let finish = assembler.finish();
    let blocks = match assembler.blocks() {
        Ok(blocks) => blocks,
        Err(error) => {
            let failure = failure(format!("the model stream could not be assembled: {error}"));
            return Ok(Attempt::Failed(failure, Partial::default()));
        }
    };
    let usage = assembler.usage();
    if let FinishReason::Error { failure } | FinishReason::Aborted { failure } = &finish {
        // Logged (as interrupted, without calls) only if the turn ends on it: a retry
        // replaces it.
        let partial = Partial {
            blocks,
            usage,
            seqs,
        };
        return Ok(Attempt::Failed(failure.clone(), partial));
    }
    // A step cut off by the output cap is logged even when nothing whole arrived (a call
    // whose arguments were cut is dropped): its message carries the usage, as the
    // reference's does.
    if !blocks.is_empty() || finish == FinishReason::MaxTokens {
        place.message(blocks.clone(), usage, false, &seqs)?;
    }
    Ok(Attempt::Finished {
        blocks,
        finish,
        usage,
    })
}
