//! The agent seam across the plugin ABI: the `agents` registry (agents, their inboxes and wake
//! rules, the `agent/*` notifications), the `agent_loop` service that runs one turn of a
//! session (steps of model request plus tool calls, every step logged) and cancels a running
//! turn, the `system_prompt` service, and the loop's hooks: `agent/pre-step` (refuse a step
//! before it starts), `agent/request`, `agent/request-error` (retry a failed model attempt) and
//! `agent/turn-stopping`.
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
use dsh_plugin_api::{EmitEvent, SerialEvent, WaterfallEvent};

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
    /// The route of the request the prompt is for (the `{{provider}}` and `{{model}}`
    /// variables).
    pub provider: RString,
    pub model: RString,
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
    /// Adds a variable for `{{name}}` references in sections (`name` matches
    /// `[a-z][a-z0-9_]*`; `provider`, `model` and `cwd` are built in). A second variable with
    /// the same name is refused.
    fn variable(
        &self,
        owner: RString,
        name: RString,
        value: RString,
    ) -> RResult<SectionHandleBox, RString>;
    /// Assembles the prompt: `{"system": "...", "contexts": [{"key","text"}]}`, or
    /// `{"error": "..."}` when a section refers to a variable that is unknown, malformed or
    /// without a value. Sections are the registered ones plus the guidance of the tools the
    /// request's scope sees; each is interpolated, empty ones are dropped. Contexts are
    /// snapshots the loop appends to the history (as plugin-sourced user messages) when they
    /// changed, instead of rewriting the system prompt.
    fn assemble(&self, request: PromptRequest) -> FfiFuture<RString>;
}
pub type SystemPromptService = SystemPrompt_TO<'static, RBox<()>>;

/// Service key of the agent registry and its inboxes.
pub const AGENTS: &str = "agents";

/// The `agents` service: the agents of this host and the inbox of each session.
///
/// An agent is a session with what its turns need (model route, working directory, tool scope)
/// and a driver that runs them. Its inbox has two lists: `next-turn` messages start turns (one
/// per turn), `next-step` messages join the running turn at its next step boundary. Every
/// change of an inbox is logged as `agent/inbox/spliced`.
///
/// Wake rules (as the reference's): `send(.., "next-turn", true)` is a followup,
/// `send(.., "next-step", true)` steers, `send(.., "next-step", false)` injects. A waking send
/// to an idle agent starts its driver at once; while it runs, the driver picks the message up
/// itself (a next-step message at the next step boundary, a next-turn message as the next
/// turn, without going idle between turns). An inject only stages. A waking send while a
/// cancel is settling goes to `next-turn` and runs once the cancelled turn closed (unless the
/// cause is `disposed`). After a `blocked` or `error` turn the driver stops; what is queued
/// waits for the next wake.
#[sabi_trait]
pub trait Agents: Send + Sync {
    /// Creates an agent. `options` (JSON): `"cwd"`, the absolute working directory (required);
    /// `{"resume": id}` to continue a session (live or stored), else a new one (with
    /// `"sessionId"` as its id when given); `"provider"`, `"model"` (empty: no model; its turns end
    /// `NO_MODEL`), `"scope"` (tool scope chain). Emits `agent/created` then
    /// `agent/session-start` (`startup` or `resume`); no turn starts. Answers the agent id (its
    /// session id).
    fn create(&self, options: RString) -> FfiFuture<RResult<RString, RString>>;
    /// Queues a user message (JSON; an id is given when it has none) on `target` (`next-turn`
    /// or `next-step`) of session `agent`, and wakes its driver when `wakeup`. Staging (no
    /// wake) works for any live session, agent or not. Answers the message id.
    fn send(
        &self,
        agent: RString,
        message: RString,
        target: RString,
        wakeup: bool,
    ) -> RResult<RString, RString>;
    /// A followup: `send(.., "next-turn", true)`.
    fn followup(&self, agent: RString, message: RString) -> RResult<RString, RString> {
        self.send(agent, message, RString::from("next-turn"), true)
    }
    /// Steering: `send(.., "next-step", true)`.
    fn steer(&self, agent: RString, message: RString) -> RResult<RString, RString> {
        self.send(agent, message, RString::from("next-step"), true)
    }
    /// An inject: `send(.., "next-step", false)`.
    fn inject(&self, agent: RString, message: RString) -> RResult<RString, RString> {
        self.send(agent, message, RString::from("next-step"), false)
    }
    /// Cancels the running turn with `cause` (`user`, `parent`, `disposed`, ...). Unless
    /// `keep_inbox`, the inbox is cleared first (logged with `outcome: "canceled"`), also when
    /// the agent is idle.
    fn cancel(&self, agent: RString, cause: RString, keep_inbox: bool) -> RResult<(), RString>;
    /// Resolves when the agent is idle, with the outcome of its last turn (JSON, `null` when
    /// it ran none).
    fn when_idle(&self, agent: RString) -> FfiFuture<RResult<RString, RString>>;
    /// The live agents, in creation order: `[{"id","status","cwd","provider","model"}]`.
    fn list(&self) -> RString;
    /// Cancels (`disposed`), waits for the driver, forgets the agent, emits `agent/disposed`
    /// and closes its session.
    fn dispose(&self, agent: RString) -> FfiFuture<RResult<(), RString>>;
    /// For the loop: takes every `next-step` message and, at a turn boundary, one `next-turn`
    /// message, in that order (JSON array), logging the removals and emitting
    /// `agent/inbox/claimed` with `turn` for each.
    fn claim(&self, session: RString, turn: u64, turn_boundary: bool) -> RResult<RString, RString>;
}
pub type AgentsService = Agents_TO<'static, RBox<()>>;

/// The payload of every `agent/*` notification: the agent, and the reference's other fields
/// as a JSON object (`{"status":"running"}`, `{"message":..,"turn":1}`, ...).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct AgentNotice {
    pub agent: RString,
    pub data: RString,
}

/// `agent/created`: an agent was published (after its session was created or loaded).
pub const AGENT_CREATED: EmitEvent<AgentNotice> = EmitEvent::new("agent/created");
/// `agent/disposed`: an agent was removed, after its driver went quiet.
pub const AGENT_DISPOSED: EmitEvent<AgentNotice> = EmitEvent::new("agent/disposed");
/// `agent/status`: `{"status":"running"}` before its first `turn/start`, `{"status":"idle"}`
/// after its last `turn/end` (turns run back to back keep it running).
pub const AGENT_STATUS: EmitEvent<AgentNotice> = EmitEvent::new("agent/status");
/// `agent/session-start`: `{"source":"startup"|"resume"}`, once, right after `agent/created`.
pub const AGENT_SESSION_START: EmitEvent<AgentNotice> = EmitEvent::new("agent/session-start");
/// `agent/inbox/inserted`: `{"message"}`, after its splice was logged.
pub const AGENT_INBOX_INSERTED: EmitEvent<AgentNotice> = EmitEvent::new("agent/inbox/inserted");
/// `agent/inbox/claimed`: `{"message","turn"}`, per claimed message, inside the open turn.
pub const AGENT_INBOX_CLAIMED: EmitEvent<AgentNotice> = EmitEvent::new("agent/inbox/claimed");
/// `agent/inbox/discarded`: `{"message"}`, per message a cancel removed unrun.
pub const AGENT_INBOX_DISCARDED: EmitEvent<AgentNotice> = EmitEvent::new("agent/inbox/discarded");
/// `agent/error`: `{"turn","step","error"}` for a turn that ends `error`, after its last
/// `step/end` and before its `turn/end`. Never for a cancellation.
pub const AGENT_ERROR: EmitEvent<AgentNotice> = EmitEvent::new("agent/error");

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
