//! Background jobs: work a tool started and answered at once (a `bash` command with
//! `run_in_background`, a product subagent run in the background), kept under an id the model
//! reads with `job_output`, lists with `job_list` and stops with `job_kill`. What a producer
//! tells the registry when it starts one and when it ends, and what a job looks like when read.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a job's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobOutputMode {
    /// Output arrives while it runs (a command's streams); each read returns what came since
    /// the previous read.
    Stream,
    /// One result, readable once the job settled (a subagent's answer).
    Final,
}

/// What a producer says when it starts a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobStart {
    /// The session that owns it: only that session's calls see it, and its agent is told when
    /// it ends.
    pub session: String,
    /// The producer's kind (`bash`, `subagent`): also the prefix of its ids (`bash-1`).
    pub kind: String,
    /// What it is, for lists and notices (a command, a task's description).
    pub label: String,
    pub output: JobOutputMode,
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobStatus {
    Running,
    /// Its cancellation was asked for; it has not ended yet.
    Stopping,
    Completed,
    Killed,
    Failed,
}

impl JobStatus {
    /// The word the model reads in `[status: ...]`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Stopping => "stopping",
            Self::Completed => "completed",
            Self::Killed => "killed",
            Self::Failed => "failed",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Killed | Self::Failed)
    }
}

/// One job as a page lists it (`session/projection` key `jobs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSummary {
    pub id: String,
    pub kind: String,
    pub label: String,
    pub status: JobStatus,
    /// The producer's detail once it ended (`exit code: 0`, a diagnostic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a producer says when its job ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobEnd {
    /// `completed`, `failed` or `killed` (anything else counts as failed).
    pub status: JobStatus,
    /// The producer's detail, read after the status (`exit code: 3`, a failure's diagnostic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A final-output job's result (added to any streamed output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Settled without telling its session (its producer is going away with its row).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quiet: bool,
}

impl JobEnd {
    pub fn new(status: JobStatus, detail: Option<String>) -> Self {
        Self {
            status,
            detail,
            output: None,
            quiet: false,
        }
    }

    /// With a final-output job's result.
    pub fn with_output(mut self, output: String) -> Self {
        self.output = Some(output);
        self
    }

    /// Without a notice to its session.
    pub fn quietly(mut self) -> Self {
        self.quiet = true;
        self
    }
}

/// `[status: failed, exit code: 3]`: how every read ends.
pub fn job_status_line(status: JobStatus, detail: Option<&str>) -> String {
    match detail {
        Some(detail) if !detail.is_empty() => format!("[status: {}, {detail}]", status.word()),
        _ => format!("[status: {}]", status.word()),
    }
}
