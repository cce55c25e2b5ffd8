//! What the registry refuses, and why.

use dsh_sessions_seam::SessionError;

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
}
