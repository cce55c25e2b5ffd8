//! The session-store section of `cargo xtask bench` (issue 26), and `cargo xtask bench
//! postgres`, which builds in release, runs that section alone and puts it into BENCHMARKS.md
//! in place of the one there: `dsh-bench postgres` [`RUNS`] times (it starts a throwaway
//! PostgreSQL cluster each time), medians of its figures, PostgreSQL beside JSONL.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::shown;

const RUNS: usize = 3;

pub(super) const HEADING: &str = "## Sessions on PostgreSQL against JSONL (issue 26)";

/// Figures measured on both stores: the JSONL name, the PostgreSQL name, what they are.
const PAIRS: &[(&str, &str, &str)] = &[
    (
        "jsonl_append_batch_1",
        "pg_append_batch_1",
        "appends, batches of 1, each durable before the next (events/s)",
    ),
    (
        "jsonl_append_batch_1000",
        "pg_append_batch_1000",
        "appends, batches of 1,000 (events/s)",
    ),
    (
        "jsonl_load_100k",
        "pg_load_100k",
        "load of a 100,000-event session: read, parsed into the log, history derived (ms)",
    ),
    (
        "jsonl_step_with_checkpoints_at_step_10",
        "pg_step_with_checkpoints_at_step_10",
        "a step's overhead with the checkpoints (two durable flushes a step: pre-step and tool body), at step 10 of a headless turn of the instant model (µs)",
    ),
    (
        "jsonl_step_with_checkpoints_at_step_1000",
        "pg_step_with_checkpoints_at_step_1000",
        "the same at step 1,000 (µs)",
    ),
];

/// PostgreSQL-only figures and what they are.
const SINGLES: &[(&str, &str)] = &[
    (
        "pg_two_hosts_steps_per_s",
        "1,000 sessions of the instant model (5 steps each), 500 in each of two hosts on one database: steps per second",
    ),
    (
        "pg_two_hosts_p99_commit_to_row",
        "the same run: p99 from an event's commit in the log to its row committed (ms; the batch window is 50 ms)",
    ),
    (
        "pg_two_hosts_sessions_stored",
        "the same run: sessions stored",
    ),
    (
        "pg_two_hosts_turns_ended",
        "the same run: turns ended in the database",
    ),
    (
        "pg_two_hosts_sessions_with_gaps_or_doubles",
        "the same run: sessions with an event lost or doubled",
    ),
    (
        "pg_lease_takeover_after_kill",
        "a holder killed (`kill -9`) mid-turn: until another host takes its session, leases of 2 s (ms)",
    ),
];

/// `cargo xtask bench postgres`: the release build, then the section, spliced into
/// BENCHMARKS.md.
pub(super) fn alone(root: &Path) -> Result<()> {
    super::alone_section(root, "run the session-store figures", HEADING, section)
}

/// The markdown section: the tables, or why there are none.
pub(super) fn section(root: &Path) -> String {
    match measure(root) {
        Ok(figures) => render(&figures),
        Err(error) => format!("\n{HEADING}\n\nNot measured in this run: {error:#}.\n"),
    }
}

fn measure(root: &Path) -> Result<BTreeMap<String, Vec<f64>>> {
    let mut figures: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for _ in 0..RUNS {
        let output = Command::new(root.join("target/release/dsh-bench"))
            .arg("postgres")
            .output()
            .context("cannot run target/release/dsh-bench")?;
        if !output.status.success() {
            bail!(
                "dsh-bench postgres failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        for (name, value) in super::parse_lines(&String::from_utf8_lossy(&output.stdout)) {
            figures.entry(name).or_default().push(value);
        }
    }
    Ok(figures)
}

fn render(figures: &BTreeMap<String, Vec<f64>>) -> String {
    let of = |name: &str| {
        figures
            .get(name)
            .map(|values| super::median(values.clone()))
    };
    let mut text = format!(
        "\n{HEADING}\n\n`dsh-bench postgres` (release build) run {RUNS} times, medians; each run starts a \
         throwaway PostgreSQL cluster with fsync on, in the temp dir beside the JSONL logs it is \
         compared with (the same disk), reached over a Unix socket.\n\n\
         | figure | JSONL | PostgreSQL | PostgreSQL / JSONL |\n|---|---:|---:|---:|\n"
    );
    for (jsonl, pg, what) in PAIRS {
        let (ours, theirs) = (of(jsonl), of(pg));
        let ratio = match (ours, theirs) {
            (Some(ours), Some(theirs)) if ours > 0.0 => format!("{:.2}", theirs / ours),
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            text,
            "| {what} | {} | {} | {ratio} |",
            shown(ours),
            shown(theirs)
        );
    }
    text.push_str("\n| figure (PostgreSQL) | value |\n|---|---:|\n");
    for (name, what) in SINGLES {
        let _ = writeln!(text, "| {what} | {} |", shown(of(name)));
    }
    text
}
