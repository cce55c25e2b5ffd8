//! Harness overhead per step: a real `dsh-host --profile headless` turn against the instant
//! model of `bench-model` (answers at once with a no-op tool call), the session on a tmpfs when
//! there is one, so the figure is the harness itself: logging, derive, prompt assembly, the
//! model-visible check, the request crossing the llm seam and the tool pipeline. The gap between
//! consecutive model requests is one step; it is taken early in the turn and after 10,000 steps,
//! once without the `session-checkpoints` row (the harness alone) and once with it (as shipped:
//! two flushes per tool step, each a hop to the blocking pool, a write and an fsync).

use std::path::{Path, PathBuf};

use crate::process::{Host, scratch};
use crate::{median, report};

const STEPS: usize = 10_000;

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = match PathBuf::from("/dev/shm").is_dir() {
        true => {
            let dir =
                PathBuf::from("/dev/shm").join(format!("dsh-bench-agent-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            dir
        }
        false => scratch("agent")?,
    };
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    // Without the durability checkpoints: the harness itself (the target).
    let (early, late) = step_gaps(&dir, &work, false)?;
    report("agent_step_overhead_at_step_10", early, "us");
    report("agent_step_overhead_at_step_10000", late, "us");
    // With them, as the headless bundle ships: the difference is their cost.
    let (early_flushed, late_flushed) = step_gaps(&dir, &work, true)?;
    report(
        "agent_step_with_checkpoints_at_step_10",
        early_flushed,
        "us",
    );
    report(
        "agent_step_with_checkpoints_at_step_10000",
        late_flushed,
        "us",
    );
    report("agent_step_checkpoints_cost", early_flushed - early, "us");
    concurrent(&dir)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The JSONL store's rows for a step figure: plain logs under the home.
pub(crate) const JSONL_STORE: &str =
    "- id: session-persistence-jsonl\n  config:\n    root: !home sessions\n    compression: none\n";

/// Median step gap around step 10 and around step 10,000 of three headless turns, with or
/// without the `session-checkpoints` row.
fn step_gaps(dir: &Path, work: &Path, checkpoints: bool) -> anyhow::Result<(f64, f64)> {
    step_gaps_on(dir, work, STEPS, JSONL_STORE, checkpoints)
}

/// The patch of a headless turn of the instant model: `steps` tool steps, the gaps before the
/// requests numbered in `report` printed, the session stored by `store_rows` (patch entries),
/// with or without the `session-checkpoints` row.
pub(crate) fn turn_patch(
    steps: usize,
    report: &[usize],
    store_rows: &str,
    checkpoints: bool,
) -> String {
    let report: Vec<String> = report.iter().map(ToString::to_string).collect();
    let without = match checkpoints {
        true => "",
        false => "- id: session-checkpoints\n  disabled: true\n",
    };
    format!(
        "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: {steps}\n        report: [{}]\n{store_rows}- id: agent-loop\n  config:\n    maxSteps: {}\n{without}",
        report.join(", "),
        steps + 10
    )
}

/// Median step gap around step 10 and around the last of `steps` steps of three headless
/// turns, the session stored by `store_rows` (patch entries), with or without the
/// `session-checkpoints` row.
pub(crate) fn step_gaps_on(
    dir: &Path,
    work: &Path,
    steps: usize,
    store_rows: &str,
    checkpoints: bool,
) -> anyhow::Result<(f64, f64)> {
    let early: Vec<usize> = (11..=20).collect();
    let late: Vec<usize> = (steps - 9..=steps).collect();
    let wanted: Vec<usize> = early.iter().chain(&late).copied().collect();
    let patch = dir.join("bench.patch.yml");
    std::fs::write(&patch, turn_patch(steps, &wanted, store_rows, checkpoints))?;
    let (mut at_early, mut at_late) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let host = Host::instant_turn(dir, &patch, work)?;
        let mut gaps = Vec::new();
        for _ in 0..wanted.len() {
            gaps.push(host.figure("step_gap_us")?);
        }
        host.stop();
        let around = |steps: &[usize]| {
            median(
                gaps.iter()
                    .filter(|(n, _)| steps.contains(n))
                    .map(|(_, v)| *v)
                    .collect(),
            )
        };
        at_early.push(around(&early));
        at_late.push(around(&late));
    }
    Ok((median(at_early), median(at_late)))
}

/// 100 sessions of 20 steps each, all at once in one host: steps per second and peak RSS.
fn concurrent(dir: &std::path::Path) -> anyhow::Result<()> {
    let patch = dir.join("concurrent.patch.yml");
    std::fs::write(
        &patch,
        "- insert:\n    - id: bench-model\n      name: bench-model\n      inject: [agent_loop, sessions]\n      config:\n        steps: 20\n        concurrent: 100\n- id: session-persistence-jsonl\n  config:\n    root: !home sessions\n    compression: none\n- id: headless\n  disabled: true\n",
    )?;
    let (mut rates, mut peaks) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(dir.join("sessions"));
        let host = Host::start(
            dir,
            &[
                "--patch",
                &patch.display().to_string(),
                "--profile",
                "headless",
                "--no-watch",
            ],
        )?;
        let rate = host.line_after("bench concurrent_steps_per_s ")?;
        host.line_after("bench concurrent_done")?;
        peaks.push(host.status_kib("VmHWM")? / 1024.0);
        host.stop();
        rates.push(rate.trim().parse::<f64>()?);
    }
    report("agent_100_sessions_steps_per_s", median(rates), "steps/s");
    report("agent_100_sessions_peak_rss", median(peaks), "MiB");
    Ok(())
}
