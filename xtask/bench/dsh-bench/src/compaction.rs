//! A long session with compaction on: a 10,000-step headless turn of the instant model whose
//! context window is set small (20,000 tokens), so compaction holds the history. Around
//! requests 10, 1,000 and 10,000 it reports the step's overhead and the bytes of history the
//! request carries, beside the same turn with compaction off, where the history only grows.

use std::path::Path;

use crate::process::{Host, scratch};
use crate::{median, report};

const STEPS: usize = 10_000;
const AROUND: [usize; 3] = [10, 1_000, 10_000];
const WINDOW: u64 = 20_000;

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("compaction")?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let on = turn(&dir, &work, true)?;
    let off = turn(&dir, &work, false)?;
    for (index, at) in AROUND.iter().enumerate() {
        report(&format!("compaction_step_at_{at}"), on[index].0, "us");
        report(
            &format!("compaction_request_bytes_at_{at}"),
            on[index].1,
            "bytes",
        );
        report(
            &format!("uncompacted_request_bytes_at_{at}"),
            off[index].1,
            "bytes",
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The median gap and request bytes around each of [`AROUND`], compaction on or off.
fn turn(dir: &Path, work: &Path, compaction: bool) -> anyhow::Result<Vec<(f64, f64)>> {
    // Gaps just before each point, the history size at it (reading it slows the next step).
    let wanted: Vec<usize> = AROUND
        .iter()
        .flat_map(|at| at.saturating_sub(5)..*at)
        .collect();
    let listed: Vec<String> = wanted.iter().map(ToString::to_string).collect();
    let sized: Vec<String> = AROUND.iter().map(ToString::to_string).collect();
    let row = match compaction {
        true => format!("- id: compaction\n  config:\n    contextWindow: {WINDOW}\n"),
        false => "- id: compaction\n  disabled: true\n".to_owned(),
    };
    let patch = dir.join("compaction.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: {STEPS}\n        report: [{}]\n        reportBytes: [{}]\n- id: session-persistence-jsonl\n  config:\n    root: !home sessions\n    compression: none\n- id: session-checkpoints\n  disabled: true\n- id: agent-loop\n  config:\n    maxSteps: {}\n{row}",
            listed.join(", "),
            sized.join(", "),
            STEPS + 100
        ),
    )?;
    let host = Host::instant_turn(dir, &patch, work)?;
    let mut figures = Vec::new();
    for at in AROUND {
        let which = |what: &str| {
            let state = if compaction { "on" } else { "off" };
            format!("compaction {state}: {what} around request {at}")
        };
        let mut gaps = Vec::new();
        for _ in at.saturating_sub(5)..at {
            let (_, gap) = host
                .figure("step_gap_us")
                .map_err(|error| anyhow::anyhow!("{}: {error}", which("a step gap")))?;
            gaps.push(gap);
        }
        let (_, bytes) = host
            .figure("request_bytes")
            .map_err(|error| anyhow::anyhow!("{}: {error}", which("the request size")))?;
        figures.push((median(gaps), bytes));
    }
    host.stop();
    Ok(figures)
}
