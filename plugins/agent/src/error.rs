//! What the registry refuses, and why.

use dsh_agents_seam::{AgentsError, AgentsErrorKind};
use dsh_sessions_seam::{SessionError, SessionErrorKind};

#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    #[error("no `sessions` service: mount the session plugin")]
    NoSessions,
    #[error("agent options: \"cwd\" must be an absolute directory, not `{0}`")]
    Cwd(String),
    #[error("agent options do not read: {0}")]
    Options(dsh_plugin_api::DecodeError),
    #[error("agent `{0}` already exists")]
    Exists(String),
    #[error("no agent `{0}`")]
    Unknown(String),
    #[error("no agent `{0}`: a waking send needs an agent (create one first)")]
    NoAgentToWake(String),
    #[error("agent `{0}` is being disposed")]
    Disposing(String),
    #[error("the message does not read: {0}")]
    Message(dsh_plugin_api::DecodeError),
    #[error("the queue action does not read: {0}")]
    Action(dsh_plugin_api::DecodeError),
    #[error("the inbox target does not read: {0}")]
    Target(dsh_plugin_api::DecodeError),
    #[error("the message has no content")]
    EmptyMessage,
    #[error("message `{0}` is already pending")]
    Pending(String),
    #[error("no message `{0}` waits in the inbox (it may have started already)")]
    NotQueued(String),
    #[error("message `{0}` already joins the running turn")]
    AlreadySteering(String),
    #[error("an edited message needs content")]
    EmptyEdit,
    #[error("agent/inbox/spliced not logged: {0}")]
    Splice(SessionError),
    #[error("session `{id}`: {error}")]
    Session { id: String, error: SessionError },
    #[error("agent `{0}` went away before it was idle (its registry was unloaded)")]
    Gone(String),
    #[error("agent `{agent}`: closing its session: {error}")]
    Close { agent: String, error: SessionError },
    #[error("agent preset `{id}`: {problem}")]
    Preset { id: String, problem: String },
    #[error("agent `{0}` has had a turn: its preset is chosen before the first one")]
    PresetAfterTurn(String),
}

impl AgentError {
    /// What a caller of the `agents` service branches on.
    pub(crate) fn kind(&self) -> AgentsErrorKind {
        match self {
            Self::NoSessions => AgentsErrorKind::Unavailable,
            Self::Cwd(_)
            | Self::Options(_)
            | Self::Message(_)
            | Self::Action(_)
            | Self::Target(_)
            | Self::EmptyMessage
            | Self::EmptyEdit
            | Self::PresetAfterTurn(_) => AgentsErrorKind::Invalid,
            Self::Preset { .. } => AgentsErrorKind::Preset,
            Self::Exists(_) | Self::Pending(_) => AgentsErrorKind::Exists,
            Self::Unknown(_) | Self::NoAgentToWake(_) => AgentsErrorKind::NotFound,
            // A session that is not live (or not there) is as unknown as a missing agent.
            Self::Session { error, .. } if error.kind == SessionErrorKind::NotFound => {
                AgentsErrorKind::NotFound
            }
            Self::Disposing(_) => AgentsErrorKind::Disposing,
            Self::NotQueued(_) => AgentsErrorKind::NotQueued,
            Self::AlreadySteering(_) => AgentsErrorKind::SteerUnavailable,
            Self::Splice(_) | Self::Session { .. } | Self::Close { .. } => AgentsErrorKind::Session,
            Self::Gone(_) => AgentsErrorKind::Gone,
        }
    }
}

impl From<AgentError> for AgentsError {
    fn from(error: AgentError) -> Self {
        AgentsError::new(error.kind(), error.to_string())
    }
}
