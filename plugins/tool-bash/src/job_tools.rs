//! The tools over background jobs: `job_list`, `job_output` and `job_kill`, each seeing only
//! the jobs of the calling session.

use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{ContentBlock, OutcomeSummary, ToolDecl, ToolReply};
use dsh_tools_seam::{CallView, Tool};
use serde_json::json;

use crate::jobs::Jobs;

#[derive(Clone, Copy)]
pub(crate) enum JobTool {
    List,
    Output,
    Kill,
}

pub(crate) struct JobToolImpl {
    pub(crate) kind: JobTool,
    pub(crate) jobs: Arc<Jobs>,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct JobRef {
    job_id: String,
}

fn declaration(kind: JobTool) -> ToolDecl {
    let job = json!({
        "type": "object",
        "properties": {"job_id": {"type": "string", "description": "The job's id (job-N), as bash answered when it started it."}},
        "required": ["job_id"],
        "additionalProperties": false
    });
    match kind {
        JobTool::List => ToolDecl::new(
            "job_list",
            "List this session's background jobs (started with bash run_in_background) and whether each still runs.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        JobTool::Output => ToolDecl::new(
            "job_output",
            "Show a background job's state and the output it has printed so far (the last 64 KB).",
            job,
        ),
        JobTool::Kill => ToolDecl::new(
            "job_kill",
            "Stop a running background job and everything it started.",
            job,
        ),
    }
}

impl Tool for JobToolImpl {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&declaration(self.kind))
    }

    fn execute(&self, call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let (kind, jobs) = (self.kind, self.jobs.clone());
        async move {
            let session = call.session.as_str();
            let answer = match kind {
                JobTool::List => Ok(jobs.list(session)),
                JobTool::Output | JobTool::Kill => {
                    match serde_json::from_str::<JobRef>(&call.arguments) {
                        Err(error) => Err(format!("arguments are not valid: {error}")),
                        Ok(job) if matches!(kind, JobTool::Output) => {
                            jobs.output(session, &job.job_id)
                        }
                        Ok(job) => jobs.kill(session, &job.job_id).await,
                    }
                }
            };
            let reply = match answer {
                Ok(text) => ToolReply::text(text),
                Err(message) => ToolReply::error(message),
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
