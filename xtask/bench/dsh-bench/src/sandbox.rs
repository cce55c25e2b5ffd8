//! What confinement costs a user: a 20-step headless task whose every step runs `bash true`
//! through the real sandbox, in each mode. The gap between consecutive model requests is one
//! whole step (the harness, the pipeline, spawning the command, waiting for it); the
//! difference between a confined mode and `danger-full-access` is the cost of confining one
//! command (entering the session's enclave, or bubblewrap's user namespace and mounts where
//! there is none; `dsh-sandbox-exec`'s limits and seccomp filter). The same task with a `read` or a `write` of 4 KiB at every step gives what the file
//! tools' race-free reads and writes cost a step; `fs` measures the two operations alone,
//! against the path-based ones they replaced, in the same run.

use std::path::Path;

use crate::process::{Host, scratch};
use crate::{median, report};

const STEPS: usize = 20;
/// Headless runs per mode; the medians of their step gaps are taken.
const RUNS: usize = 3;

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("sandbox")?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let mut figures = Vec::new();
    for mode in ["danger-full-access", "workspace-write", "read-only"] {
        let gap = step_gap(&dir, &work, mode)?;
        report(
            &format!("sandbox_step_{}", mode.replace('-', "_")),
            gap,
            "us",
        );
        figures.push(gap);
    }
    // The same confined step with bubblewrap started for every command (no enclave).
    let every_command = gap_in(
        &dir,
        &work,
        "shell: \"true\"",
        "workspace-write",
        "    enclaves: false\n",
        "",
    )?;
    report(
        "sandbox_step_workspace_write_no_enclave",
        every_command,
        "us",
    );
    report(
        "sandbox_confinement_per_command",
        figures[1] - figures[0],
        "us",
    );
    std::fs::write(work.join("bench-read.txt"), "x".repeat(4096))?;
    let content = "y".repeat(4096);
    for (name, tool, arguments) in [
        (
            "sandbox_step_read",
            "read",
            serde_json::json!({"file_path": "bench-read.txt"}).to_string(),
        ),
        (
            "sandbox_step_write",
            "write",
            serde_json::json!({"file_path": "bench-{n}.txt", "content": content}).to_string(),
        ),
    ] {
        report(name, tool_step_gap(&dir, &work, tool, &arguments)?, "us");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The median step gap (steps 3 to 20) of [`RUNS`] headless tasks in `mode`.
fn step_gap(dir: &Path, work: &Path, mode: &str) -> anyhow::Result<f64> {
    gap_of(dir, work, "shell: \"true\"", mode)
}

/// The same for a task whose every step calls `tool` with `arguments`, in workspace-write.
fn tool_step_gap(dir: &Path, work: &Path, tool: &str, arguments: &str) -> anyhow::Result<f64> {
    let call = format!(
        "tool: {tool}\n        arguments: {}",
        serde_json::to_string(arguments)?
    );
    gap_of(dir, work, &call, "workspace-write")
}

/// The median step gap (steps 3 to 20) of [`RUNS`] headless tasks whose model's config holds
/// `call` (its step's call), in `mode`.
fn gap_of(dir: &Path, work: &Path, call: &str, mode: &str) -> anyhow::Result<f64> {
    gap_with_rows(dir, work, call, mode, "")
}

/// [`gap_of`] with patch rows of its own (`rows`, YAML list items) after the bench's.
pub(crate) fn gap_with_rows(
    dir: &Path,
    work: &Path,
    call: &str,
    mode: &str,
    rows: &str,
) -> anyhow::Result<f64> {
    gap_in(dir, work, call, mode, "", rows)
}

/// [`gap_with_rows`] with more config lines of the sandbox row (`sandbox`, YAML indented
/// four spaces).
fn gap_in(
    dir: &Path,
    work: &Path,
    call: &str,
    mode: &str,
    sandbox: &str,
    rows: &str,
) -> anyhow::Result<f64> {
    let wanted: Vec<String> = (3..=STEPS).map(|n| n.to_string()).collect();
    let patch = dir.join("sandbox.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: {STEPS}\n        {call}\n        report: [{}]\n- id: sandbox\n  config:\n    mode: {mode}\n{sandbox}- id: agent-loop\n  config:\n    maxSteps: {}\n{rows}",
            wanted.join(", "),
            STEPS + 5
        ),
    )?;
    let mut medians = Vec::new();
    for _ in 0..RUNS {
        let host = Host::instant_turn(dir, &patch, work)?;
        let mut gaps = Vec::new();
        for _ in 0..wanted.len() {
            gaps.push(host.figure("step_gap_us")?.1);
        }
        host.stop();
        medians.push(median(gaps));
    }
    Ok(median(medians))
}
