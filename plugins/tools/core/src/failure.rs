//! The failure vocabulary every tool call outcome is normalized into.
//!
//! Two layers, on purpose. [`ToolErrorInfo`] is what the session log records as
//! `tool/result.error {name, code}`, and only where the reference records it: policy denials,
//! approval refusals and post-execute blocks carry *no* structured error in the recorded logs
//! (for example `Error: the user rejected tool "bash"` has no `error` field), so neither do
//! ours. [`FailureKind`] is the in-process classification every failure has, logged or not, so
//! a caller can still route on "denied by a guard" versus "the tool threw".

use dsh_protocol::{ContentBlock, ToolErrorInfo};

/// Stable error codes and structured error names the reference uses for tool failures.
pub mod codes {
    /// The name is not visible in the caller's scope (never registered, or filtered away).
    pub const UNKNOWN_TOOL: &str = "UNKNOWN_TOOL";
    /// The model's arguments are not JSON or violate the tool's parameter schema.
    pub const INVALID_ARGS: &str = "INVALID_ARGS";
    /// A tool body (or a post-execute value replacement) broke its declared output schema.
    pub const INVALID_TOOL_OUTPUT: &str = "INVALID_TOOL_OUTPUT";
    /// The timeout policy's deadline expired.
    pub const TOOL_TIMEOUT: &str = "TOOL_TIMEOUT";
    /// Cancellation arrived after the tool body started.
    pub const ABORTED: &str = "ABORTED";
    /// Cancellation arrived before the tool body started.
    pub const ABORTED_BEFORE_DISPATCH: &str = "ABORTED_BEFORE_DISPATCH";
    /// Edit/overwrite of a file the agent has not read (read-before-edit policy).
    pub const FS_NOT_OBSERVED: &str = "FS_NOT_OBSERVED";
    /// The file does not exist.
    pub const FS_NOT_FOUND: &str = "FS_NOT_FOUND";
    /// A sandbox was requested but no backend can enforce it.
    pub const SANDBOX_UNAVAILABLE: &str = "SANDBOX_UNAVAILABLE";
    /// No language server serves the file.
    pub const LSP_UNAVAILABLE: &str = "LSP_UNAVAILABLE";
    /// Crash repair: the call was logged but its result never was.
    pub const TOOL_OUTCOME_UNKNOWN: &str = "TOOL_OUTCOME_UNKNOWN";
    /// Crash repair: the call was never logged as started.
    pub const TOOL_NOT_STARTED: &str = "TOOL_NOT_STARTED";

    /// Structured error name paired with [`UNKNOWN_TOOL`].
    pub const TOOL_NOT_FOUND_ERROR: &str = "ToolNotFoundError";
    /// Structured error name paired with [`INVALID_ARGS`].
    pub const TOOL_ARGS_ERROR: &str = "ToolArgsError";
    /// Structured error name paired with [`INVALID_TOOL_OUTPUT`].
    pub const TOOL_OUTPUT_ERROR: &str = "ToolOutputError";
    /// Structured error name paired with [`TOOL_TIMEOUT`].
    pub const TOOL_TIMEOUT_ERROR: &str = "ToolTimeoutError";
    /// Structured error name paired with [`ABORTED`] and [`ABORTED_BEFORE_DISPATCH`].
    pub const ABORT_ERROR: &str = "AbortError";
    /// Structured error name paired with the `FS_*` codes.
    pub const FS_ERROR: &str = "FsError";
    /// Structured error name paired with [`SANDBOX_UNAVAILABLE`].
    pub const SANDBOX_UNAVAILABLE_ERROR: &str = "SandboxUnavailableError";
    /// Structured error name paired with [`LSP_UNAVAILABLE`].
    pub const LSP_ERROR: &str = "LspError";
    /// Structured error name paired with [`TOOL_OUTCOME_UNKNOWN`].
    pub const TOOL_OUTCOME_UNKNOWN_ERROR: &str = "ToolOutcomeUnknownError";
    /// Structured error name paired with [`TOOL_NOT_STARTED`].
    pub const TOOL_NOT_STARTED_ERROR: &str = "ToolNotStartedError";
}

/// Where a denial came from. None of these are logged (the reference logs no `error` for a
/// denial); they exist so in-process observers can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenialSource {
    /// A `tools/pre-execute` listener answered `deny`.
    PreExecute,
    /// An `ask` could not be put to anyone: no approval service, or no agent to route through.
    ApprovalMissing,
    /// The human answered no.
    ApprovalRejected,
    /// The approval request was cancelled.
    ApprovalCancelled,
    /// The approval service reported no usable channel.
    ApprovalUnavailable,
    /// A monotonic guard returned a reason.
    Guard,
}

/// The in-process classification of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    UnknownTool,
    InvalidArgs,
    InvalidToolOutput,
    Timeout,
    Aborted,
    AbortedBeforeDispatch,
    /// Refused before dispatch by policy, approval or a guard.
    Denied(DenialSource),
    /// A `tools/post-execute` listener blocked the result with corrective feedback.
    PostExecuteBlocked,
    /// A pipeline stage itself failed (a listener or hook errored, an invalid decision).
    Pipeline,
    /// The tool reported its own failure; its code, if any, is in [`ToolFailure::info`].
    Tool,
}

/// One failed outcome's detail: the message without the model-facing `Error: ` envelope, the
/// logged structured error when there is one, and the in-process classification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    message: String,
    info: Option<ToolErrorInfo>,
    kind: FailureKind,
}

impl ToolFailure {
    fn new(message: String, info: Option<ToolErrorInfo>, kind: FailureKind) -> Self {
        Self {
            message,
            info,
            kind,
        }
    }

    fn coded(message: String, name: &str, code: &str, kind: FailureKind) -> Self {
        Self::new(message, Some(ToolErrorInfo::new(name, code)), kind)
    }

    /// A name the caller's scope cannot see. Deliberately the same text whether the name was
    /// never registered or is filtered away, so a restriction is indistinguishable from absence.
    pub fn unknown_tool(name: &str) -> Self {
        Self::coded(
            format!("unknown tool \"{name}\""),
            codes::TOOL_NOT_FOUND_ERROR,
            codes::UNKNOWN_TOOL,
            FailureKind::UnknownTool,
        )
    }

    /// Arguments that violate the parameter schema (or are not a JSON object at all).
    pub fn invalid_args(violations: &[String]) -> Self {
        Self::coded(
            format!("invalid arguments: {}", violations.join("; ")),
            codes::TOOL_ARGS_ERROR,
            codes::INVALID_ARGS,
            FailureKind::InvalidArgs,
        )
    }

    /// A value that violates the tool's declared output schema.
    pub fn invalid_output(tool: &str, violations: &[String]) -> Self {
        Self::coded(
            format!(
                "tool \"{tool}\" returned invalid output: {}",
                violations.join("; ")
            ),
            codes::TOOL_OUTPUT_ERROR,
            codes::INVALID_TOOL_OUTPUT,
            FailureKind::InvalidToolOutput,
        )
    }

    /// The timeout policy's deadline won.
    pub fn timeout(timeout_ms: u64) -> Self {
        Self::coded(
            format!("tool call timed out after {timeout_ms}ms"),
            codes::TOOL_TIMEOUT_ERROR,
            codes::TOOL_TIMEOUT,
            FailureKind::Timeout,
        )
    }

    /// Cancellation after the body started.
    pub fn aborted() -> Self {
        Self::coded(
            "tool call aborted".to_owned(),
            codes::ABORT_ERROR,
            codes::ABORTED,
            FailureKind::Aborted,
        )
    }

    /// Cancellation before the body started (also the synthetic result of an undispatched
    /// call when a step is cancelled).
    pub fn aborted_before_dispatch() -> Self {
        Self::coded(
            "tool call aborted before dispatch".to_owned(),
            codes::ABORT_ERROR,
            codes::ABORTED_BEFORE_DISPATCH,
            FailureKind::AbortedBeforeDispatch,
        )
    }

    /// A pre-dispatch refusal; `reason` is the whole model-facing message.
    pub fn denied(reason: impl Into<String>, source: DenialSource) -> Self {
        Self::new(reason.into(), None, FailureKind::Denied(source))
    }

    /// A post-execute block. The message is derived from the feedback the model will read: its
    /// text blocks joined by newlines, other blocks as `[<type> content]`.
    pub fn blocked(feedback: &[ContentBlock]) -> Self {
        let lines: Vec<String> = feedback
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text } => text.clone(),
                other => {
                    let tag = serde_json::to_value(other.block_type())
                        .ok()
                        .and_then(|tag| tag.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    format!("[{tag} content]")
                }
            })
            .collect();
        let text = lines.join("\n");
        let message = if text.is_empty() {
            "tool result blocked by post-execute policy".to_owned()
        } else {
            text
        };
        Self::new(message, None, FailureKind::PostExecuteBlocked)
    }

    /// A failing pipeline stage (listener error, invalid decision). Unlogged, like the
    /// reference's plain `Error`s.
    pub fn pipeline(message: impl Into<String>) -> Self {
        Self::new(message.into(), None, FailureKind::Pipeline)
    }

    /// A tool's own failure, with its structured error when it has one
    /// (`FsError`/`FS_NOT_FOUND`, `SubagentError`/`NOT_RESUMABLE`, ...).
    pub fn tool(message: impl Into<String>, info: Option<ToolErrorInfo>) -> Self {
        Self::new(message.into(), info, FailureKind::Tool)
    }

    /// The message without the `Error: ` envelope.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The structured error the log records, if any.
    pub fn info(&self) -> Option<&ToolErrorInfo> {
        self.info.as_ref()
    }

    /// The logged code, if any.
    pub fn code(&self) -> Option<&str> {
        self.info.as_ref().map(|info| info.code.as_str())
    }

    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// The text the model reads for this failure: `Error: <message>`.
    pub fn model_text(&self) -> String {
        format!("Error: {}", self.message)
    }
}
