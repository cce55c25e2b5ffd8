//! The data of the core session events, each with the type it is logged under. The envelope
//! (`seq`, `time`, `surfaceOp`, `sourceEventSeqs`, `ignorable`) is the session log's business;
//! these are the `data` members, in the exact shape the reference writes them.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::content::Message;
use crate::model::{CallConfigAdapterDefaults, LlmCallConfig, ToolSchema};
use crate::stream::{StreamChunk, TokenUsage};
use crate::tools::{ApprovalOutcome, ToolErrorInfo};
use crate::turn::TurnEndReason;

/// The data of a core session event.
pub trait EventData: Serialize + DeserializeOwned {
    /// The event type it is logged under.
    const KIND: &'static str;
    /// Whether the event is one of the three surface types, which append to the model-visible
    /// history.
    const SURFACE: bool = false;
}

macro_rules! event_data {
    ($type:ty, $kind:expr) => {
        impl EventData for $type {
            const KIND: &'static str = $kind;
        }
    };
    ($type:ty, $kind:expr, surface) => {
        impl EventData for $type {
            const KIND: &'static str = $kind;
            const SURFACE: bool = true;
        }
    };
}
pub(crate) use event_data;

/// `turn/start`: a turn opens (before its input is claimed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStartEvent {
    pub turn: u64,
}
event_data!(TurnStartEvent, crate::kinds::TURN_START);

/// `turn/end`: a turn closes, whatever happened in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnEndEvent {
    pub turn: u64,
    pub reason: TurnEndReason,
}
event_data!(TurnEndEvent, crate::kinds::TURN_END);

/// `step/start`: one model request and the tools it calls begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepStartEvent {
    pub turn: u64,
    pub step: u64,
}
event_data!(StepStartEvent, crate::kinds::STEP_START);

/// `step/end`: the step closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepEndEvent {
    pub turn: u64,
    pub step: u64,
}
event_data!(StepEndEvent, crate::kinds::STEP_END);

/// `user/message`: a user-role message enters the history (a prompt, injected context, a
/// continuation). The data is the message itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct UserMessageEvent(pub Message);
event_data!(UserMessageEvent, crate::kinds::USER_MESSAGE, surface);

/// `assistant/chunk`: one chunk of a model attempt, logged as it arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantChunkEvent {
    pub turn: u64,
    pub step: u64,
    pub chunk: StreamChunk,
}
event_data!(AssistantChunkEvent, crate::kinds::ASSISTANT_CHUNK);

/// `assistant/message`: the assembled message of an attempt, citing its chunks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessageEvent {
    pub turn: u64,
    pub step: u64,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// True for the prefix a cancel or a broken stream kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<bool>,
}
event_data!(
    AssistantMessageEvent,
    crate::kinds::ASSISTANT_MESSAGE,
    surface
);

/// `tool/call`: one call, logged before any policy runs, with the model's raw arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    pub turn: u64,
    pub step: u64,
    pub call_id: String,
    pub name: String,
    /// The model's argument string, never re-encoded.
    pub arguments: String,
}
event_data!(ToolCallEvent, crate::kinds::TOOL_CALL);

/// `tool/code-dispatch-start`: a call a Code Mode program made (`tools.<name>(args)` inside the
/// `run_code` call `parentCallId`) is starting, under the id `<parent>:code:<n>`. Log-only:
/// sub-calls never enter the model's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeDispatchStartEvent {
    /// The model's call the program runs under (the same as the parent: programs do not nest).
    pub root_call_id: String,
    pub parent_call_id: String,
    pub sub_call_id: String,
    pub name: String,
    /// The arguments the program passed, as JSON.
    pub arguments: serde_json::Value,
}
event_data!(
    CodeDispatchStartEvent,
    crate::kinds::TOOL_CODE_DISPATCH_START
);

/// `tool/code-dispatch`: a Code Mode sub-call settled: the start's fields and its outcome in
/// `tool/result`'s vocabulary. Log-only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeDispatchEvent {
    pub root_call_id: String,
    pub parent_call_id: String,
    pub sub_call_id: String,
    pub name: String,
    pub arguments: serde_json::Value,
    pub is_error: bool,
    pub content: Vec<crate::content::ContentBlock>,
}
event_data!(CodeDispatchEvent, crate::kinds::TOOL_CODE_DISPATCH);

/// `tool/result`: the model-facing result of one call, with its structured error and the
/// tool-private `meta` (a diff, say) when there are any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResultEvent {
    pub turn: u64,
    pub step: u64,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolErrorInfo>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Option<serde_json::Value>,
}
event_data!(ToolResultEvent, crate::kinds::TOOL_RESULT, surface);

/// A member that is present, even as `null`, reads as `Some`.
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(deserializer).map(Some)
}

/// The request header of a conversation: what every request of it sends besides the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestHeader {
    pub config: LlmCallConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter_defaults: Option<CallConfigAdapterDefaults>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolSchema>>,
}

/// Why a header was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HeaderReason {
    /// The conversation's first request.
    Initial,
    /// The first request after a resume.
    Resume,
    /// Something in the header changed.
    Change,
}

/// `request/header`: the header every following request sends, logged when it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestHeaderEvent {
    pub header: RequestHeader,
    pub reason: HeaderReason,
}
event_data!(RequestHeaderEvent, crate::kinds::REQUEST_HEADER);

/// `request/context`: the route the requests go to (and its window), logged when it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestContextEvent {
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}
event_data!(RequestContextEvent, crate::kinds::REQUEST_CONTEXT);

/// Which list of an inbox a message waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InboxTarget {
    /// Starts a turn (one message per turn).
    NextTurn,
    /// Joins the running turn at its next step boundary.
    NextStep,
}

impl InboxTarget {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NextTurn => "next-turn",
            Self::NextStep => "next-step",
        }
    }
}

/// How a splice came about, when it was not an ordinary change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SpliceOutcome {
    /// A cancel removed the messages unrun.
    Canceled,
}

/// `agent/inbox/spliced`: every change of an inbox list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxSplicedEvent {
    pub target: InboxTarget,
    pub start: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_count: Option<u64>,
    #[serde(default)]
    pub inserted: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<SpliceOutcome>,
}
event_data!(InboxSplicedEvent, crate::kinds::AGENT_INBOX_SPLICED);

/// `approval/asked`: a call was put to a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAskedEvent {
    pub id: String,
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
event_data!(ApprovalAskedEvent, crate::kinds::APPROVAL_ASKED);

/// `approval/decided`: how an ask was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalDecidedEvent {
    pub id: String,
    pub outcome: ApprovalOutcome,
    /// How far an `allowed-once` answer reaches, when the person said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ApprovalScope>,
    /// What the person wrote with a refusal (a plan review's "keep planning" note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How far a person's allowing answer reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalScope {
    /// This call only.
    Once,
    /// This exact call (tool and arguments) for the rest of the session.
    Session,
    /// Always: an allow rule is written to the user's settings.
    Always,
}

/// An answerer's verdict on `approval/request`: the outcome, how far an allowing one
/// reaches, and what the person wrote with a refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalVerdict {
    pub outcome: ApprovalOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ApprovalScope>,
    /// A note given with a `rejected` answer (logged in `approval/decided`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ApprovalVerdict {
    /// A verdict without a scope.
    pub fn of(outcome: ApprovalOutcome) -> Self {
        Self {
            outcome,
            scope: None,
            note: None,
        }
    }
}
event_data!(ApprovalDecidedEvent, crate::kinds::APPROVAL_DECIDED);

/// The approval policy a session runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Asks go to the answerers.
    Ask,
    /// Asks are rejected without asking.
    Never,
}

/// `approval/policy`: the policy of the session from here on (the last one wins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalPolicyEvent {
    pub policy: ApprovalPolicy,
    /// Who set it, when not the person (`delegation`: a child's policy, fixed by its parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
event_data!(ApprovalPolicyEvent, crate::kinds::APPROVAL_POLICY);

/// `sandbox/mode`: the file and process policy of the session (the last one wins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxModeEvent {
    /// `read-only`, `workspace-write` or `danger-full-access`.
    pub mode: String,
}
event_data!(SandboxModeEvent, crate::kinds::SANDBOX_MODE);

/// `permission/preset`: the permission preset of the session (the last one wins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionPresetEvent {
    pub preset: String,
}
event_data!(PermissionPresetEvent, crate::kinds::PERMISSION_PRESET);

/// `plan/mode`: whether the session plans (read-only tools, a plan put to a person) from this
/// point on; the last one wins, and a log with none is not planning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanModeEvent {
    pub active: bool,
}
event_data!(PlanModeEvent, crate::kinds::PLAN_MODE);

/// `agent-preset/selected`: a session that has had no turn switched to another agent preset;
/// the last one wins over the header's `agentPreset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentPresetSelectedEvent {
    pub agent_preset: String,
}
event_data!(
    AgentPresetSelectedEvent,
    crate::kinds::AGENT_PRESET_SELECTED
);

/// The state of one todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One item of the todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    pub content: String,
    pub status: TodoStatus,
}

/// `todo/write`: the whole todo list, replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoWriteEvent {
    pub todos: Vec<TodoItem>,
}
event_data!(TodoWriteEvent, crate::kinds::TODO_WRITE);

/// Where a title came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TitleSource {
    /// The first words of the first message.
    Fallback,
    /// A model named the session.
    Llm,
    /// A title provider named it with a model (the reference's first-prompt title).
    Provider {
        provider: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<serde_json::Value>,
    },
    /// A person renamed it.
    User,
}

/// `session/title`: the session's title (the latest wins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTitleEvent {
    pub title: String,
    /// The messages the title was made from.
    #[serde(default)]
    pub message_seqs: Vec<u64>,
    pub source: TitleSource,
}
event_data!(SessionTitleEvent, crate::kinds::SESSION_TITLE);

/// A model route: the provider route and the model id on it (where a title was asked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TitleRoute {
    pub provider: String,
    pub model: String,
}

/// `session/title-llm-request`: the whole request a title provider sends to a model, logged
/// before it leaves (the request itself names no session, so this is its only record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTitleLlmRequestEvent {
    /// The title provider that asks (`session-title-first-prompt-llm`).
    pub title_provider: String,
    /// The human messages the request is made from.
    pub message_seqs: Vec<u64>,
    pub route: TitleRoute,
    pub system: String,
    pub messages: Vec<Message>,
    pub max_tokens: u64,
}
event_data!(
    SessionTitleLlmRequestEvent,
    crate::kinds::SESSION_TITLE_LLM_REQUEST
);

/// `session/end-seed`: the end of a seed (resume, fork, replay); only the session writes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EndSeedEvent {}
event_data!(EndSeedEvent, crate::kinds::SESSION_END_SEED);

/// `llm/retry`: a failed attempt will be sent again after `delayMs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetryEvent {
    pub retry_id: String,
    pub turn: u64,
    pub step: u64,
    pub provider: String,
    /// `normal` (bounded retries) or `always`.
    pub mode: String,
    /// The policy's identity, so a changed policy reads as such in the log.
    pub policy_key: String,
    /// The retry's number (1 for the first).
    pub retry: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    pub delay_ms: u64,
    pub failure: crate::failure::LlmFailure,
}
event_data!(LlmRetryEvent, crate::kinds::LLM_RETRY);

/// `llm/retry-started`: the retried attempt is being sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetryStartedEvent {
    pub retry_id: String,
    pub turn: u64,
    pub step: u64,
    pub retry: u32,
}
event_data!(LlmRetryStartedEvent, crate::kinds::LLM_RETRY_STARTED);
