//! The agent loop's seam across the plugin ABI: the `agent_loop` service that runs one turn of
//! a session (steps of model request plus tool calls, every step logged) and cancels a running
//! turn, the `agent/pre-step` hook that may refuse a step before it starts, and the
//! `agent/request-error` hook that may retry a failed model attempt.
//!
//! Outcomes and decisions cross as JSON: a turn's outcome is
//! `{"sessionId","turn","reason":<the logged turn/end reason>,"output":<final assistant text>,
//! "usage":{"inputTokens","outputTokens"}}`.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::{SerialEvent, WaterfallEvent};

/// Service key of the default driver.
pub const AGENT_LOOP: &str = "agent_loop";

/// `agent/pre-step`: before each step opens. Answer `{"kind":"enter"}` (or call `next`) to let
/// it run, `{"kind":"reject","reason":..}` to end the turn `blocked` without the step.
pub const AGENT_PRE_STEP: WaterfallEvent<StepView, RString> = WaterfallEvent::new("agent/pre-step");

/// `agent/request-error`: a model attempt failed. Answer `{"kind":"retry"}` to run the attempt
/// again in the same step (the request is rebuilt from the log), or call `next`; the innermost
/// default answers `{"kind":"fail"}`, which ends the turn `error`.
pub const AGENT_REQUEST_ERROR: WaterfallEvent<RequestError, RString> =
    WaterfallEvent::new("agent/request-error");

/// A failed model attempt.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    pub session: RString,
    pub turn: u64,
    pub step: u64,
    pub provider: RString,
    /// How many attempts of this step have failed, this one included (1 for the first).
    pub failures: u32,
    /// The `LlmFailure` as JSON.
    pub failure: RString,
}

/// A step about to open.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct StepView {
    pub session: RString,
    pub turn: u64,
    pub step: u64,
}

/// One turn to run.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Default)]
pub struct TurnRequest {
    /// A live or stored session (the caller creates it).
    pub session: RString,
    /// The user's input for this turn (logged as its `user/message`).
    pub input: RString,
    /// The model route; an empty provider ends the turn `error` with `NO_MODEL`.
    pub provider: RString,
    pub model: RString,
    /// Working directory of the tools.
    pub cwd: RString,
    /// The agent scope chain the tools are seen from (empty: global).
    pub scope: RVec<RString>,
}

/// The `agent_loop` service.
#[sabi_trait]
pub trait AgentLoop: Send + Sync {
    /// Runs one turn to its end and answers the outcome (JSON, see the crate docs). Never fails:
    /// every failure ends the turn `error` in the log and in the outcome.
    fn run_turn(&self, request: TurnRequest) -> FfiFuture<RString>;
    /// Cancels the running turn of `session` with `cause` (`user`, `parent`, `hook`,
    /// `disposed`); false when no turn runs there.
    fn cancel(&self, session: RString, cause: RString) -> bool;
}
pub type AgentLoopService = AgentLoop_TO<'static, RBox<()>>;

/// Service key of prompt assembly.
pub const SYSTEM_PROMPT: &str = "system_prompt";

/// `system-prompt/assemble`: the assembled system prompt on its way to the request; a listener
/// may answer another text (or call `next` and change what it returns).
pub const SYSTEM_PROMPT_ASSEMBLE: WaterfallEvent<PromptRequest, RString> =
    WaterfallEvent::new("system-prompt/assemble");

/// What a prompt is assembled for.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PromptRequest {
    pub session: RString,
    pub cwd: RString,
    pub scope: RVec<RString>,
}

/// Keeps a section registered; dropping it removes the section.
#[sabi_trait]
pub trait SectionHandle: Send + Sync {
    fn id(&self) -> RString;
}
pub type SectionHandleBox = SectionHandle_TO<'static, RBox<()>>;

/// The `system_prompt` service.
#[sabi_trait]
pub trait SystemPrompt: Send + Sync {
    /// Adds a section: `{"id","order","text"}` (identity -100, persona 0, tool guidance
    /// 100-199; equal orders sort by id). A second section with the same id is refused.
    fn section(&self, owner: RString, section: RString) -> RResult<SectionHandleBox, RString>;
    /// Assembles the prompt: `{"system": "...", "contexts": [{"key","text"}]}`. Contexts are
    /// snapshots the loop appends to the history (as plugin-sourced user messages) when they
    /// changed, instead of rewriting the system prompt.
    fn assemble(&self, request: PromptRequest) -> FfiFuture<RString>;
}
pub type SystemPromptService = SystemPrompt_TO<'static, RBox<()>>;

/// Service key of the agent registry and its inboxes.
pub const AGENTS: &str = "agents";

/// The `agents` service: each session's inbox, two lists. `next-turn` messages start turns
/// (one per turn); `next-step` messages join the running turn at its next step boundary
/// (steering). Every change is logged as `agent/inbox/spliced`.
#[sabi_trait]
pub trait Agents: Send + Sync {
    /// Queues a user message (JSON; an id is given when it has none) on `target`
    /// (`next-turn` or `next-step`).
    fn enqueue(&self, session: RString, target: RString, message: RString) -> RResult<(), RString>;
    /// Takes every `next-step` message and, at a turn boundary, one `next-turn` message, in
    /// that order (JSON array of messages), logging the removals.
    fn claim(&self, session: RString, turn_boundary: bool) -> RResult<RString, RString>;
}
pub type AgentsService = Agents_TO<'static, RBox<()>>;

/// `agent/request`: the request about to go to `llm`, as JSON; a listener may answer another
/// (say, other call options). The history cannot be changed here: it goes by reference and is
/// checked against the log where the request leaves.
pub const AGENT_REQUEST: WaterfallEvent<AgentRequest, RString> =
    WaterfallEvent::new("agent/request");

/// A request about to be sent.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct AgentRequest {
    pub session: RString,
    pub turn: u64,
    pub step: u64,
    /// The `GenerateRequest` as JSON.
    pub request: RString,
}

/// `agent/turn-stopping`: a turn that completed is about to end. The first listener that
/// answers a user message (JSON) keeps it going: the message enters as the next step's input.
pub const AGENT_TURN_STOPPING: SerialEvent<TurnStopping, RString> =
    SerialEvent::new("agent/turn-stopping");

/// A turn about to end.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct TurnStopping {
    pub session: RString,
    pub turn: u64,
    /// How it would end (`{"kind":"completed"}`).
    pub reason: RString,
}
