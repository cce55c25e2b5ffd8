//! Why a goal read or mutation is refused: a stable code (the reference's) and a sentence that
//! names what was wrong, for the model's tool result, a person's command and a client's error.

use dsh_plugin_api::{SeamError, SeamErrorKind};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GoalError {
    #[error("GOAL_NOT_FOUND: {0}")]
    NotFound(String),
    #[error("GOAL_ALREADY_EXISTS: {0}")]
    AlreadyExists(String),
    #[error("GOAL_STALE_REVISION: {0}")]
    Stale(String),
    #[error("GOAL_INVALID_OBJECTIVE: {0}")]
    Objective(String),
    #[error("GOAL_INVALID_MAX_ROUNDS: {0}")]
    MaxRounds(String),
    #[error("GOAL_INVALID_BLOCK_REASON: {0}")]
    BlockReason(String),
    #[error("GOAL_INVALID_EDIT: {0}")]
    Edit(String),
    #[error("GOAL_INVALID_TRANSITION: {0}")]
    Transition(String),
    #[error("GOAL_SESSION_NOT_LIVE: {0}")]
    NotLive(String),
    #[error("GOAL_LOG_FAILED: {0}")]
    Log(String),
}

impl GoalError {
    /// The stable code, as the tool result's `error.code` carries it.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "GOAL_NOT_FOUND",
            Self::AlreadyExists(_) => "GOAL_ALREADY_EXISTS",
            Self::Stale(_) => "GOAL_STALE_REVISION",
            Self::Objective(_) => "GOAL_INVALID_OBJECTIVE",
            Self::MaxRounds(_) => "GOAL_INVALID_MAX_ROUNDS",
            Self::BlockReason(_) => "GOAL_INVALID_BLOCK_REASON",
            Self::Edit(_) => "GOAL_INVALID_EDIT",
            Self::Transition(_) => "GOAL_INVALID_TRANSITION",
            Self::NotLive(_) => "GOAL_SESSION_NOT_LIVE",
            Self::Log(_) => "GOAL_LOG_FAILED",
        }
    }

    pub(crate) fn to_seam(&self) -> SeamError {
        let kind = match self {
            Self::NotFound(_) | Self::NotLive(_) => SeamErrorKind::NotFound,
            Self::AlreadyExists(_) | Self::Stale(_) | Self::Transition(_) => {
                SeamErrorKind::Conflict
            }
            Self::Objective(_) | Self::MaxRounds(_) | Self::BlockReason(_) | Self::Edit(_) => {
                SeamErrorKind::Invalid
            }
            Self::Log(_) => SeamErrorKind::Failed,
        };
        SeamError::new(kind, self.to_string())
    }
}
