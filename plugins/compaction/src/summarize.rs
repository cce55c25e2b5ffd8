//! The summary request: the conversation's own system prompt, tools and history (so the
//! provider serves it from the prefix it already cached), then one instruction to summarize
//! all but the last messages. It names its session, so the model-visible check holds its
//! history to the log (the instruction after it is the one message it may add); nothing of it
//! enters the history but its answer, logged as `compaction/summary`.

use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::{Context, Json};
use dsh_protocol::{
    ContentBlock, FinishReason, GenerateRequest, LlmCallConfig, Message, MessageSource, Purpose,
    RequestHeader, StreamChunk, TokenUsage,
};

/// A summary as the model wrote it.
pub(crate) struct Summary {
    pub(crate) text: String,
    pub(crate) usage: Option<TokenUsage>,
    pub(crate) config: LlmCallConfig,
}

/// Why no summary came.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SummaryError {
    #[error("no request of this session was logged yet, so there is no route to ask")]
    NoHeader,
    #[error("no `llm` service is running")]
    NoModel,
    #[error("the summary request failed: {0}")]
    Failed(String),
    #[error("the summary came back empty")]
    Empty,
    #[error("the model answered the summary request with tool calls instead of a summary")]
    ToolCalls,
}

fn instruction(tail: usize, focus: Option<&str>) -> String {
    let focus = focus
        .filter(|focus| !focus.trim().is_empty())
        .map_or_else(String::new, |focus| {
            format!(" Above all, keep: {}.", focus.trim())
        });
    format!(
        "Write a checkpoint summary of this conversation so far, leaving out its last {tail} \
         message(s), which stay verbatim after the summary. Keep what the task needs to go on: \
         the goal and the user's constraints, decisions made and why, the files touched and their \
         state, commands run and what they showed, errors met, open questions and the next \
         steps.{focus} Reply with the summary only, as plain text, and call no tools."
    )
}

/// Asks the session's model for a summary of `messages` minus the last `tail`.
pub(crate) async fn summarize(
    ctx: &Context,
    session: &str,
    header: Option<&RequestHeader>,
    messages: &[Message],
    tail: usize,
    max_tokens: u64,
    focus: Option<&str>,
) -> Result<Summary, SummaryError> {
    let header = header.ok_or(SummaryError::NoHeader)?;
    let Ok(Some(llm)) = ctx.get::<LlmService>(LLM_SERVICE) else {
        return Err(SummaryError::NoModel);
    };
    let mut config = header.config.clone();
    config.max_tokens = Some(max_tokens);
    let mut history = messages.to_vec();
    history.push(Message::user(
        "",
        vec![ContentBlock::text(instruction(tail, focus))],
        MessageSource::plugin(),
    ));
    let request = GenerateRequest {
        config: config.clone(),
        system: header.system.clone(),
        messages: history,
        history: None,
        tools: header.tools.clone().unwrap_or_default(),
        session_id: Some(session.to_owned()),
        purpose: Some(Purpose::Compaction),
    };
    let stream = llm
        .stream(Json::encode(&request))
        .await
        .into_result()
        .map_err(|failure| {
            SummaryError::Failed(
                failure
                    .decode()
                    .map_or_else(|e| e.to_string(), |f| f.message),
            )
        })?;
    // A block's end carries its whole text; deltas are the fallback of a stream without ends.
    let (mut text, mut ended, mut usage, mut tool_calls) =
        (String::new(), String::new(), None, false);
    loop {
        let chunk = match stream.next().await.into_result() {
            Ok(abi_stable::std_types::ROption::RSome(chunk)) => chunk,
            Ok(abi_stable::std_types::ROption::RNone) => break,
            Err(failure) => {
                return Err(SummaryError::Failed(
                    failure
                        .decode()
                        .map_or_else(|e| e.to_string(), |f| f.message),
                ));
            }
        };
        match chunk.decode() {
            Ok(StreamChunk::TextDelta { text: delta, .. }) => text.push_str(&delta),
            Ok(StreamChunk::BlockEnd {
                block: ContentBlock::Text { text: whole },
                ..
            }) => {
                ended.push_str(&whole);
            }
            Ok(StreamChunk::ToolCallDelta { .. }) => tool_calls = true,
            Ok(StreamChunk::Usage { usage: counted }) => usage = Some(counted),
            Ok(StreamChunk::Finish { reason, .. }) => match reason {
                FinishReason::Error { failure } | FinishReason::Aborted { failure } => {
                    return Err(SummaryError::Failed(failure.message));
                }
                FinishReason::ToolCalls => tool_calls = true,
                _ => {}
            },
            _ => {}
        }
    }
    if tool_calls {
        return Err(SummaryError::ToolCalls);
    }
    let text = match ended.trim().is_empty() {
        true => text.trim().to_owned(),
        false => ended.trim().to_owned(),
    };
    if text.is_empty() {
        return Err(SummaryError::Empty);
    }
    Ok(Summary {
        text,
        usage,
        config,
    })
}
