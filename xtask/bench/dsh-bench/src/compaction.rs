//! A long session with compaction on: a 10,000-step headless turn of the instant model whose
//! context window is set small (20,000 tokens), so compaction holds the history. Around
//! requests 10, 1,000 and 10,000 it reports the step's overhead and the bytes of history the
//! requests carry, beside the same turn with compaction off, where the history only grows.
//!
//! The bytes are the mean over every 20th request of the 1,000 up to the point (request 10
//! alone for the first): with compaction on, the history rises and is cut back in a sawtooth,
//! and one request's size falls anywhere on it, so a change of a few bytes a message moved that
//! one figure by a third while the mean moved by the change. `cargo xtask bench` runs this
//! group against the baseline commit's host too (`DSH_BENCH_HOST`), so both are measured alike.

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
            &format!("compaction_request_bytes_to_{at}"),
            on[index].1,
            "bytes",
        );
        report(
            &format!("uncompacted_request_bytes_to_{at}"),
            off[index].1,
            "bytes",
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Requests between two whose history size is read, in a point's window.
const STRIDE: usize = 20;
/// Requests up to a point whose sizes are averaged.
const SPAN: usize = 1_000;

/// The requests of `at`'s window whose history size is read before its gaps: every
/// [`STRIDE`]th of the [`SPAN`] before it that comes before the gaps (`at` itself is read
/// after them).
fn sized_before(at: usize) -> Vec<usize> {
    let first = at.saturating_sub(SPAN) + STRIDE;
    (first..at.saturating_sub(5)).step_by(STRIDE).collect()
}

/// The median gap and the mean request bytes around each of [`AROUND`], compaction on or off.
fn turn(dir: &Path, work: &Path, compaction: bool) -> anyhow::Result<Vec<(f64, f64)>> {
    // Gaps just before each point, the history sizes over its window (reading one slows the
    // next step, so none is read among the gaps).
    let wanted: Vec<usize> = AROUND
        .iter()
        .flat_map(|at| at.saturating_sub(5)..*at)
        .collect();
    let listed: Vec<String> = wanted.iter().map(ToString::to_string).collect();
    let sized: Vec<String> = AROUND
        .iter()
        .flat_map(|at| sized_before(*at).into_iter().chain([*at]))
        .map(|at| at.to_string())
        .collect();
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
        let size = || {
            host.figure("request_bytes")
                .map(|(_, bytes)| bytes)
                .map_err(|error| anyhow::anyhow!("{}: {error}", which("a request size")))
        };
        let mut sizes = Vec::new();
        for _ in sized_before(at) {
            sizes.push(size()?);
        }
        let mut gaps = Vec::new();
        for _ in at.saturating_sub(5)..at {
            let (_, gap) = host
                .figure("step_gap_us")
                .map_err(|error| anyhow::anyhow!("{}: {error}", which("a step gap")))?;
            gaps.push(gap);
        }
        sizes.push(size()?);
        let mean = sizes.iter().sum::<f64>() / sizes.len() as f64;
        figures.push((median(gaps), mean));
    }
    host.stop();
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_read_before_its_gaps_and_ends_at_its_point() {
        assert!(sized_before(10).is_empty());
        let before = sized_before(1_000);
        assert_eq!(before.first(), Some(&20));
        assert_eq!(before.last(), Some(&980));
        assert_eq!(before.len() + 1, 50);
        let late = sized_before(10_000);
        assert_eq!((late[0], late.len() + 1), (9_020, 50));
    }
}
