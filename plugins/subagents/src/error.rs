//! Why a delegation tool did nothing; the message is the tool's error result, for the model.

use dsh_agents_seam::AgentsError;
use dsh_sessions_seam::SessionError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum DelegationError {
    #[error("no `agents` registry is running")]
    NoAgents,
    #[error("arguments are not valid: {0}")]
    Arguments(serde_json::Error),
    #[error("subagent depth {depth} exceeds maxDepth {max}")]
    TooDeep { depth: u64, max: u64 },
    #[error("the calling session `{0}` is not an agent")]
    NotAnAgent(String),
    /// A session the delegation reads or writes is not live here.
    #[error("{0}")]
    Session(SessionError),
    #[error("the child agent did not start: {0}")]
    Create(AgentsError),
    #[error("the child's session refused its policies: {0}")]
    Policy(SessionError),
    #[error("the child's task was not queued: {0}")]
    Task(AgentsError),
    #[error("subagent \"{0}\" is unavailable")]
    Unavailable(String),
    #[error("subagent \"{id}\" is unavailable: {error}")]
    NotSent { id: String, error: AgentsError },
    #[error("agent \"{0}\" is not one you started")]
    NotYours(String),
    #[error("{0}")]
    Cancel(AgentsError),
    #[error("report is for subagents: no agent started this one")]
    NotASubagent,
    #[error("the report was not delivered: {0}")]
    Report(AgentsError),
}
