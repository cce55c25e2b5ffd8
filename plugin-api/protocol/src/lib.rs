//! `dsh-protocol`: the core vocabulary of dsh, as data. Messages and content blocks, the stream
//! chunks adapters emit, token usage, failures with their stable codes, call configuration and
//! requests, the data of every core session event, a turn's request, end and outcome, the
//! decisions of the loop's and the pipeline's hooks, tool declarations and replies, approvals,
//! the agents registry's options and notices, prompt assembly, the sandbox's modes and
//! policies, and the web API's envelope and payloads.
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
mod chat;
mod commands;
mod compaction;
mod content;
mod envelope;
mod events;
mod failure;
mod hunks;
mod ids;
mod jobs;
pub mod kinds;
mod model;
mod prompt;
mod questions;
mod sandbox;
mod schema;
mod stats;
mod stream;
mod subagent;
mod tools;
mod trajectory;
mod turn;
mod unknown;
mod web;

pub use agent::{
    AgentNoticeData, AgentOptions, AgentSeed, AgentStatus, AgentSummary, InboxListing, QueueAction,
    SessionStartSource,
};
pub use chat::{
    AppendField, ChatItem, ItemOp, NoticeLevel, SessionHistory, SessionUpdate, ToolStatus,
    ToolView, WIRE_TEXT_LIMIT,
};
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
    ApprovalAskedEvent, ApprovalDecidedEvent, ApprovalPolicy, ApprovalPolicyEvent, ApprovalScope,
    ApprovalVerdict, AssistantChunkEvent, AssistantMessageEvent, EndSeedEvent, EventData,
    HeaderReason, InboxSplicedEvent, InboxTarget, LlmRetryEvent, LlmRetryStartedEvent,
    PermissionPresetEvent, RequestContextEvent, RequestHeader, RequestHeaderEvent,
    SandboxModeEvent, SessionTitleEvent, SessionTitleLlmRequestEvent, SpliceOutcome, StepEndEvent,
    StepStartEvent, TitleRoute, TitleSource, TodoItem, TodoStatus, TodoWriteEvent, ToolCallEvent,
    ToolResultEvent, TurnEndEvent, TurnStartEvent, UserMessageEvent,
};
pub use failure::{FailureCode, LlmFailure};
pub use hunks::{DiffHunk, DiffLine, DiffLineKind, DiffSpan};
pub use ids::{BadSessionId, MAX_SESSION_ID_LEN, check_session_id, uuid_v4_layout};
pub use jobs::{JobEnd, JobOutputMode, JobStart, JobStatus, JobSummary, job_status_line};
pub use model::{
    CallConfigAdapterDefaults, CatalogModel, GenerateRequest, HistoryRef, LlmCallConfig, Modality,
    ModelContext, ModelInfo, ModelReasoning, Purpose, RawJson, ReasoningEffortInfo,
    ResolvedModelInfo, ToolSchema,
};
pub use prompt::{AssembledPrompt, PromptContext, PromptRequest, PromptSection};
pub use questions::{
    QuestionAnswer, QuestionAnsweredEvent, QuestionAskedEvent, QuestionOption, QuestionRequest,
    QuestionResponse, QuestionVerdict, UserQuestion,
};
pub use sandbox::{
    Enforcement, PermissionPreset, ProjectTrust, SandboxMode, SandboxPolicy, looks_secret,
};
pub use schema::schema_document;
pub use stats::{SessionStats, TurnStats};
pub use stream::{FinishReason, ReplayEnvelope, StreamChunk, TokenUsage};
pub use subagent::{
    ChildStatus, ChildSummary, DelegateArgs, InterruptArgs, ListAgentsArgs, ListScope, ReportArgs,
    SendMessageArgs, SubagentDescriptorEvent, SubagentMode, SubagentNotice,
};
pub use tools::{
    AdditionalContext, ApprovalOutcome, ApprovalRequest, CallReport, Concurrency, Guidance,
    OutcomeSummary, PostDecision, PreDecision, Restriction, StepReport, ToolDecl, ToolError,
    ToolErrorInfo, ToolGuidance, ToolReply, ToolSuccess,
};
pub use trajectory::{Trajectory, TrajectoryCall, TrajectoryStep, TrajectoryTurn};
pub use turn::{
    AbortCause, Continuation, PreStepDecision, PromptDecision, PromptSubmit, RequestErrorDecision,
    RequestFailure, StepProposal, TurnEndReason, TurnOutcome, TurnStopping,
};
pub use unknown::{OpenTags, Unknown};
pub use web::{
    AnswerReceipt, ApprovalAnswer, ArchiveRequest, ClientFrame, CompleteFiles, CreateRequest,
    Created, CredentialName, CredentialState, CredentialsDescription, FileCompletions, ForkRequest,
    HistoryRequest, HostDescription, ItemRequest, JobRef, ModelList, ModelRoute, ModelsRequest,
    PluginList, PluginRow, PromptAccepted, PromptMode, RenameRequest, RpcError, RpcErrorCode,
    RpcRequest, RpcResponse, RpcResult, SearchHit, SearchRequest, SearchResult, SelectModel,
    SendPrompt, ServerFrame, SessionList, SessionRef, SessionSummary, SetCredential, SetPermission,
    SettingsDescription, SettingsUpdate, UpdateQueue,
};
