//! `job_output`, `job_list` and `job_kill` with the reference's parameters and answers: each
//! sees only the calling session's jobs, every read ends with `[status: ...]`.

use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{ContentBlock, OutcomeSummary, ToolDecl, ToolReply};
use dsh_tools_seam::{CallView, Tool};
use serde_json::json;

use crate::error::JobsError;
use crate::registry::{Killed, Registry};

#[derive(Clone, Copy)]
pub(crate) enum JobTool {
    List,
    Output,
    Kill,
}

/// How long `wait: true` may wait.
#[derive(Clone, Copy)]
pub(crate) struct Waits {
    pub(crate) default: Duration,
    pub(crate) max: Duration,
}

#[derive(Clone)]
pub(crate) struct JobToolImpl {
    pub(crate) kind: JobTool,
    pub(crate) registry: Arc<Registry>,
    pub(crate) waits: Waits,
}

const JOB_ID: &str = "Job id returned by the tool that started the background work.";

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct OutputArgs {
    job_id: String,
    #[serde(default)]
    wait: bool,
    #[serde(default)]
    timeout_ms: Option<f64>,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct KillArgs {
    job_id: String,
    #[serde(default)]
    reason: Option<String>,
}

pub(crate) fn declaration(kind: JobTool) -> ToolDecl {
    match kind {
        JobTool::List => ToolDecl::new(
            "job_list",
            "List your background jobs (running and finished) with their ids, kinds, and statuses.",
            json!({"type": "object", "properties": {}}),
        ),
        JobTool::Output => ToolDecl::new(
            "job_output",
            "Read a background job. Stream jobs return only output since the previous read; final-output jobs return their result after settlement. Every response ends with `[status: ...]`. Reads are non-blocking unless `wait: true`, which waits up to the configured cap.",
            json!({
                "type": "object",
                "properties": {
                    "job_id": {"type": "string", "description": JOB_ID},
                    "wait": {"type": "boolean", "description": "Block until the job reaches a terminal status or the timeout expires. A timed-out wait returns [status: running] and leaves the job alive."},
                    "timeout_ms": {"type": "number", "description": "Max wait in milliseconds (only meaningful with wait: true). Defaults to the configured wait timeout; capped by the configured maximum."}
                },
                "required": ["job_id"]
            }),
        ),
        JobTool::Kill => ToolDecl::new(
            "job_kill",
            "Request cancellation of a running background job by job id. Returns immediately; the job settles as killed once its work actually stops.",
            json!({
                "type": "object",
                "properties": {
                    "job_id": {"type": "string", "description": JOB_ID},
                    "reason": {"type": "string", "description": "Optional short reason, recorded in the log and forwarded to the job."}
                },
                "required": ["job_id"]
            }),
        ),
    }
}

impl JobToolImpl {
    async fn answer(&self, call: &CallView, cancel: CancelBox) -> Result<String, JobsError> {
        let session = call.session.as_str();
        let invalid = JobsError::Arguments;
        match self.kind {
            JobTool::List => {
                let jobs = self.registry.list(session);
                Ok(match jobs.is_empty() {
                    true => "(no background jobs)".to_owned(),
                    false => jobs
                        .iter()
                        .map(|job| {
                            format!(
                                "{} [{}] {} — {}",
                                job.id,
                                job.kind,
                                job.status.word(),
                                job.label
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                })
            }
            JobTool::Output => {
                let args: OutputArgs = serde_json::from_str(&call.arguments).map_err(invalid)?;
                let job = self.registry.owned(session, &args.job_id)?;
                if args.wait {
                    let asked = args
                        .timeout_ms
                        .filter(|ms| ms.is_finite() && *ms >= 0.0)
                        .map(|ms| Duration::from_millis(ms as u64))
                        .unwrap_or(self.waits.default);
                    let waiting = self.registry.wait(&job, asked.min(self.waits.max));
                    if let Either::Right(()) = first_of(waiting, cancel.cancelled()).await {
                        return Err(JobsError::WaitCancelled);
                    }
                }
                let read = self.registry.read(&job);
                let body = match read.text.is_empty() {
                    true => "(no new output)",
                    false => read.text.as_str(),
                };
                let separator = if body.ends_with('\n') { "" } else { "\n" };
                Ok(format!("{body}{separator}{}", read.status_line))
            }
            JobTool::Kill => {
                let args: KillArgs = serde_json::from_str(&call.arguments).map_err(invalid)?;
                let job = self.registry.owned(session, &args.job_id)?;
                let reason = args.reason.unwrap_or_else(|| "job_kill".to_owned());
                Ok(killed_text(&job.id, self.registry.kill(&job, &reason)))
            }
        }
    }
}

/// What `job_kill` answers.
pub(crate) fn killed_text(id: &str, killed: Killed) -> String {
    match killed {
        Killed::Requested => format!("requested cancellation of job {id}"),
        Killed::AlreadyFinished(status) => format!("job {id} had already finished {status}"),
    }
}

impl Tool for JobToolImpl {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&declaration(self.kind))
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let this = self.clone();
        async move {
            let reply = match this.answer(&call, cancel).await {
                Ok(text) => ToolReply::text(text),
                Err(error) => ToolReply::error(error.to_string()),
            };
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}
