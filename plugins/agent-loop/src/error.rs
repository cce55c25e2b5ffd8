//! What ends a turn from inside the loop, mapped once to the `turn/end` reason it logs.

use dsh_plugin_api::{DecodeError, PluginError};
use dsh_protocol::TurnEndReason;
use dsh_sessions_seam::SessionError;

/// A failure of the loop itself (not of the model: a model failure is an attempt's outcome).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoopError {
    /// The log refused an event: the turn cannot go on without lying about what happened.
    #[error("`{kind}` could not be logged: {error}")]
    LogRefused { kind: String, error: SessionError },
    /// A hook failed, or answered something that is not a decision.
    #[error("{hook}: {error}")]
    Hook { hook: &'static str, error: String },
    /// The tool schemas or the step's calls could not be had from `tools`.
    #[error("tools: {0}")]
    Tools(String),
    /// The inbox could not be claimed.
    #[error("inbox: {0}")]
    Inbox(String),
    /// A tool result the log did not take.
    #[error("the result of tool call `{0}` could not be logged")]
    ResultLost(String),
}

impl LoopError {
    pub(crate) fn hook(hook: &'static str, error: impl std::fmt::Display) -> Self {
        Self::Hook {
            hook,
            error: error.to_string(),
        }
    }

    pub(crate) fn decode(hook: &'static str, error: DecodeError) -> Self {
        Self::hook(hook, format!("answered no valid decision: {error}"))
    }

    pub(crate) fn plugin(hook: &'static str, error: PluginError) -> Self {
        Self::hook(hook, error)
    }

    /// The `turn/end` reason this failure ends the turn with.
    pub(crate) fn reason(&self) -> TurnEndReason {
        let code = match self {
            Self::LogRefused { .. } | Self::ResultLost(_) => "LOG_REFUSED",
            Self::Hook { .. } => "HOOK_FAILED",
            Self::Tools(_) => "TOOLS_FAILED",
            Self::Inbox(_) => "INBOX_FAILED",
        };
        TurnEndReason::error(code, self.to_string())
    }
}
