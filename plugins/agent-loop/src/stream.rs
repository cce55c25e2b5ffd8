//! One model attempt of a step: the request through `llm`, every chunk logged as it arrives
//! (`assistant/chunk`), then the assembled `assistant/message` citing those chunks. A cancel
//! or a cut stream keeps what arrived as an interrupted message.

use std::sync::Arc;

use abi_stable::std_types::{RErr, ROk, RSome, RString};
use dsh_llm_api::{
    BlockAssembler, ContentBlock, FinishReason, LlmFailure, StreamChunk, TokenUsage,
};
use dsh_llm_seam::LlmService;
use dsh_tools_seam::CancelFlag;
use serde_json::{Value, json};

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
    /// The request failed or the stream broke; what arrived is not logged yet, because a
    /// retry replaces it (see [`Partial::keep`]).
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
    pub(crate) fn keep(&self, place: &StepPlace<'_>) -> Result<(), String> {
        let blocks = without_calls(&self.blocks);
        if blocks.is_empty() {
            return Ok(());
        }
        place.message(&blocks, self.usage.as_ref(), true, &self.seqs)
    }
}

fn without_calls(blocks: &[ContentBlock]) -> Vec<ContentBlock> {
    blocks
        .iter()
        .filter(|block| !matches!(block, ContentBlock::ToolCall { .. }))
        .cloned()
        .collect()
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
    fn chunk(&self, chunk: &Value) -> Result<u64, String> {
        self.log.append(
            "assistant/chunk",
            &json!({"turn": self.turn, "step": self.step, "chunk": chunk}),
        )
    }

    fn message(
        &self,
        blocks: &[ContentBlock],
        usage: Option<&TokenUsage>,
        interrupted: bool,
        sources: &[u64],
    ) -> Result<(), String> {
        let mut data = json!({
            "turn": self.turn,
            "step": self.step,
            "message": {
                "role": "assistant",
                "content": blocks,
                "source": {"kind": "model", "provider": self.provider, "model": self.model},
                "id": self.message_id,
            },
        });
        if let Some(usage) = usage {
            data["usage"] = json!(usage);
        }
        if interrupted {
            data["interrupted"] = json!(true);
        }
        self.log
            .append_citing("assistant/message", &data, sources)
            .map(|_| ())
    }
}

fn failure_of(json: &str) -> LlmFailure {
    serde_json::from_str(json)
        .unwrap_or_else(|_| LlmFailure::new(dsh_llm_api::FailureCode::Unknown, json.to_owned()))
}

/// Runs one attempt; `Err` is a log failure (the turn ends `error`).
pub(crate) async fn attempt(
    llm: &LlmService,
    request: String,
    place: &StepPlace<'_>,
    cancel: &Arc<CancelFlag>,
) -> Result<Attempt, String> {
    let opening = llm.stream(RString::from(request));
    let Some(opened) = cancel.until(opening).await else {
        return Ok(Attempt::Cancelled);
    };
    let stream = match opened {
        ROk(stream) => stream,
        RErr(failure) => {
            let failure = failure_of(&failure);
            place.chunk(
                &json!({"type": "finish", "reason": FinishReason::error(failure.clone())}),
            )?;
            return Ok(Attempt::Failed(failure, Partial::default()));
        }
    };
    let mut assembler = BlockAssembler::new();
    let mut seqs = Vec::new();
    loop {
        let arrived = match cancel.until(stream.next()).await {
            Some(arrived) => arrived,
            None => {
                Partial::of(&assembler, seqs).keep(place)?;
                return Ok(Attempt::Cancelled);
            }
        };
        match arrived {
            ROk(RSome(chunk)) => {
                let Ok(value) = serde_json::from_str::<Value>(&chunk) else {
                    let failure = LlmFailure::new(
                        dsh_llm_api::FailureCode::Unknown,
                        format!("the model stream sent a malformed chunk: {chunk}"),
                    );
                    return Ok(Attempt::Failed(failure, Partial::of(&assembler, seqs)));
                };
                seqs.push(place.chunk(&value)?);
                if let Ok(parsed) = serde_json::from_value::<StreamChunk>(value) {
                    assembler.push(&parsed);
                }
            }
            ROk(_) => break,
            RErr(failure) => {
                let failure = failure_of(&failure);
                seqs.push(place.chunk(
                    &json!({"type": "finish", "reason": FinishReason::error(failure.clone())}),
                )?);
                return Ok(Attempt::Failed(failure, Partial::of(&assembler, seqs)));
            }
        }
    }
    if !assembler.finished() {
        let failure = LlmFailure::new(
            dsh_llm_api::FailureCode::Unknown,
            "the model stream ended without a finish chunk".to_owned(),
        );
        return Ok(Attempt::Failed(failure, Partial::default()));
    }
    let finish = assembler.finish();
    let blocks = match assembler.blocks() {
        Ok(blocks) => blocks,
        Err(error) => {
            return Ok(Attempt::Failed(
                LlmFailure::new(
                    dsh_llm_api::FailureCode::Unknown,
                    format!("the model stream could not be assembled: {error}"),
                ),
                Partial::default(),
            ));
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
    if !blocks.is_empty() {
        place.message(&blocks, usage.as_ref(), false, &seqs)?;
    }
    Ok(Attempt::Finished {
        blocks,
        finish,
        usage,
    })
}
