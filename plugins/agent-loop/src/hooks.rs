//! The loop's hooks and prompt, as one interface: the `agent/*` events and the `system_prompt`
//! service in production ([`Events`]), canned answers in the loop's unit tests.

use std::future::Future;
use std::pin::Pin;

use abi_stable::std_types::{RArc, RString};
use dsh_agents_seam::{AGENT_ERROR, AgentNotice, AgentRequest};
use dsh_plugin_api::{Channel, Context, Json, SerialEvent, WaterfallEvent};
use dsh_protocol::{
    AgentNoticeData, AssembledPrompt, Continuation, GenerateRequest, LlmFailure, PreStepDecision,
    PromptDecision, PromptRequest, PromptSubmit, RequestErrorDecision, RequestFailure,
    StepProposal, TurnStopping,
};
use dsh_system_prompt_seam::{SYSTEM_PROMPT_SERVICE, SystemPromptService};

use crate::error::LoopError;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What prompt assembly came to.
pub(crate) enum Prompt {
    /// No `system_prompt` service is mounted: the row's system prompt applies.
    Missing,
    /// A section cannot be rendered (an unknown variable, say); the turn ends before anything
    /// is asked.
    Unrenderable(String),
    /// As the service wrote it: the loop reads it only when it differs from the last step's
    /// (see `prompt::Memory`).
    Assembled(Json<AssembledPrompt>),
}

/// What the loop asks around its steps.
pub(crate) trait Hooks: Send + Sync {
    /// `agent/prompt-submit`: may the turn's input enter, and with what context after it?
    /// (Without listeners, as in the loop's unit tests: it enters as it is.)
    fn prompt_submit(
        &self,
        submit: PromptSubmit,
    ) -> BoxFuture<'_, Result<PromptDecision, LoopError>> {
        let _ = submit;
        Box::pin(async { Ok(PromptDecision::accept()) })
    }
    /// `agent/pre-step`: may this step open?
    fn pre_step(&self, step: StepProposal) -> BoxFuture<'_, Result<PreStepDecision, LoopError>>;
    /// `agent/request`: the request as the listeners shaped it (passed on as it is: the
    /// model seam reads it).
    fn request(
        &self,
        request: AgentRequest,
    ) -> BoxFuture<'_, Result<Json<GenerateRequest>, LoopError>>;
    /// `agent/request-error`: retry a failed attempt? (A failing hook answers no.)
    fn request_error(&self, failure: RequestFailure) -> BoxFuture<'_, RequestErrorDecision>;
    /// `agent/turn-stopping`: does a completed turn go on?
    fn turn_stopping(
        &self,
        stopping: TurnStopping,
    ) -> BoxFuture<'_, Result<Option<Continuation>, LoopError>>;
    /// The assembled prompt.
    fn prompt(&self, request: PromptRequest) -> BoxFuture<'_, Result<Prompt, LoopError>>;
    /// `agent/error`: the turn ends `error` at `step`.
    fn error(&self, session: &str, turn: u64, step: u64, error: &LlmFailure);
}

/// The hooks as the host dispatches them.
pub(crate) struct Events {
    pub(crate) ctx: Context,
    pub(crate) pre_step: Channel<WaterfallEvent<Json<StepProposal>, Json<PreStepDecision>>>,
    pub(crate) request_error:
        Channel<WaterfallEvent<Json<RequestFailure>, Json<RequestErrorDecision>>>,
    pub(crate) request: Channel<WaterfallEvent<AgentRequest, Json<GenerateRequest>>>,
    pub(crate) turn_stopping: Channel<SerialEvent<Json<TurnStopping>, Json<Continuation>>>,
    pub(crate) prompt_submit: Channel<WaterfallEvent<Json<PromptSubmit>, Json<PromptDecision>>>,
}

impl Hooks for Events {
    fn prompt_submit(
        &self,
        submit: PromptSubmit,
    ) -> BoxFuture<'_, Result<PromptDecision, LoopError>> {
        Box::pin(async move {
            let decided = self
                .prompt_submit
                .waterfall(RArc::new(Json::encode(&submit)), |_| async {
                    Ok(Json::encode(&PromptDecision::accept()))
                })
                .await
                .map_err(|error| LoopError::plugin("agent/prompt-submit", error))?;
            decided
                .decode()
                .map_err(|error| LoopError::decode("agent/prompt-submit", error))
        })
    }

    fn pre_step(&self, step: StepProposal) -> BoxFuture<'_, Result<PreStepDecision, LoopError>> {
        Box::pin(async move {
            let decided = self
                .pre_step
                .waterfall(RArc::new(Json::encode(&step)), |_| async {
                    Ok(Json::encode(&PreStepDecision::Enter))
                })
                .await
                .map_err(|error| LoopError::plugin("agent/pre-step", error))?;
            decided
                .decode()
                .map_err(|error| LoopError::decode("agent/pre-step", error))
        })
    }

    fn request(
        &self,
        request: AgentRequest,
    ) -> BoxFuture<'_, Result<Json<GenerateRequest>, LoopError>> {
        Box::pin(async move {
            self.request
                .waterfall(
                    RArc::new(request),
                    |request: RArc<AgentRequest>| async move { Ok(request.request.clone()) },
                )
                .await
                .map_err(|error| LoopError::plugin("agent/request", error))
        })
    }

    fn request_error(&self, failure: RequestFailure) -> BoxFuture<'_, RequestErrorDecision> {
        Box::pin(async move {
            let decided = self
                .request_error
                .waterfall(RArc::new(Json::encode(&failure)), |_| async {
                    Ok(Json::encode(&RequestErrorDecision::Fail))
                })
                .await;
            decided
                .ok()
                .and_then(|decision| decision.decode().ok())
                .unwrap_or(RequestErrorDecision::Fail)
        })
    }

    fn turn_stopping(
        &self,
        stopping: TurnStopping,
    ) -> BoxFuture<'_, Result<Option<Continuation>, LoopError>> {
        Box::pin(async move {
            let answer = self
                .turn_stopping
                .serial(RArc::new(Json::encode(&stopping)))
                .await
                .map_err(|error| LoopError::plugin("agent/turn-stopping", error))?;
            answer
                .map(|answer| answer.decode())
                .transpose()
                .map_err(|error| LoopError::decode("agent/turn-stopping", error))
        })
    }

    fn prompt(&self, request: PromptRequest) -> BoxFuture<'_, Result<Prompt, LoopError>> {
        Box::pin(async move {
            let Ok(Some(prompt)) = self.ctx.get::<SystemPromptService>(SYSTEM_PROMPT_SERVICE)
            else {
                return Ok(Prompt::Missing);
            };
            Ok(
                match prompt.assemble(Json::encode(&request)).await.into_result() {
                    Ok(assembled) => Prompt::Assembled(assembled),
                    Err(problem) => Prompt::Unrenderable(problem.to_string()),
                },
            )
        })
    }

    fn error(&self, session: &str, turn: u64, step: u64, error: &LlmFailure) {
        let notice = AgentNotice {
            agent: RString::from(session),
            data: Json::encode(&AgentNoticeData::Error {
                turn,
                step,
                error: error.clone(),
            }),
        };
        let _ = self.ctx.emit(&AGENT_ERROR, &notice);
    }
}
