//! `dsh-agents-seam`: the agent seam across the plugin ABI. The `agents` registry (agents, their
//! inboxes and wake rules, the `agent/*` notifications), the `agent_loop` service that runs one
//! turn of a session (steps of model request plus tool calls, every step logged) and cancels a
//! running one, and the loop's hooks: `agent/prompt-submit` (refuse a turn's input or add
//! context to it), `agent/pre-step` (refuse a step before it starts),
//! `agent/request`, `agent/request-error` (retry a failed model attempt) and
//! `agent/turn-stopping`.
//!
//! Options, messages, outcomes, decisions and notices are `dsh-protocol` values crossing as
//! [`Json`]: an optional field or a new variant added later does not break a plugin built
//! against this version. A refusal crosses as an [`AgentsError`]: a kind a caller branches on
//! (a steer the running turn cannot take, a message no longer waiting) and a message.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

pub mod presets;

use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::{EmitEvent, Json, SerialEvent, WaterfallEvent};
use dsh_protocol::{
    AbortCause, AgentNoticeData, AgentOptions, AgentStatus, AgentSummary, Continuation,
    GenerateRequest, InboxListing, InboxTarget, Message, PreStepDecision, PromptDecision,
    PromptSubmit, QueueAction, RequestErrorDecision, RequestFailure, StepProposal, TurnOutcome,
    TurnStopping,
};

/// Service key of the default driver.
pub const AGENT_LOOP_SERVICE: &str = "agent_loop";

/// `agent/pre-step`: before each step opens. Answer `enter` (or call `next`) to let it run,
/// `reject` to end the turn `blocked` without the step.
pub const AGENT_PRE_STEP: WaterfallEvent<Json<StepProposal>, Json<PreStepDecision>> =
    WaterfallEvent::new("agent/pre-step");

/// `agent/request-error`: a model attempt failed. Answer `retry` to run the attempt again in
/// the same step (the request is rebuilt from the log), or call `next`; the innermost default
/// answers `fail`, which ends the turn `error`.
pub const AGENT_REQUEST_ERROR: WaterfallEvent<Json<RequestFailure>, Json<RequestErrorDecision>> =
    WaterfallEvent::new("agent/request-error");

/// `agent/request`: the request about to go to `llm`; a listener may answer another (other call
/// options, say). The history cannot be changed here: it goes by reference and is checked
/// against the log where the request leaves.
pub const AGENT_REQUEST: WaterfallEvent<AgentRequest, Json<GenerateRequest>> =
    WaterfallEvent::new("agent/request");

/// `agent/turn-stopping`: a turn that completed is about to end. The first listener that
/// answers a continuation keeps it going: its message enters as the next step's input.
pub const AGENT_TURN_STOPPING: SerialEvent<Json<TurnStopping>, Json<Continuation>> =
    SerialEvent::new("agent/turn-stopping");

/// `agent/prompt-submit`: a turn claimed its opening input and is about to open its first step.
/// Answer `accept` (or call `next`) to let the input in, followed by context messages, or
/// `reject` to end the turn `blocked` before any step; the innermost default accepts. Fired
/// once per turn that has input, inside the open turn (after its claim), so what a listener
/// logs belongs to the turn.
pub const AGENT_PROMPT_SUBMIT: WaterfallEvent<Json<PromptSubmit>, Json<PromptDecision>> =
    WaterfallEvent::new("agent/prompt-submit");

/// A request about to be sent.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct AgentRequest {
    pub session: RString,
    pub turn: u64,
    pub step: u64,
    pub request: Json<GenerateRequest>,
}

/// The inbox of the session a turn runs in, handed to the loop with the turn.
#[sabi_trait]
pub trait TurnInbox: Send + Sync {
    /// Takes every `next-step` message and, when `turn_boundary`, one `next-turn` message, in
    /// that order, logging the removals and announcing each as claimed by `turn`.
    fn claim(&self, turn: u64, turn_boundary: bool) -> RResult<Json<Vec<Message>>, AgentsError>;
    /// After a step that would end the turn: takes every `next-step` message (as `claim`
    /// does) when a message was steered into the running turn since it last claimed, and
    /// nothing otherwise. A message only injected (a child's report) does not keep a finished
    /// turn going: it waits in the inbox for whatever runs the agent next.
    fn claim_steered(&self, turn: u64) -> RResult<Json<Vec<Message>>, AgentsError>;
}
pub type TurnInboxBox = TurnInbox_TO<'static, RBox<()>>;

/// One turn to run.
#[repr(C)]
#[derive(StableAbi)]
pub struct TurnRequest {
    /// A live or stored session (the caller creates it).
    pub session: RString,
    /// Input of this turn beside what its inbox holds (each logged as a `user/message`).
    pub input: Json<Vec<Message>>,
    /// The session's inbox, claimed when the turn opens and at every step boundary.
    pub inbox: ROption<TurnInboxBox>,
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
    /// Runs one turn to its end. Never fails: every failure ends the turn `error` in the log
    /// and in the outcome.
    fn run_turn(&self, request: TurnRequest) -> FfiFuture<Json<TurnOutcome>>;
    /// Cancels the running turn of `session`; false when no turn runs there.
    fn cancel(&self, session: RString, cause: Json<AbortCause>) -> bool;
}
pub type AgentLoopService = AgentLoop_TO<'static, RBox<()>>;

/// What starts the tool scope of a working directory (see [`workspace_scope`]).
pub const WORKSPACE_SCOPE_PREFIX: &str = "workspace:";

/// The tool scope of the sessions working in `cwd`, as their agent was given it. The agents
/// registry puts it first in every agent's scope chain (a child's chain starts with its
/// parent's), so a tool registered under it (a project's MCP servers) is offered to exactly the
/// sessions of that directory and their children.
pub fn workspace_scope(cwd: &str) -> String {
    format!("{WORKSPACE_SCOPE_PREFIX}{cwd}")
}

/// Service key of the agent registry and its inboxes.
pub const AGENTS_SERVICE: &str = "agents";

/// The `agents` service: the agents of this host and the inbox of each session.
///
/// An agent is a session with what its turns need (model route, working directory, tool scope)
/// and a driver that runs them. Its inbox has two lists: `next-turn` messages start turns (one
/// per turn), `next-step` messages join the running turn at its next step boundary. Every
/// change of an inbox is logged as `agent/inbox/spliced`.
///
/// Wake rules (as the reference's): `send(.., next-turn, true)` is a followup,
/// `send(.., next-step, true)` steers, `send(.., next-step, false)` injects. A waking send
/// to an idle agent starts its driver at once; while it runs, the driver picks the message up
/// itself (a next-step message at the next step boundary, a next-turn message as the next
/// turn, without going idle between turns). An inject only stages. A waking send while a
/// cancel is settling goes to `next-turn` and runs once the cancelled turn closed (unless the
/// cause is `disposed`). After a `blocked` or `error` turn the driver stops; what is queued
/// waits for the next wake.
#[sabi_trait]
pub trait Agents: Send + Sync {
    /// Creates an agent; emits `agent/created` then `agent/session-start`; no turn starts.
    /// Answers the agent id (its session id).
    fn create(&self, options: Json<AgentOptions>) -> FfiFuture<RResult<RString, AgentsError>>;
    /// Queues a user message (an id is given when it has none) on `target` of session `agent`,
    /// and wakes its driver when `wakeup`. Staging (no wake) works for any live session, agent
    /// or not. Answers the message id.
    fn send(
        &self,
        agent: RString,
        message: Json<Message>,
        target: Json<InboxTarget>,
        wakeup: bool,
    ) -> RResult<RString, AgentsError>;
    /// Cancels the running turn. Unless `keep_inbox`, the inbox is cleared first (logged with
    /// `outcome: canceled`), also when the agent is idle.
    fn cancel(
        &self,
        agent: RString,
        cause: Json<AbortCause>,
        keep_inbox: bool,
    ) -> RResult<(), AgentsError>;
    /// Resolves when the agent is idle, with the outcome of its last turn (`None` when it ran
    /// none).
    fn when_idle(
        &self,
        agent: RString,
    ) -> FfiFuture<RResult<Json<Option<TurnOutcome>>, AgentsError>>;
    /// The live agents, in creation order.
    fn list(&self) -> Json<Vec<AgentSummary>>;
    /// The model route of agent `agent`'s next turns (a running turn keeps its own).
    fn set_route(
        &self,
        agent: RString,
        provider: RString,
        model: RString,
    ) -> RResult<(), AgentsError>;
    /// Switches agent `agent` to preset `preset` (logged as `agent-preset/selected`): only
    /// while its session has had no turn (`Invalid` after), and only to a preset the
    /// `agent_presets` service activates.
    fn set_preset(&self, agent: RString, preset: RString) -> FfiFuture<RResult<(), AgentsError>>;
    /// What the inbox of live session `session` holds, unclaimed.
    fn inbox(&self, session: RString) -> RResult<Json<InboxListing>, AgentsError>;
    /// Changes the waiting message `message` of live session `session`: dropped unrun, edited
    /// in place, or (from next-turn) moved into the running turn and the driver woken.
    fn update_queue(
        &self,
        session: RString,
        message: RString,
        action: Json<QueueAction>,
    ) -> RResult<(), AgentsError>;
    /// Cancels (`disposed`), waits for the driver, forgets the agent, emits `agent/disposed`
    /// and closes its session.
    fn dispose(&self, agent: RString) -> FfiFuture<RResult<(), AgentsError>>;
}
pub type AgentsService = Agents_TO<'static, RBox<()>>;

/// What a caller of the `agents` service can tell apart.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentsErrorKind {
    /// A service the registry needs is not mounted (`sessions`).
    Unavailable,
    /// An argument does not read or is not allowed (options, a message, a target, a queue
    /// action; an empty message or edit; a working directory that is not absolute).
    Invalid,
    /// No agent by that id (a waking send needs one), or no live session by that id.
    NotFound,
    /// An agent or a pending message by that id exists already.
    Exists,
    /// The agent is being disposed: it takes no more waking sends.
    Disposing,
    /// The message named no longer waits in the inbox (it may have started).
    NotQueued,
    /// The message cannot be steered into the running turn: it joins it already.
    SteerUnavailable,
    /// The session log refused or failed a write (an inbox splice, a close).
    Session,
    /// The registry went away (its row unloaded) before the call could finish.
    Gone,
    /// The agent preset named cannot run: unknown, broken, or its rows failed to start.
    Preset,
}

/// A refusal of the `agents` service: its kind and a message for a person.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct AgentsError {
    pub kind: AgentsErrorKind,
    pub message: RString,
}

impl AgentsError {
    pub fn new(kind: AgentsErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: RString::from(message.into()),
        }
    }
}

impl std::fmt::Display for AgentsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AgentsError {}

/// The three ways to send, as the reference names them (each answers the message id), and
/// whether an agent runs a turn now.
pub trait AgentsExt {
    /// A followup: `send(.., next-turn, true)`.
    fn followup(&self, agent: &str, message: &Message) -> Result<String, AgentsError>;
    /// Steering: `send(.., next-step, true)`.
    fn steer(&self, agent: &str, message: &Message) -> Result<String, AgentsError>;
    /// An inject: `send(.., next-step, false)`.
    fn inject(&self, agent: &str, message: &Message) -> Result<String, AgentsError>;
    /// Whether agent `agent`'s driver is running turns now (an unknown agent is not).
    fn is_running(&self, agent: &str) -> bool;
}

impl AgentsExt for AgentsService {
    fn followup(&self, agent: &str, message: &Message) -> Result<String, AgentsError> {
        send(self, agent, message, InboxTarget::NextTurn, true)
    }

    fn steer(&self, agent: &str, message: &Message) -> Result<String, AgentsError> {
        send(self, agent, message, InboxTarget::NextStep, true)
    }

    fn inject(&self, agent: &str, message: &Message) -> Result<String, AgentsError> {
        send(self, agent, message, InboxTarget::NextStep, false)
    }

    fn is_running(&self, agent: &str) -> bool {
        self.list()
            .decode()
            .unwrap_or_default()
            .iter()
            .any(|listed| listed.id == agent && listed.status == AgentStatus::Running)
    }
}

fn send(
    agents: &AgentsService,
    agent: &str,
    message: &Message,
    target: InboxTarget,
    wakeup: bool,
) -> Result<String, AgentsError> {
    agents
        .send(
            RString::from(agent),
            Json::encode(message),
            Json::encode(&target),
            wakeup,
        )
        .into_result()
        .map(RString::into_string)
}

/// The payload of every `agent/*` notification: the agent, and what happened.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct AgentNotice {
    pub agent: RString,
    pub data: Json<AgentNoticeData>,
}

/// `agent/created`: an agent was published (after its session was created or loaded).
pub const AGENT_CREATED: EmitEvent<AgentNotice> = EmitEvent::new("agent/created");
/// `agent/disposed`: an agent was removed, after its driver went quiet.
pub const AGENT_DISPOSED: EmitEvent<AgentNotice> = EmitEvent::new("agent/disposed");
/// `agent/status`: running before its first `turn/start`, idle after its last `turn/end`
/// (turns run back to back keep it running).
pub const AGENT_STATUS: EmitEvent<AgentNotice> = EmitEvent::new("agent/status");
/// `agent/session-start`: once, right after `agent/created`.
pub const AGENT_SESSION_START: EmitEvent<AgentNotice> = EmitEvent::new("agent/session-start");
/// `agent/inbox/inserted`: after a message's splice was logged.
pub const AGENT_INBOX_INSERTED: EmitEvent<AgentNotice> = EmitEvent::new("agent/inbox/inserted");
/// `agent/inbox/claimed`: per claimed message, inside the open turn.
pub const AGENT_INBOX_CLAIMED: EmitEvent<AgentNotice> = EmitEvent::new("agent/inbox/claimed");
/// `agent/inbox/discarded`: per message a cancel removed unrun.
pub const AGENT_INBOX_DISCARDED: EmitEvent<AgentNotice> = EmitEvent::new("agent/inbox/discarded");
/// `agent/route`: the route of an agent's next turns was set, whoever set it (so every client
/// following its session shows the model it now uses).
pub const AGENT_ROUTE: EmitEvent<AgentNotice> = EmitEvent::new("agent/route");
/// `agent/error`: a turn ends `error`, after its last `step/end` and before its `turn/end`.
/// Never for a cancellation.
pub const AGENT_ERROR: EmitEvent<AgentNotice> = EmitEvent::new("agent/error");
