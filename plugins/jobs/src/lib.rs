//! Plugin `jobs`: the background job registry. It provides the `jobs` service, where a
//! producer (`bash` with `run_in_background`, a product subagent run in the background) starts
//! its work as a job owned by the calling session, and registers the tools the model reaches
//! them with: `job_output` (what is new, or a final result, then `[status: ...]`; `wait: true`
//! blocks up to a cap), `job_list` and `job_kill` (asks the producer to stop; it settles as
//! killed once the work has stopped). When a job the model has neither read to its end nor
//! killed settles, its session is told: into the running turn's next step, or as a turn of
//! its own when the agent is idle (at most `maxConsecutiveWakes` such turns until a person
//! writes again; later notices are held back and enter the turn the person opens). A session
//! that goes away takes its jobs; unloading the row asks every running job to stop.

mod error;
mod registry;
mod tools;

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::{AGENT_DISPOSED, AGENT_PROMPT_SUBMIT, AgentNotice};
use dsh_jobs_seam::{JOBS_SERVICE, JobControlBox, Jobs, Jobs_TO};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{ErrorKind, SeamError};
use dsh_protocol::{JobEnd, JobStart, JobStatus, JobSummary, MessageSource, PromptDecision};
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService, tool_box};

use crate::error::JobsError;
use crate::registry::Registry;
use crate::tools::{JobTool, JobToolImpl, Waits};

/// Config of `jobs`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct JobsConfig {
    /// How long `job_output` with `wait: true` waits when the call names no `timeout_ms`.
    pub wait_timeout_ms: u64,
    /// The longest wait a call may ask for.
    pub max_wait_timeout_ms: u64,
    /// Turns a job's end may open on an idle agent before a person writes to it again;
    /// beyond that its notices wait for the next turn.
    pub max_consecutive_wakes: u32,
    /// Jobs a session keeps: beyond it, the oldest that ended and were reported are forgotten
    /// (running ones never are).
    pub max_kept_per_session: usize,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            wait_timeout_ms: 30_000,
            max_wait_timeout_ms: 600_000,
            max_consecutive_wakes: 3,
            max_kept_per_session: 100,
        }
    }
}

struct Service(Arc<Registry>);

impl Jobs for Service {
    fn start(&self, start: Json<JobStart>, control: JobControlBox) -> RResult<RString, SeamError> {
        let started = start
            .decode()
            .map_err(JobsError::Unreadable)
            .and_then(|start| self.0.start(start, control));
        started.map(RString::from).map_err(SeamError::from).into()
    }

    fn append(&self, id: RString, output: RString) {
        self.0.append(&id, &output);
    }

    fn settle(&self, id: RString, end: Json<JobEnd>) {
        let end = end.decode().unwrap_or_else(|error| {
            // A producer built against another vocabulary: the job still ends, and says why.
            JobEnd::new(
                JobStatus::Failed,
                Some(format!("its producer's end did not read: {error}")),
            )
        });
        self.0.settle(&id, end);
    }

    fn list(&self, session: RString) -> Json<Vec<JobSummary>> {
        Json::encode(&self.0.list(&session))
    }

    fn kill(&self, session: RString, id: RString, reason: RString) -> RResult<RString, SeamError> {
        let killed = self
            .0
            .owned(&session, &id)
            .map(|job| crate::tools::killed_text(&job.id, self.0.kill(&job, &reason)));
        killed.map(RString::from).map_err(SeamError::from).into()
    }

    fn release_deferred(&self, session: RString) -> u32 {
        u32::try_from(self.0.release_deferred(&session)).unwrap_or(u32::MAX)
    }

    fn pending_results(&self, session: RString) -> u32 {
        u32::try_from(self.0.pending_results(&session)).unwrap_or(u32::MAX)
    }

    fn results_settled(&self, session: RString) -> FfiFuture<()> {
        let registry = self.0.clone();
        async move { registry.results_settled(&session).await }.into_ffi()
    }

    fn cancel_session(&self, session: RString, reason: RString) {
        self.0.cancel_session(&session, &reason);
    }
}

pub struct JobsPlugin;

impl Plugin for JobsPlugin {
    const NAME: &'static str = "jobs";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[dsh_agents_seam::AGENTS_SERVICE];
    const PROVIDES: &'static [&'static str] = &[JOBS_SERVICE];
    type Config = JobsConfig;

    async fn apply(ctx: Context, config: JobsConfig) -> Result<(), PluginError> {
        if config.wait_timeout_ms > config.max_wait_timeout_ms {
            return Err(PluginError::new(
                ErrorKind::Config,
                format!(
                    "`waitTimeoutMs` ({}) is above `maxWaitTimeoutMs` ({})",
                    config.wait_timeout_ms, config.max_wait_timeout_ms
                ),
            ));
        }
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let registry = Arc::new(Registry::new(
            ctx.clone(),
            config.max_consecutive_wakes,
            config.max_kept_per_session,
        ));
        let reset = registry.clone();
        // A person's message resets the wake budget; the notices held back enter its turn.
        ctx.on_waterfall(&AGENT_PROMPT_SUBMIT, move |next| {
            let registry = reset.clone();
            async move {
                let held = match next.payload().decode() {
                    Ok(submit)
                        if submit.messages.iter().any(|message| {
                            matches!(message.source, MessageSource::User { .. })
                        }) =>
                    {
                        registry.person_wrote(&submit.session)
                    }
                    _ => Vec::new(),
                };
                let decision = next.run().await?;
                if held.is_empty() {
                    return Ok(decision);
                }
                Ok(match decision.decode() {
                    Ok(PromptDecision::Accept { contexts }) => {
                        let contexts = held.into_iter().chain(contexts).collect();
                        Json::encode(&PromptDecision::Accept { contexts })
                    }
                    _ => decision,
                })
            }
        })?;
        let gone = registry.clone();
        ctx.on_emit(&AGENT_DISPOSED, move |notice: &AgentNotice| {
            gone.forget_session(&notice.agent);
        })?;
        ctx.provide(
            JOBS_SERVICE,
            Jobs_TO::from_value(Service(registry.clone()), TD_Opaque),
        )?;
        let waits = Waits {
            default: Duration::from_millis(config.wait_timeout_ms),
            max: Duration::from_millis(config.max_wait_timeout_ms),
        };
        let mut registrations = Vec::new();
        for kind in [JobTool::Output, JobTool::List, JobTool::Kill] {
            let tool = JobToolImpl {
                kind,
                registry: registry.clone(),
                waits,
            };
            let tool = tool_box(tool);
            let registration = tools
                .register(RString::from(ctx.row_id()), RString::new(), tool)
                .into_result()
                .map_err(|error| PluginError::plugin(error.to_string()))?;
            registrations.push(registration);
        }
        ctx.on_dispose(move || {
            registry.cancel_all("the jobs row unloaded");
            drop(registrations);
        })
    }
}

dsh_plugin_api::export_plugins!(JobsPlugin);
