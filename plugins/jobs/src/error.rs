//! What the registry and its tools refuse, and why.

use dsh_plugin_api::{DecodeError, SeamError, SeamErrorKind};

#[derive(Debug, thiserror::Error)]
pub(crate) enum JobsError {
    #[error("the job does not read: {0}")]
    Unreadable(DecodeError),
    #[error("a job needs the session that owns it")]
    NoSession,
    #[error("job kind `{0}` is not a plain word (it prefixes the job ids)")]
    Kind(String),
    #[error("no background job `{0}` in this session (job_list lists them)")]
    NotFound(String),
    #[error("arguments are not valid: {0}")]
    Arguments(serde_json::Error),
    #[error("the wait was cancelled")]
    WaitCancelled,
}

impl From<JobsError> for SeamError {
    fn from(error: JobsError) -> Self {
        let kind = match error {
            JobsError::NotFound(_) => SeamErrorKind::NotFound,
            JobsError::WaitCancelled => SeamErrorKind::Failed,
            JobsError::Unreadable(_)
            | JobsError::NoSession
            | JobsError::Kind(_)
            | JobsError::Arguments(_) => SeamErrorKind::Invalid,
        };
        SeamError::new(kind, error.to_string())
    }
}
