//! `bash` with `run_in_background`: the command, started and confined like any other, becomes
//! a stream job of the `jobs` registry (id `bash-N`). Its output is appended as it arrives;
//! its exit settles it (`completed` on 0, `failed` otherwise, `exit code: N` either way); a
//! `job_kill` terminates its whole process group and it settles as `killed`. Unloading the
//! row kills every job it still runs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RSome, RString};
use dsh_jobs_seam::{JobControl, JobControl_TO, JobsService};
use dsh_plugin_api::io::subprocess::ProcessBox;
use dsh_plugin_api::{Context, Json, Service, lock};
use dsh_protocol::{JobEnd, JobOutputMode, JobStart, JobStatus};

/// How long a killed job's group gets between SIGTERM and SIGKILL.
const KILL_GRACE_MS: u64 = 2_000;

/// The jobs this row runs, so unloading it can stop them.
#[derive(Default)]
pub(crate) struct Running {
    jobs: Mutex<BTreeMap<String, Entry>>,
}

/// A running job: the registry it settles in, and its process (dropped with the entry, which
/// ends the process group once its reader is gone too).
struct Entry {
    registry: Service<JobsService>,
    _process: Arc<ProcessBox>,
}

struct Control {
    ctx: Context,
    process: Arc<ProcessBox>,
    killed: Arc<AtomicBool>,
}

impl JobControl for Control {
    fn cancel(&self, _reason: RString) {
        self.killed.store(true, Ordering::Release);
        let process = self.process.clone();
        let _ = self.ctx.spawn(async move {
            let _ = process.terminate(KILL_GRACE_MS).await;
        });
    }
}

/// Starts `process` as a job of `session` and follows it to its end; answers the job id.
pub(crate) fn start(
    ctx: &Context,
    jobs: Service<JobsService>,
    running: &Arc<Running>,
    session: &str,
    command: &str,
    process: ProcessBox,
) -> Result<String, String> {
    let process = Arc::new(process);
    let killed = Arc::new(AtomicBool::new(false));
    let control = Control {
        ctx: ctx.clone(),
        process: process.clone(),
        killed: killed.clone(),
    };
    let start = JobStart {
        session: session.to_owned(),
        kind: "bash".to_owned(),
        label: command.to_owned(),
        output: JobOutputMode::Stream,
    };
    let id = jobs
        .start(
            Json::encode(&start),
            JobControl_TO::from_value(control, TD_Opaque),
        )
        .into_result()
        .map_err(RString::into_string)?
        .into_string();
    let entry = Entry {
        registry: jobs.clone(),
        _process: process.clone(),
    };
    lock(&running.jobs).insert(id.clone(), entry);
    let (running, job) = (running.clone(), id.clone());
    let _ = ctx.spawn(async move {
        while let RSome(chunk) = process.next_output().await {
            let text = String::from_utf8_lossy(&chunk.bytes);
            jobs.append(RString::from(job.as_str()), RString::from(text.as_ref()));
        }
        let status = process.wait().await.into_result();
        let end = match (killed.load(Ordering::Acquire), status) {
            (true, _) => JobEnd {
                status: JobStatus::Killed,
                detail: None,
                output: None,
            },
            (false, Ok(status)) => match (status.code.into_option(), status.signal.into_option()) {
                (Some(code), _) => JobEnd {
                    status: match code {
                        0 => JobStatus::Completed,
                        _ => JobStatus::Failed,
                    },
                    detail: Some(format!("exit code: {code}")),
                    output: None,
                },
                (None, signal) => JobEnd {
                    status: JobStatus::Killed,
                    detail: signal.map(|signal| format!("signal {signal}")),
                    output: None,
                },
            },
            (false, Err(error)) => JobEnd {
                status: JobStatus::Failed,
                detail: Some(error.to_string()),
                output: None,
            },
        };
        lock(&running.jobs).remove(&job);
        jobs.settle(RString::from(job.as_str()), Json::encode(&end));
    });
    Ok(id)
}

/// Kills every job still running (the row is going away): each settles as killed, and
/// dropping the processes terminates their groups.
pub(crate) fn kill_all(running: &Running) {
    let jobs = std::mem::take(&mut *lock(&running.jobs));
    for (id, entry) in jobs {
        let end = JobEnd {
            status: JobStatus::Killed,
            detail: Some("the tool-bash row unloaded".to_owned()),
            output: None,
        };
        entry.registry.settle(RString::from(id), Json::encode(&end));
    }
}
