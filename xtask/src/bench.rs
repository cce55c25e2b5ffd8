//! `cargo xtask bench [runtime]`: builds in release, runs our `dsh-bench` and the Cordis peer
//! script (`../shared/peers/cordis-bench`) five times each, one after the other (never at once:
//! two cores), and writes BENCHMARKS.md with our median beside the baseline ("before": the
//! commit `xtask/bench-baseline.tsv` names, built and run in this invocation, its runs
//! interleaved with ours, see `baseline.rs`; this run: "now", and the change in percent), the
//! peer's median and the ratio; then the whole-agent table of `../shared/peers/agents-bench`
//! (ours against the peer agents installed here), the ACP agents side by side (`acp.rs`;
//! `cargo xtask bench acp` runs that section alone) and the terminal UIs, ours and Codex's
//! (`tui.rs`; `cargo xtask bench tui` runs that section alone and puts it into BENCHMARKS.md),
//! the agent presets' figures (`presets.rs`; `cargo xtask bench presets`, likewise) and the
//! PostgreSQL session store against JSONL (`postgres.rs`; `cargo xtask bench postgres`).

mod acp;
mod agents;
mod baseline;
mod figures;
mod pairs;
mod postgres;
mod presets;
mod table;
mod tui;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::cargo;

/// Runs of each side's `dsh-bench` (and of the Cordis script). Three let one slow stretch of
/// this shared machine move a median: figures whose code had not changed since the baseline
/// (a 4 KiB read, one fsync) read 24-30% apart between sides in a run of three each.
const RUNS: usize = 5;

/// The committed figures this run is compared with, relative to the workspace root.
const BASELINE: &str = "xtask/bench-baseline.tsv";

pub(crate) fn run(root: &Path, args: Vec<String>) -> Result<()> {
    match args.first().map(String::as_str) {
        None | Some("runtime") => {}
        Some("acp") => return acp::alone(root),
        Some("tui") => return tui::alone(root),
        Some("presets") => return presets::alone(root),
        Some("postgres") => return postgres::alone(root),
        Some(group) => {
            bail!("unknown benchmark group `{group}` (known: runtime, acp, tui, presets, postgres)")
        }
    }
    crate::timed("build release", || build_release(root))?;
    let committed = match std::fs::read_to_string(root.join(BASELINE)) {
        Ok(text) => Baseline::parse(&text),
        Err(error) => {
            eprintln!("xtask: no baseline ({BASELINE}: {error}): the before column shows -");
            Baseline::default()
        }
    };
    let fixtures = root.join("../shared/fixtures/dsh");
    let (ours, baseline) = baseline::measure(root, &fixtures, committed)?;
    let peer = crate::timed("run the Cordis peer", || peer_figures(root));
    let peer = match peer {
        Ok(figures) => Some(figures),
        Err(error) => {
            eprintln!("xtask: the Cordis peer could not run: {error:#}");
            None
        }
    };
    let mut text = table::render(&ours, peer.as_ref(), &baseline);
    text.push_str(&link_order_line(root));
    text.push_str(&crate::timed("run agents-bench", || {
        Ok(agents::section(root))
    })?);
    text.push_str(&crate::timed("run the ACP agents", || {
        Ok(acp::section(root))
    })?);
    text.push_str(&crate::timed("run the terminal UIs", || {
        Ok(tui::section(root))
    })?);
    text.push_str(&crate::timed("run the preset figures", || {
        Ok(presets::section(root))
    })?);
    text.push_str(&crate::timed("run the session-store figures", || {
        Ok(postgres::section(root))
    })?);
    std::fs::write(root.join("BENCHMARKS.md"), &text)?;
    println!("{text}");
    Ok(())
}

type Figures = BTreeMap<String, f64>;

/// What share of the link order's functions this build has (see `link_order::coverage`): a
/// stale list packs less, which shows in every resident-memory figure above.
fn link_order_line(root: &Path) -> String {
    match crate::link_order::coverage(root) {
        Ok(coverage) => format!("\nLink order: {coverage}.\n"),
        Err(error) => format!("\nLink order: not checked ({error:#}).\n"),
    }
}

/// What a `dsh-bench` run needs, built in release under `root` (ours, or the baseline's
/// worktree).
fn build_release(root: &Path) -> Result<()> {
    cargo(
        root,
        &["build", "--release", "--workspace", "--bins", "--lib"],
    )?;
    cargo(
        root,
        &[
            "build",
            "--release",
            "-p",
            "llm-deepseek",
            "--example",
            "serialize_bench",
        ],
    )
}

/// The baseline: `name<TAB>value` lines; `#` lines are comments, the first of which says
/// where (commit) and when the figures were measured.
#[derive(Debug, Default)]
struct Baseline {
    measured: Option<String>,
    figures: Figures,
    /// Measured in this invocation (else read from the committed file).
    in_run: bool,
    /// The change in each interleaved pair of runs (none for committed figures).
    pairs: pairs::Pairs,
}

impl Baseline {
    fn parse(text: &str) -> Self {
        let measured = text
            .lines()
            .find_map(|line| line.strip_prefix('#'))
            .map(|comment| comment.trim().to_owned());
        Self {
            measured,
            figures: parse_lines(text),
            in_run: false,
            pairs: pairs::Pairs::default(),
        }
    }
}

fn parse_lines(text: &str) -> Figures {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let value = words.next()?.parse::<f64>().ok()?;
            Some((name.to_owned(), value))
        })
        .collect()
}

/// A figure in a table cell: whole above 100, two decimals above 1, three below; `-` for none.
fn shown(value: Option<f64>) -> String {
    match value {
        Some(value) if value >= 100.0 => format!("{value:.0}"),
        Some(value) if value >= 1.0 => format!("{value:.2}"),
        Some(value) => format!("{value:.3}"),
        None => "-".to_owned(),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

fn median_of_runs(runs: usize, mut once: impl FnMut() -> Result<Figures>) -> Result<Figures> {
    let samples: Vec<Figures> = (0..runs).map(|_| once()).collect::<Result<_>>()?;
    Ok(medians(samples))
}

/// Each figure's median over `samples` (the figures of the first run name them).
fn medians(samples: Vec<Figures>) -> Figures {
    let Some(first) = samples.first() else {
        return Figures::new();
    };
    let mut out = Figures::new();
    for name in first.keys() {
        let values: Vec<f64> = samples
            .iter()
            .filter_map(|run| run.get(name).copied())
            .collect();
        out.insert(name.clone(), median(values));
    }
    out
}

/// What `command` printed, where it ran and succeeded; `what` names it in the error.
fn stdout_of(command: &mut Command, what: &str) -> Result<String> {
    let output = command
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !output.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The groups a whole run of the `dsh-bench` built under `side` takes, in its order
/// (`dsh-bench --groups`; one older than that flag runs no group for it and lists none).
fn dsh_bench_groups(side: &Path) -> Result<Vec<String>> {
    let listed = stdout_of(
        Command::new(side.join("target/release/dsh-bench")).arg("--groups"),
        "dsh-bench --groups",
    )?;
    Ok(listed.lines().map(str::to_owned).collect())
}

/// A figure map from `(name, value)` pairs, for the bench's unit tests.
#[cfg(test)]
fn figures(pairs: &[(&str, f64)]) -> Figures {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), *value))
        .collect()
}

/// One run of the `dsh-bench` built under `side` (ours or the baseline's worktree): each of
/// `groups` in a process of its own, so no group's figures carry what the groups before it
/// left behind (heap, threads, dirty pages), which differ between sides. Inside one whole run,
/// 100 sessions at once read 9.9% fewer steps/s on our side (4 of 5 pairs); alone, in turn,
/// the two sides were within 5% either way (3 rounds). A group the side's `dsh-bench` does not
/// have prints nothing there.
fn run_dsh_bench(side: &Path, fixtures: &Path, groups: &[String]) -> Result<Figures> {
    let mut figures = run_groups(side, fixtures, groups)?;
    let printed = stdout_of(
        &mut Command::new(side.join("target/release/examples/serialize_bench")),
        "serialize_bench",
    )?;
    figures.extend(parse_lines(&printed));
    Ok(figures)
}

/// Each of `groups` of the `dsh-bench` built under `side`, in a process of its own.
fn run_groups(side: &Path, fixtures: &Path, groups: &[String]) -> Result<Figures> {
    let mut figures = Figures::new();
    for group in groups {
        let printed = stdout_of(
            Command::new(side.join("target/release/dsh-bench"))
                .arg(group)
                .env("DSH_FIXTURES", fixtures),
            &format!("{}/target/release/dsh-bench {group}", side.display()),
        )?;
        figures.extend(parse_lines(&printed));
    }
    Ok(figures)
}

fn peer_figures(root: &Path) -> Result<Figures> {
    let source = root.join("../shared/peers/cordis-bench");
    let dir = root.join("target/cordis-bench");
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "bench.mjs"] {
        std::fs::copy(source.join(file), dir.join(file))
            .with_context(|| format!("copy {file} from {}", source.display()))?;
    }
    if !dir.join("node_modules/cordis").exists() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status()
            .context("cannot run npm (Node.js is needed for the peer)")?;
        if !status.success() {
            bail!("npm install of the Cordis peer failed");
        }
    }
    median_of_runs(RUNS, || {
        let printed = stdout_of(
            Command::new("node").arg("bench.mjs").current_dir(&dir),
            "the peer script (node bench.mjs)",
        )?;
        Ok(parse_lines(&printed))
    })
}

/// `text` with its section under `heading` replaced by `section` (appended where it has none).
pub(super) fn splice(text: &str, heading: &str, section: &str) -> String {
    let Some(start) = text.find(heading) else {
        return format!("{}\n{}", text.trim_end(), section);
    };
    let after = &text[start + heading.len()..];
    let end = after
        .find("\n## ")
        .map_or(text.len(), |at| start + heading.len() + at + 1);
    let gap = if end < text.len() { "\n" } else { "" };
    format!(
        "{}{}{gap}{}",
        &text[..start],
        section.trim_start(),
        &text[end..]
    )
}

/// One section alone (`cargo xtask bench tui`, `presets`): the release build it needs, then the
/// section, printed and put into BENCHMARKS.md in place of the one under `heading`.
pub(super) fn alone_section(
    root: &Path,
    label: &str,
    heading: &str,
    section: fn(&Path) -> String,
) -> Result<()> {
    crate::timed("build release", || {
        cargo(
            root,
            &["build", "--release", "--workspace", "--bins", "--lib"],
        )
    })?;
    let text = crate::timed(label, || Ok(section(root)))?;
    let file = root.join("BENCHMARKS.md");
    let old = std::fs::read_to_string(&file).unwrap_or_default();
    std::fs::write(&file, splice(&old, heading, &text))?;
    println!("{text}");
    Ok(())
}
