//! A turn as its driver and its callers see it: how it ended, what it reports, and the decisions
//! of the hooks around its steps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::content::Message;
use crate::failure::{FailureCode, LlmFailure};
use crate::stream::TokenUsage;

/// Why a turn ended: the `reason` of its `turn/end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TurnEndReason {
    /// Nothing more was owed: the model answered and no tool asked for another step.
    Completed,
    /// Cancelled; the cause says by whom.
    Aborted { reason: AbortCause },
    /// `agent/pre-step` refused a step.
    Blocked {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A model call failed for good, or the loop could not go on (non-model errors carry their
    /// own code: `NO_MODEL`, `LOG_REFUSED`, `STORE_WRITE_FAILED` (the store could not make the
    /// turn durable), `HOOK_FAILED`, `MAX_STEPS`...).
    Error { error: LlmFailure },
    /// A step hit the output cap.
    MaxTokens,
    /// Written only by crash repair, for a turn that was open when its process died.
    Interrupted,
    /// A reason this vocabulary does not name (written by a newer loop), verbatim.
    #[serde(untagged)]
    Other(serde_json::Value),
}

impl TurnEndReason {
    /// An `error` end with a code of the loop's own.
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        Self::Error {
            error: LlmFailure::new(FailureCode::parse(code), message),
        }
    }

    /// The `kind` tag.
    pub fn kind(&self) -> &str {
        match self {
            Self::Completed => "completed",
            Self::Aborted { .. } => "aborted",
            Self::Blocked { .. } => "blocked",
            Self::Error { .. } => "error",
            Self::MaxTokens => "max-tokens",
            Self::Interrupted => "interrupted",
            Self::Other(value) => value
                .get("kind")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("unknown"),
        }
    }

    /// The failure of an `error` end.
    pub fn failure(&self) -> Option<&LlmFailure> {
        match self {
            Self::Error { error } => Some(error),
            _ => None,
        }
    }
}

/// Who cancelled a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AbortCause {
    /// The person driving the session.
    User,
    /// The parent agent of a child.
    Parent,
    /// A hook stopped it.
    Hook {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Its owner went away (the agent or the loop unloaded).
    Disposed,
    /// Written by older harnesses.
    Legacy,
}

impl AbortCause {
    /// The cause named `name` (`user`, `parent`, `hook`, `disposed`, `legacy`); any other name
    /// reads as `user`, the cause of an ordinary cancel.
    pub fn named(name: &str) -> Self {
        match name {
            "parent" => Self::Parent,
            "hook" => Self::Hook { reason: None },
            "disposed" => Self::Disposed,
            "legacy" => Self::Legacy,
            _ => Self::User,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Parent => "parent",
            Self::Hook { .. } => "hook",
            Self::Disposed => "disposed",
            Self::Legacy => "legacy",
        }
    }
}

/// What a finished turn reports to whoever ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnOutcome {
    pub session_id: String,
    /// The turn's number (0 when no turn was opened).
    pub turn: u64,
    pub reason: TurnEndReason,
    /// The last assistant text of the turn.
    #[serde(default)]
    pub output: String,
    /// The tokens the turn's model calls used.
    #[serde(default)]
    pub usage: TokenUsage,
}

impl TurnOutcome {
    /// The outcome of a turn that never opened.
    pub fn unopened(session_id: impl Into<String>, reason: TurnEndReason) -> Self {
        Self {
            session_id: session_id.into(),
            turn: 0,
            reason,
            output: String::new(),
            usage: TokenUsage::default(),
        }
    }
}

/// A step about to open, as `agent/pre-step` sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepProposal {
    pub session: String,
    pub turn: u64,
    pub step: u64,
}

/// The answer of `agent/pre-step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PreStepDecision {
    /// Let the step run.
    Enter,
    /// End the turn `blocked` without the step.
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// The answer of `agent/request-error` for a failed model attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RequestErrorDecision {
    /// Send the attempt again, in the same step (the request is rebuilt from the log).
    Retry,
    /// Give up: the turn ends `error`.
    Fail,
}

/// A failed model attempt, as `agent/request-error` sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestFailure {
    pub session: String,
    pub turn: u64,
    pub step: u64,
    pub provider: String,
    /// How many attempts of this step have failed, this one included (1 for the first).
    pub failures: u32,
    pub failure: LlmFailure,
}

/// A completed turn about to end, as `agent/turn-stopping` sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStopping {
    pub session: String,
    pub turn: u64,
    pub reason: TurnEndReason,
}

/// The answer of an `agent/turn-stopping` listener that keeps the turn going: the message is
/// the next step's input (an id and the plugin source are given when it has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Continuation {
    pub message: Message,
}

/// A turn's opening input, as `agent/prompt-submit` sees it: what the turn claimed and was
/// given, before its first step opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromptSubmit {
    pub session: String,
    pub turn: u64,
    /// The working directory of the turn's tools.
    pub cwd: String,
    /// The input in the order it enters the history.
    pub messages: Vec<Message>,
}

/// The answer of `agent/prompt-submit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PromptDecision {
    /// Let the input enter, followed by these context messages (an id and the plugin source
    /// are given when they have none).
    Accept {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        contexts: Vec<Message>,
    },
    /// End the turn `blocked` before any step: the input never reaches the model.
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl PromptDecision {
    /// The decision of a listener with nothing to add.
    pub fn accept() -> Self {
        Self::Accept {
            contexts: Vec::new(),
        }
    }
}
