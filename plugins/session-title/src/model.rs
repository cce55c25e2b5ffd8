//! Asking the model: one stream through the `llm` service, bounded in time, read to its end
//! into the text it answered. Anything but a text answer that stopped on its own is an error,
//! which the caller logs and survives.

use std::time::Duration;

use abi_stable::std_types::ROption;
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::{Context, Json};
use dsh_protocol::{ContentBlock, FinishReason, GenerateRequest, LlmFailure, StreamChunk};

/// Why the model gave no answer to take a title from.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModelError {
    #[error("no `llm` service is running")]
    NoModel,
    #[error("the request failed: {0}")]
    Failed(String),
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("the answer reached llm.maxOutputTokens ({0}) before it ended")]
    TooLong(u64),
    #[error("the model called tools instead of answering")]
    ToolCalls,
}

fn failed(failure: &Json<LlmFailure>) -> ModelError {
    ModelError::Failed(failure.decode().map_or_else(
        |error| error.to_string(),
        |failure| format!("{}: {}", failure.code, failure.message),
    ))
}

/// The text of the model's answer to `request`, within `timeout` (the stream is dropped, and
/// with it the connection, when the time is up).
pub(crate) async fn ask(
    ctx: &Context,
    request: &GenerateRequest,
    timeout: Duration,
) -> Result<String, ModelError> {
    match first_of(answer(ctx, request), ctx.sleep(timeout)).await {
        Either::Left(answered) => answered,
        Either::Right(()) => Err(ModelError::TimedOut(timeout)),
    }
}

async fn answer(ctx: &Context, request: &GenerateRequest) -> Result<String, ModelError> {
    let Ok(Some(llm)) = ctx.get::<LlmService>(LLM_SERVICE) else {
        return Err(ModelError::NoModel);
    };
    let stream = llm
        .stream(Json::encode(request))
        .await
        .into_result()
        .map_err(|failure| failed(&failure))?;
    let mut answer = Answer::default();
    loop {
        match stream.next().await.into_result() {
            Ok(ROption::RSome(chunk)) => {
                if let Ok(chunk) = chunk.decode() {
                    answer.take(chunk)?;
                }
            }
            Ok(ROption::RNone) => break,
            Err(failure) => return Err(failed(&failure)),
        }
    }
    answer.text(request.config.max_tokens.unwrap_or_default())
}

/// What a stream said so far.
#[derive(Default)]
struct Answer {
    /// The texts of the ended text blocks, each whole.
    blocks: Vec<String>,
    /// The deltas, for a stream that never ends its blocks.
    deltas: String,
    tool_calls: bool,
    cut: bool,
}

impl Answer {
    fn take(&mut self, chunk: StreamChunk) -> Result<(), ModelError> {
        match chunk {
            StreamChunk::TextDelta { text, .. } => self.deltas.push_str(&text),
            StreamChunk::BlockEnd {
                block: ContentBlock::Text { text },
                ..
            } => self.blocks.push(text),
            StreamChunk::ToolCallDelta { .. } => self.tool_calls = true,
            StreamChunk::Finish { reason, .. } => match reason {
                FinishReason::Error { failure } | FinishReason::Aborted { failure } => {
                    return Err(ModelError::Failed(format!(
                        "{}: {}",
                        failure.code, failure.message
                    )));
                }
                FinishReason::ToolCalls => self.tool_calls = true,
                FinishReason::MaxTokens => self.cut = true,
                FinishReason::Stop => {}
            },
            _ => {}
        }
        Ok(())
    }

    /// The answer's text: its text blocks, one after the other.
    fn text(self, max_tokens: u64) -> Result<String, ModelError> {
        if self.tool_calls {
            return Err(ModelError::ToolCalls);
        }
        // A title cut off by the cap is a phrase cut short: better none.
        if self.cut {
            return Err(ModelError::TooLong(max_tokens));
        }
        Ok(match self.blocks.is_empty() {
            true => self.deltas,
            false => self.blocks.join(" "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::FailureCode;

    fn finish(reason: FinishReason) -> StreamChunk {
        serde_json::from_value(serde_json::json!({"type": "finish", "reason": reason})).unwrap()
    }

    fn text_stream(parts: &[&str]) -> Vec<StreamChunk> {
        let mut chunks: Vec<StreamChunk> = parts
            .iter()
            .map(|part| {
                serde_json::from_value(
                    serde_json::json!({"type": "text-delta", "index": 0, "text": part}),
                )
                .unwrap()
            })
            .collect();
        chunks.push(finish(FinishReason::Stop));
        chunks
    }

    fn read(chunks: Vec<StreamChunk>) -> Result<String, ModelError> {
        let mut answer = Answer::default();
        for chunk in chunks {
            answer.take(chunk)?;
        }
        answer.text(64)
    }

    #[test]
    fn the_deltas_are_the_answer_when_no_block_ends() {
        assert_eq!(
            read(text_stream(&["Late", " durable", " title"])).unwrap(),
            "Late durable title"
        );
    }

    #[test]
    fn ended_blocks_win_over_deltas() {
        let mut chunks = text_stream(&["Late", " title"]);
        chunks.insert(
            2,
            serde_json::from_value(serde_json::json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": "Late title"}})).unwrap(),
        );
        assert_eq!(read(chunks).unwrap(), "Late title");
    }

    #[test]
    fn a_failed_cut_or_tool_calling_answer_is_an_error() {
        let failure = LlmFailure::new(FailureCode::Server, "boom".to_owned());
        let error = read(vec![finish(FinishReason::error(failure))]).unwrap_err();
        assert!(error.to_string().contains("boom"), "{error}");
        let mut cut = text_stream(&["Late"]);
        cut.pop();
        cut.push(finish(FinishReason::MaxTokens));
        assert!(matches!(read(cut), Err(ModelError::TooLong(64))));
        let calls = vec![finish(FinishReason::ToolCalls)];
        assert!(matches!(read(calls), Err(ModelError::ToolCalls)));
    }
}
