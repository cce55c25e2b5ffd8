//! The row's tool: `subagent_codex` (or whatever the row names it) with the reference's
//! one-shot parameters. In the foreground (the default) the call waits and answers the
//! child's final answer, or an error with the run's diagnostic and partial answer; with
//! `run_in_background: true` the run becomes a final-output job of the `jobs` registry
//! (`subagent-N`) and the call answers at once.

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_jobs_seam::{JOBS_SERVICE, JobControl, JobControl_TO, JobsService};
use dsh_plugin_api::cancel::{CancelBox, CancelFlag, first_of};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{
    Concurrency, ContentBlock, DelegateArgs, JobEnd, JobOutputMode, JobStart, JobStatus,
    OutcomeSummary, SandboxMode, ToolDecl, ToolReply,
};
use dsh_sandbox_seam::{SANDBOX_SERVICE, SandboxService};
use dsh_tools_seam::{CallView, Tool};
use serde_json::json;

use crate::outcome::{Outcome, Stop};
use crate::run::{Runner, Task};

const DESCRIPTION: &str = "Delegate a self-contained task to a subagent (a separate agent that works in its own context) to offload focused, independent work — research, a scoped implementation, an analysis — so it does not consume this conversation's context. The subagent returns its result, not its intermediate steps. Give it a complete, standalone prompt: it does not see this conversation. This call waits for the result by default. Set `run_in_background: true` to return a job id; collect with `job_output` and stop with `job_kill`.";

/// What the pipeline's own limit adds to a run's `timeoutMs` beside the row's kill grace: the
/// run stops itself first (and says `timeout`), then has this long, plus the grace, to
/// interrupt the product and end its process group.
const STOP_ALLOWANCE_MS: u64 = 10_000;

pub(crate) fn declaration(name: &str, timeout_ms: u64, grace_ms: u64) -> ToolDecl {
    let mut decl = ToolDecl::new(
        name,
        DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the delegated task, for display."},
                "prompt": {"type": "string", "description": "The complete, self-contained task for the subagent. It does not share this conversation's context, so include everything it needs."},
                "run_in_background": {"type": "boolean", "description": "Whether to run as a background job and return its id. Defaults to false; collect with job_output or stop with job_kill."}
            },
            "required": ["description", "prompt"]
        }),
    );
    // Children never touch the parent's session: several run at once.
    decl.concurrency = Concurrency::Parallel;
    decl.timeout_ms = Some(
        timeout_ms
            .saturating_add(grace_ms)
            .saturating_add(STOP_ALLOWANCE_MS),
    );
    decl
}

pub(crate) struct ProductTool(pub(crate) Arc<Runner>);

/// `job_kill` reaches the run through its stop flag.
struct Stopper(Arc<CancelFlag>);

impl JobControl for Stopper {
    fn cancel(&self, _reason: RString) {
        self.0.fire();
    }
}

impl ProductTool {
    fn parent_mode(&self, call: &CallView) -> SandboxMode {
        // Without a sandbox row nothing tells the parent's mode: the child gets the default.
        match self.0.ctx.get::<SandboxService>(SANDBOX_SERVICE) {
            Ok(Some(sandbox)) => {
                let policy =
                    sandbox.policy(call.session.clone(), call.cwd.clone(), call.call_id.clone());
                policy
                    .decode()
                    .map(|policy| policy.mode)
                    .unwrap_or(SandboxMode::ReadOnly)
            }
            _ => SandboxMode::WorkspaceWrite,
        }
    }

    async fn answer(&self, call: CallView, cancel: CancelBox) -> ToolReply {
        let args: DelegateArgs = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(error) => return ToolReply::error(format!("arguments are not valid: {error}")),
        };
        if args.prompt.trim().is_empty() {
            return ToolReply::error(
                "`prompt` is empty: give the subagent its whole task".to_owned(),
            );
        }
        let task = Task {
            cwd: call.cwd.to_string(),
            prompt: args.prompt,
        };
        let mode = self.parent_mode(&call);
        let runner = self.0.clone();
        if args.run_in_background == Some(true) {
            return self.background(&call, args.description, task, mode);
        }
        let stop = CancelFlag::new();
        // Never finishes: it only passes the call's cancel on to the run, which then stops
        // the product and ends its process before it answers.
        let relay = async {
            cancel.cancelled().await;
            stop.fire();
            std::future::pending::<std::convert::Infallible>().await
        };
        let outcome = match first_of(runner.run(&task, mode, &stop), relay).await {
            dsh_plugin_api::cancel::Either::Left(outcome) => outcome,
            dsh_plugin_api::cancel::Either::Right(never) => match never {},
        };
        match outcome.stop {
            Stop::Completed => ToolReply::text(outcome.output),
            _ => ToolReply::error(outcome.error_text(runner.product_name())),
        }
    }

    fn background(
        &self,
        call: &CallView,
        label: String,
        task: Task,
        mode: SandboxMode,
    ) -> ToolReply {
        let runner = self.0.clone();
        let Ok(Some(jobs)) = runner.ctx.get::<JobsService>(JOBS_SERVICE) else {
            return ToolReply::error(
                "run_in_background needs the background job registry (a `jobs` row), and none is loaded; call it without run_in_background".to_owned(),
            );
        };
        let stop = CancelFlag::new();
        let start = JobStart {
            session: call.session.to_string(),
            kind: "subagent".to_owned(),
            label,
            output: JobOutputMode::Final,
        };
        let control = JobControl_TO::from_value(Stopper(stop.clone()), TD_Opaque);
        let id = match jobs.start(Json::encode(&start), control).into_result() {
            Ok(id) => id.into_string(),
            Err(error) => {
                return ToolReply::error(format!("the background job did not start: {error}"));
            }
        };
        let settler = Settler {
            jobs: jobs.clone(),
            id: id.clone(),
            settled: false,
        };
        let spawned = runner.ctx.clone().spawn(async move {
            let mut settler = settler;
            let outcome = runner.run(&task, mode, &stop).await;
            settler.settle(job_end(&outcome, runner.product_name()));
        });
        match spawned {
            Ok(()) => ToolReply::text(format!("started background subagent job {id}")),
            Err(error) => {
                let why = format!("the background job did not start: {error}");
                let end = JobEnd::new(JobStatus::Failed, Some(why.clone()));
                jobs.settle(RString::from(id), Json::encode(&end));
                ToolReply::error(why)
            }
        }
    }
}

/// Settles a background run's job whatever happens to its task: when the row unloads, the
/// task is dropped mid-run (its process goes with it) and the job ends `killed`, quietly,
/// instead of staying `running` for ever (a headless run would wait on it).
struct Settler {
    jobs: dsh_plugin_api::Service<JobsService>,
    id: String,
    settled: bool,
}

impl Settler {
    fn settle(&mut self, end: JobEnd) {
        self.settled = true;
        self.jobs
            .settle(RString::from(self.id.as_str()), Json::encode(&end));
    }
}

impl Drop for Settler {
    fn drop(&mut self) {
        if !self.settled {
            let end = JobEnd::new(
                JobStatus::Killed,
                Some("its subagent-product row unloaded".to_owned()),
            )
            .quietly();
            self.settle(end);
        }
    }
}

/// A one-shot run as a job's end: completed with its answer, killed when it was stopped,
/// failed (with the stop reason and diagnostic, not the partial answer) otherwise.
fn job_end(outcome: &Outcome, product: &str) -> JobEnd {
    match outcome.stop {
        Stop::Completed => {
            JobEnd::new(JobStatus::Completed, None).with_output(outcome.output.clone())
        }
        Stop::Aborted => JobEnd::new(JobStatus::Killed, None),
        Stop::Error | Stop::MaxTokens => {
            JobEnd::new(JobStatus::Failed, Some(outcome.job_detail(product)))
        }
    }
}

impl Tool for ProductTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&declaration(
            self.0.config.tool_name(),
            self.0.config.timeout_ms,
            self.0.config.dispose_grace_ms,
        ))
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = ProductTool(self.0.clone());
        async move { Json::encode(&tool.answer(call, cancel).await) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}
