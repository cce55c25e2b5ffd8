//! `bash` with `run_in_background`: the command, started and confined like any other, becomes
//! a stream job of the `jobs` registry (id `bash-N`). Its output is appended as it arrives;
//! its exit settles it (`completed` on 0, `failed` otherwise, `exit code: N` either way); a
//! `job_kill` terminates its whole process group and it settles as `killed`. Unloading the
//! row kills every job it still runs (quietly: its sessions are not woken for it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RSome, RString};
use dsh_jobs_seam::{JobControl, JobControl_TO, JobsService};
use dsh_plugin_api::io::subprocess::ProcessBox;
use dsh_plugin_api::{Context, Json, SeamError, Service, lock};
use dsh_protocol::{JobEnd, JobOutputMode, JobStart, JobStatus};

/// How long a killed job's group gets between SIGTERM and SIGKILL.
const KILL_GRACE_MS: u64 = 2_000;

/// The jobs this row runs, so unloading it can stop them.
#[derive(Default)]
pub(crate) struct Running {
    jobs: Mutex<BTreeMap<String, Entry>>,
}

/// A running job: the registry it settles in, and its process. The entry and the job's
/// reader are the process's only owners, so when both are gone (the row unloaded) the process
/// is dropped, which ends its group.
struct Entry {
    registry: Service<JobsService>,
    _process: Arc<ProcessBox>,
}

struct Control {
    ctx: Context,
    /// Weak: the registry keeps a job's control past the job, and must not keep its process.
    process: Weak<ProcessBox>,
    killed: Arc<AtomicBool>,
}

impl JobControl for Control {
    fn cancel(&self, _reason: RString) {
        self.killed.store(true, Ordering::Release);
        let Some(process) = self.process.upgrade() else {
            return;
        };
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
) -> Result<String, SeamError> {
    let process = Arc::new(process);
    let killed = Arc::new(AtomicBool::new(false));
    let control = Control {
        ctx: ctx.clone(),
        process: Arc::downgrade(&process),
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
        .into_result()?
        .into_string();
    let entry = Entry {
        registry: jobs.clone(),
        _process: process.clone(),
    };
    lock(&running.jobs).insert(id.clone(), entry);
    let (running, job) = (running.clone(), id.clone());
    let _ = ctx.spawn(async move {
        let mut text = Utf8Carry::default();
        while let RSome(chunk) = process.next_output().await {
            let piece = text.push(&chunk.bytes);
            jobs.append(RString::from(job.as_str()), RString::from(piece));
        }
        let status = process.wait().await.into_result();
        let end = match (killed.load(Ordering::Acquire), status) {
            (true, _) => JobEnd::new(JobStatus::Killed, None),
            (false, Ok(status)) => match (status.code.into_option(), status.signal.into_option()) {
                (Some(0), _) => JobEnd::new(JobStatus::Completed, Some("exit code: 0".to_owned())),
                (Some(code), _) => {
                    JobEnd::new(JobStatus::Failed, Some(format!("exit code: {code}")))
                }
                // A signal nobody here sent (a crash, the OOM killer): the command failed.
                (None, signal) => JobEnd::new(
                    JobStatus::Failed,
                    signal.map(|signal| format!("signal {signal}")),
                ),
            },
            (false, Err(error)) => JobEnd::new(JobStatus::Failed, Some(error.to_string())),
        };
        lock(&running.jobs).remove(&job);
        jobs.settle(RString::from(job.as_str()), Json::encode(&end));
    });
    Ok(id)
}

/// Output bytes to text, a character cut between two chunks kept for the next one.
#[derive(Default)]
struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            // An incomplete character at the end waits; invalid bytes are replaced.
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        text
    }
}

/// Kills every job still running (the row is going away): each settles as killed, quietly,
/// and dropping the processes terminates their groups.
pub(crate) fn kill_all(running: &Running) {
    let jobs = std::mem::take(&mut *lock(&running.jobs));
    for (id, entry) in jobs {
        let end = JobEnd::new(
            JobStatus::Killed,
            Some("the tool-bash row unloaded".to_owned()),
        )
        .quietly();
        entry.registry.settle(RString::from(id), Json::encode(&end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_between_chunks_is_kept_whole() {
        let mut carry = Utf8Carry::default();
        let bytes = "né".as_bytes();
        assert_eq!(carry.push(&bytes[..2]), "n");
        assert_eq!(carry.push(&bytes[2..]), "é");
        assert_eq!(carry.push(b"\xff ok"), "\u{fffd} ok");
    }
}
