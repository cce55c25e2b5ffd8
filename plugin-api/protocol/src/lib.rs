//! `dsh-protocol`: the core vocabulary of dsh, as data. Messages and content blocks, the stream
//! chunks adapters emit, token usage, failures with their stable codes, call configuration and
//! requests, the data of every core session event, a turn's request, end and outcome, the
//! decisions of the loop's and the pipeline's hooks, tool declarations and replies, approvals,
//! the agents registry's options and notices, prompt assembly, the sandbox's modes and
//! policies, tool views, and what the store and the host list. What clients send and receive
//! (requests, results, frames) is the client protocol's (`dsh-client-protocol`).
//!
//! Every type is a serde value with a JSON Schema ([`schema_document`]), and serializes to
//! exactly the JSON the reference writes into its session logs, so logs move between the two
//! implementations unchanged. The seams carry these types (see each seam crate for how they
//! cross the plugin boundary); plugin code builds and reads them instead of JSON.
//!
//! It is a leaf: no logic beyond constructors and small queries, no I/O, no plugin boundary.
//! Types that later versions may extend take new fields as optional members, and the enums
//! that flow from newer plugins to older ones keep an `Other` fallback, so an older plugin
//! reads what a newer one writes.

mod agent;
mod asked_change;
mod commands;
mod compaction;
mod content;
mod envelope;
mod events;
mod failure;
mod goal;
mod hunks;
mod ids;
mod jobs;
pub mod kinds;
mod listing;
mod mcp_server;
mod model;
mod presets;
mod prompt;
mod questions;
mod sandbox;
mod schema;
mod stream;
mod subagent;
mod tool_view;
mod tools;
mod turn;
mod unknown;

pub use agent::{
    AgentNoticeData, AgentOptions, AgentSeed, AgentStatus, AgentSummary, InboxListing, QueueAction,
    SessionStartSource,
};
pub use asked_change::AskedChange;
pub use commands::{
    CommandDoneEvent, CommandInvocation, CommandKind, CommandOutcome, CommandRunEvent, CommandSpec,
    command_line,
};
pub use compaction::{
    CompactionEndEvent, CompactionStartEvent, CompactionSummaryEvent, SUMMARY_CLOSE,
    SUMMARY_PREAMBLE, ShadowedRange, TokenMeter,
};
pub use content::{
    BlockType, ContentBlock, ImageAttachment, Message, MessageSource, ModelSource, PluginSource,
    Role, SnapshotSection, SourceExtra, content_has_image, text_of,
};
pub use envelope::{AppendTag, ReplaceTag, SessionEvent, SurfaceOp};
pub use events::{
    AgentPresetSelectedEvent, ApprovalAskedEvent, ApprovalDecidedEvent, ApprovalPolicy,
    ApprovalPolicyEvent, ApprovalScope, ApprovalVerdict, AssistantChunkEvent,
    AssistantMessageEvent, CodeDispatchEvent, CodeDispatchStartEvent, EndSeedEvent, EventData,
    HeaderReason, InboxSplicedEvent, InboxTarget, LlmRetryEvent, LlmRetryStartedEvent,
    PermissionPresetEvent, PlanModeEvent, RequestContextEvent, RequestHeader, RequestHeaderEvent,
    SandboxModeEvent, SessionTitleEvent, SessionTitleLlmRequestEvent, SpliceOutcome, StepEndEvent,
    StepStartEvent, TitleRoute, TitleSource, TodoItem, TodoStatus, TodoWriteEvent, ToolCallEvent,
    ToolResultEvent, TurnEndEvent, TurnStartEvent, UserMessageEvent,
};
pub use failure::{FailureCode, LlmFailure};
pub use goal::{
    GOAL_CHANGE_VERSION, GoalAction, GoalActivation, GoalBlockReason, GoalChangeEvent, GoalChanged,
    GoalOperation, GoalPhase, GoalRef, GoalRoundSource, GoalSnapshot, GoalView,
};
pub use hunks::{DiffHunk, DiffLine, DiffLineKind, DiffSpan, cut_hunks};
pub use ids::{BadSessionId, MAX_SESSION_ID_LEN, check_session_id, fresh_uuid, uuid_v4_layout};
pub use jobs::{JobEnd, JobOutputMode, JobStart, JobStatus, JobSummary, job_status_line};
pub use listing::{PluginRow, ROW_DISABLED_STATE, ROW_ENABLED_KEY, SearchHit, SessionSummary};
pub use mcp_server::McpServerSpec;
pub use model::{
    CallConfigAdapterDefaults, CatalogModel, GenerateRequest, HistoryRef, LlmCallConfig, Modality,
    ModelContext, ModelInfo, ModelReasoning, Purpose, RawJson, ReasoningEffortInfo,
    ResolvedModelInfo, ToolSchema,
};
pub use presets::{PresetFiles, PresetRuntime, PresetSource, PresetSummary, preset_scope};
pub use prompt::{AssembledPrompt, PromptContext, PromptRequest, PromptSection};
pub use questions::{
    QuestionAnswer, QuestionAnsweredEvent, QuestionAskedEvent, QuestionOption, QuestionRequest,
    QuestionResponse, QuestionVerdict, UserQuestion,
};
pub use sandbox::{
    Enforcement, PermissionPreset, ProjectTrust, SandboxMode, SandboxPolicy, looks_secret,
};
pub use schema::schema_document;
pub use stream::{FinishReason, ReplayEnvelope, StreamChunk, TokenUsage};
pub use subagent::{
    ChildStatus, ChildSummary, DelegateArgs, InterruptArgs, ListAgentsArgs, ListScope, ReportArgs,
    SendMessageArgs, SubagentDescriptorEvent, SubagentMode, SubagentNotice,
};
pub use tool_view::{ToolStatus, ToolView};
pub use tools::{
    AdditionalContext, ApprovalOutcome, ApprovalRequest, CallReport, Concurrency, Guidance,
    OutcomeSummary, PostDecision, PreDecision, Restriction, StepReport, ToolDecl, ToolError,
    ToolErrorInfo, ToolGuidance, ToolReply, ToolSuccess,
};
pub use turn::{
    AbortCause, Continuation, PreStepDecision, PromptDecision, PromptSubmit, RequestErrorDecision,
    RequestFailure, StepProposal, TurnEndReason, TurnOutcome, TurnStopping,
};
pub use unknown::{OpenTags, Unknown};
