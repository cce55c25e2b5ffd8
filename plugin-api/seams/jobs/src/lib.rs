//! `dsh-jobs-seam`: background jobs across the plugin ABI. A producer (`bash` with
//! `run_in_background`, a product subagent run in the background) starts its work as a job of
//! the `jobs` registry, feeds it output and settles it; the registry owns the ids, what each
//! session may see, the reads, the waits, the cancellation and the notice its agent gets when
//! a job ends. The producer keeps the work; the registry only asks it to stop, through the
//! [`JobControl`] it was given.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RResult, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{EmitEvent, Json, SeamError};
use dsh_protocol::{JobEnd, JobStart, JobSummary};

/// Service key of the job registry.
pub const JOBS_SERVICE: &str = "jobs";

/// `jobs/changed`: the jobs of the session named changed (one started, was asked to stop,
/// ended, or went with its session). A page showing them lists them again.
pub const JOBS_CHANGED: EmitEvent<RString> = EmitEvent::new("jobs/changed");

/// How the registry asks a producer to stop a job.
#[sabi_trait]
pub trait JobControl: Send + Sync {
    /// Stop the work (`reason` is the model's, or why the registry goes away). The producer
    /// settles the job as `killed` once the work has actually stopped.
    fn cancel(&self, reason: RString);
}
pub type JobControlBox = JobControl_TO<'static, RBox<()>>;

/// The `jobs` service.
#[sabi_trait]
pub trait Jobs: Send + Sync {
    /// Registers a running job and answers its id (`<kind>-<n>`).
    fn start(&self, start: Json<JobStart>, control: JobControlBox) -> RResult<RString, SeamError>;
    /// Adds output a stream job printed.
    fn append(&self, id: RString, output: RString);
    /// The job ended (first settlement wins): waiters wake and, unless the model already
    /// collected or killed it, the owning agent is told.
    fn settle(&self, id: RString, end: Json<JobEnd>);
    /// How many final-output jobs (delegated results the agent is waiting to be told of) of
    /// `session` still run or are still being told, plus the notices held back for it (its
    /// wakes were spent). Stream jobs (a server a command left running) are not counted.
    fn pending_results(&self, session: RString) -> u32;
    /// Opens a turn of `session` with the notices held back for it; answers how many. For a
    /// runner that stands in for the person (headless) once nothing else is left to wait for.
    fn release_deferred(&self, session: RString) -> u32;
    /// Resolves once no final-output job of `session` runs and each one's notice has reached
    /// its agent or was held back: a runner that ends when the work is done waits for this,
    /// then releases what was held back.
    fn results_settled(&self, session: RString) -> FfiFuture<()>;
    /// Asks every running job of `session` to stop (the run is being ended).
    fn cancel_session(&self, session: RString, reason: RString);
    /// The jobs of `session`, oldest first.
    fn list(&self, session: RString) -> Json<Vec<JobSummary>>;
    /// Asks job `id` of `session` to stop, as `job_kill` does (a person's stop button); answers
    /// what happened, as `job_kill` words it.
    fn kill(&self, session: RString, id: RString, reason: RString) -> RResult<RString, SeamError>;
}
pub type JobsService = Jobs_TO<'static, RBox<()>>;
