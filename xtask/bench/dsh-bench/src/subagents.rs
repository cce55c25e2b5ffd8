//! What delegation costs: a headless task whose first answer asks for one, then ten,
//! waited-for `subagent` calls in one step, every child answering at once (`bench-model`'s
//! `delegate` mode). The figure is the time from the calls to the results: each child's
//! session, agent, descriptor, turn and model call, and the parent's step around them. Ten
//! children run at once, so their wall time against one child's says how well they overlap;
//! the host's peak RSS with ten children against one gives the memory of a child (its
//! session and agent live until the parent's answer, which is held while the figure is read).

use std::path::Path;

use crate::process::{Host, scratch};
use crate::{median, report};

/// Headless runs per child count, measured after [`WARM_UP`] that are not: the first start in
/// a home checks the layouts of every event and service pair it meets and keeps what passed
/// there (a person's later runs), and a child's pairs are met first inside the figure.
const RUNS: usize = 5;

/// Untimed runs first: one does not meet every pair (thread timing changes which come up), the
/// second meets the few left (under `strace`, the second run still recorded 42 new pairs of
/// the ten-children task, the third 4, later ones none).
const WARM_UP: usize = 2;

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("subagents")?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let (one_wall, one_peak) = delegation(&dir, &work, 1)?;
    let (ten_wall, ten_peak) = delegation(&dir, &work, 10)?;
    report("subagents_one_child_wall", one_wall, "us");
    report("subagents_ten_children_wall", ten_wall, "us");
    report("subagents_ten_over_one", ten_wall / one_wall, "x");
    report(
        "subagents_rss_per_child",
        (ten_peak - one_peak) / 9.0,
        "KiB",
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The median delegation wall time (µs) and peak RSS (KiB) of [`RUNS`] tasks delegating to
/// `children` children at once.
fn delegation(dir: &Path, work: &Path, children: usize) -> anyhow::Result<(f64, f64)> {
    let patch = dir.join("subagents.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: 0\n        delegate: {children}\n        holdMs: 300\n"
        ),
    )?;
    let (mut walls, mut peaks) = (Vec::new(), Vec::new());
    for run in 0..WARM_UP + RUNS {
        let host = Host::instant_turn(dir, &patch, work)?;
        let wall = host.figure("delegation_wall_us")?.1;
        let peak = host.status_kib("VmHWM")?;
        host.stop();
        if run >= WARM_UP {
            walls.push(wall);
            peaks.push(peak);
        }
    }
    Ok((median(walls), median(peaks)))
}
