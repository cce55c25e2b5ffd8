//! One step after its `step/start`: the input entered as `user/message`s, the prompt and the
//! header, the model attempt (retried as `agent/request-error` says, the request rebuilt from
//! the log each time), and the step's tool calls. The durability checkpoint before the request
//! is the `session-checkpoints` row's `agent/request` listener: it flushes after every
//! listener shaped the request.

use abi_stable::std_types::{RString, RVec};
use dsh_agents_seam::AgentRequest;
use dsh_protocol::{
    ContentBlock, FinishReason, LlmFailure, Message, MessageSource, RequestErrorDecision,
    RequestFailure, TurnEndReason, UserMessageEvent, text_of,
};
use dsh_sessions_seam::SessionBox;
use dsh_tools_seam::{StepCall, StepCalls};

use crate::Deps;
use crate::error::LoopError;
use crate::log::Log;
use crate::prompt::{self, Memory, System};
use crate::stream::{Attempt, StepPlace, attempt};
use crate::turn::{Cancel, Route, Tally};

/// Runs step `at` of a turn; `Some(end)` when the turn ends with it.
#[allow(
    clippy::too_many_arguments,
    reason = "the step's whole context, passed once"
)]
pub(crate) async fn run(
    deps: &Deps,
    session: &SessionBox,
    route: &Route,
    at: (u64, u64),
    cancel: &Cancel,
    tally: &mut Tally,
    memory: &mut Memory,
    input: Vec<Message>,
) -> Result<Option<TurnEndReason>, LoopError> {
    let log = Log { session };
    let (turn, step) = at;
    let system = match prompt::system_prompt(deps, &log, route, at, memory, input).await? {
        System::Ready(system) => system,
        System::Unrenderable(problem) => {
            return Ok(Some(TurnEndReason::error("UNKNOWN", problem)));
        }
    };
    let place = StepPlace {
        log: &log,
        turn,
        step,
        provider: &route.provider,
        model: &route.model,
        message_id: format!("{}-t{turn}-s{step}", session.id()),
    };
    let mut failures = 0u32;
    let outcome = loop {
        let tools = prompt::tool_schemas(deps, route)?;
        prompt::log_header(&log, &deps.llm, route, &system, &tools, memory)?;
        let request = prompt::request(session, route, &system, &tools)?;
        let shaped = deps
            .hooks
            .request(AgentRequest {
                session: session.id(),
                turn,
                step,
                request,
            })
            .await?;
        let outcome = attempt(&deps.llm, shaped, &place, &cancel.flag).await?;
        let Attempt::Failed(failure, _) = &outcome else {
            break outcome;
        };
        failures += 1;
        if cancel.flag.is_fired() {
            break outcome;
        }
        let asked = deps.hooks.request_error(RequestFailure {
            session: session.id().into_string(),
            turn,
            step,
            provider: route.provider.clone(),
            failures,
            failure: failure.clone(),
        });
        // A retry's wait gives way to a cancel.
        match cancel.flag.until(asked).await {
            Some(RequestErrorDecision::Retry) if !cancel.flag.is_fired() => {}
            _ => break outcome,
        }
    };
    match outcome {
        Attempt::Cancelled => Ok(Some(cancel.aborted())),
        Attempt::Failed(failure, partial) => {
            partial.keep(&place)?;
            if cancel.flag.is_fired() {
                Ok(Some(cancel.aborted()))
            } else {
                Ok(Some(failed(failure)))
            }
        }
        Attempt::Finished {
            blocks,
            finish,
            usage,
        } => {
            if let Some(usage) = usage {
                tally.usage = tally.usage.saturating_add(usage);
            }
            let text = text_of(&blocks);
            if !text.is_empty() {
                tally.output = text;
            }
            let calls = calls_of(&blocks);
            match finish {
                FinishReason::MaxTokens => Ok(Some(TurnEndReason::MaxTokens)),
                _ if calls.is_empty() => Ok(Some(TurnEndReason::Completed)),
                _ => run_tools(deps, session, route, at, calls, cancel).await,
            }
        }
    }
}

/// The `error` end of a model failure (message and code; the rest stays in the chunks).
fn failed(failure: LlmFailure) -> TurnEndReason {
    TurnEndReason::Error {
        error: LlmFailure::new(failure.code, failure.message),
    }
}

/// Runs a step's calls; `Some(end)` when the turn ends with this step.
async fn run_tools(
    deps: &Deps,
    session: &SessionBox,
    route: &Route,
    (turn, step): (u64, u64),
    calls: Vec<StepCall>,
    cancel: &Cancel,
) -> Result<Option<TurnEndReason>, LoopError> {
    let Some(tools) = &deps.tools else {
        return Ok(Some(TurnEndReason::error(
            "NO_TOOLS",
            "the model called tools, but no `tools` service is mounted",
        )));
    };
    let report = tools
        .run_step(
            StepCalls {
                session: session.id(),
                scope: route
                    .scope
                    .iter()
                    .map(|key| RString::from(key.as_str()))
                    .collect(),
                turn,
                step,
                cwd: RString::from(route.cwd.as_str()),
                calls: RVec::from(calls),
            },
            cancel.flag.signal(),
        )
        .await
        .decode()
        .map_err(|error| LoopError::Tools(error.to_string()))?;
    if let Some(lost) = report.results.iter().find(|result| !result.logged) {
        return Err(LoopError::ResultLost(lost.call_id.clone()));
    }
    let log = Log { session };
    let id = session.id();
    for (index, context) in report.additional_contexts.into_iter().enumerate() {
        // Hooks give content; the log needs a complete user message.
        let message = Message::user(
            format!("{id}-t{turn}-s{step}-ctx{index}"),
            context.content,
            context.source.unwrap_or_else(MessageSource::plugin),
        );
        log.append(&UserMessageEvent(message))?;
    }
    if cancel.flag.is_fired() {
        return Ok(Some(cancel.aborted()));
    }
    if report.concludes_turn {
        return Ok(Some(TurnEndReason::Completed));
    }
    Ok(None)
}

fn calls_of(blocks: &[ContentBlock]) -> Vec<StepCall> {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => Some(StepCall {
                call_id: id.as_str().into(),
                name: name.as_str().into(),
                arguments: arguments.as_str().into(),
            }),
            _ => None,
        })
        .collect()
}
