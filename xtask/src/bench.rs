//! `cargo xtask bench [runtime]`: builds in release, runs our `dsh-bench` and the Cordis peer
//! script (`../shared/peers/cordis-bench`) three times each, one after the other (never at once:
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
mod postgres;
mod presets;
mod tui;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::cargo;
use figures::{FIGURES, HUNDREDFOLD};

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
    let mut text = render(&ours, peer.as_ref(), &baseline);
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

/// One run of the `dsh-bench` built under `root` (ours or the baseline's worktree).
fn run_dsh_bench(root: &Path, fixtures: &Path) -> Result<Figures> {
    let output = Command::new(root.join("target/release/dsh-bench"))
        .env("DSH_FIXTURES", fixtures)
        .output()
        .with_context(|| format!("cannot run {}/target/release/dsh-bench", root.display()))?;
    if !output.status.success() {
        bail!(
            "dsh-bench failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut figures = parse_lines(&String::from_utf8_lossy(&output.stdout));
    let serialize = Command::new(root.join("target/release/examples/serialize_bench"))
        .output()
        .context("cannot run target/release/examples/serialize_bench")?;
    if !serialize.status.success() {
        bail!(
            "serialize_bench failed: {}",
            String::from_utf8_lossy(&serialize.stderr)
        );
    }
    figures.extend(parse_lines(&String::from_utf8_lossy(&serialize.stdout)));
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
        let output = Command::new("node")
            .arg("bench.mjs")
            .current_dir(&dir)
            .output()
            .context("cannot run node")?;
        if !output.status.success() {
            bail!(
                "the peer script failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(parse_lines(&String::from_utf8_lossy(&output.stdout)))
    })
}

/// `now` against `before` in percent, signed.
fn change(before: f64, now: f64) -> String {
    if before == 0.0 {
        return "-".to_owned();
    }
    format!("{:+.1}%", (now - before) / before * 100.0)
}

/// ns figures of the peer are in its units already; the ratio is peer / ours (higher: we are faster).
fn render(ours: &Figures, peer: Option<&Figures>, baseline: &Baseline) -> String {
    let mut text = format!(
        "# Benchmarks\n\nWritten by `cargo xtask bench`: medians of {RUNS} runs each of our `dsh-bench` (release build) and of the Cordis 3.18 peer script (`../shared/peers/cordis-bench`, Node), run one after the other in the same invocation on this machine (2 cores, shared and noisy: compare ratios, not absolute times).\n",
    );
    let measured = match &baseline.measured {
        Some(measured) => format!(" ({measured})"),
        None => String::new(),
    };
    let source = match baseline.in_run {
        true => format!("the baseline{measured}"),
        false => format!("the committed baseline `{BASELINE}`{measured}"),
    };
    let _ = write!(
        text,
        "\n`before` is our figure from {source}, `now` is ours from this run, and `change` is now against before in percent (for times and sizes lower is better, for rates such as events/s and steps/s higher is). Both are medians on this noisy machine, so a change of a few percent is noise. A figure the baseline lacks shows - for before and change. The baseline is the commit named in the first line of `{BASELINE}`; `cargo xtask bench` builds and runs it beside ours and rewrites that file with what it measured (the file stands in only where the commit cannot be built). To move the baseline, name another commit there.\n",
    );
    let mut section = "";
    let mut missed = Vec::new();
    for figure in FIGURES {
        let Some(value) = ours.get(figure.ours) else {
            continue;
        };
        if figure.section != section {
            section = figure.section;
            let _ = write!(
                text,
                "\n## {section}\n\n| figure | before | now | change | Cordis | ratio (Cordis / now) |\n|---|---:|---:|---:|---:|---:|\n"
            );
        }
        let peer_value = figure
            .peer
            .and_then(|name| peer.and_then(|peer| peer.get(name)));
        let (peer_text, ratio) = match peer_value {
            Some(peer_value) => {
                let ratio = peer_value / value;
                if HUNDREDFOLD.contains(&figure.ours) && ratio < 100.0 {
                    missed.push(format!("{} ({ratio:.1}x)", figure.ours));
                }
                (format!("{peer_value:.3}"), format!("{ratio:.1}x"))
            }
            None if figure.peer.is_none() => ("(ours only: no peer)".to_owned(), "-".to_owned()),
            None => ("(peer did not run)".to_owned(), "-".to_owned()),
        };
        let (before, change) = match baseline.figures.get(figure.ours) {
            Some(before) => (format!("{before:.3}"), change(*before, *value)),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let _ = writeln!(
            text,
            "| {} | {before} | {value:.3} | {change} | {peer_text} | {ratio} |",
            figure.what
        );
    }
    text.push_str(
        "\nTargets from the issue: emit, waterfall, serial, parallel, mount/dispose and reactive reload at least 100x faster than Cordis; start to 100 rows active under 60 ms and under 25 MiB; reload under 150 ms after the debounce.\n",
    );
    if peer.is_some() {
        let _ = writeln!(
            text,
            "\nBelow the 100x target in this run: {}.",
            if missed.is_empty() {
                "none".to_owned()
            } else {
                missed.join(", ")
            }
        );
    }
    text.push_str(
        "\nHow ours is measured: dispatches go from the host's channel to listeners living in `libbench_plugin.so`, so every listener call crosses the library boundary (a waterfall level crosses it to start the listener, to ask for its `next`, to poll and to drop its future, and to release its reference); mount/dispose use 50 isolate groups, each a provider (`libbench_plugin.so`) and a consumer (`libbench_consumer.so`); startup spawns `dsh-host --config` on 100 rows and waits for every consumer to print; reload replaces `libbench_consumer.so` in a `--plugin-dir` 20 times and waits for the new version's line; RSS figures come from `/proc/<pid>/status` (VmHWM, VmRSS).\n",
    );
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(pairs: &[(&str, f64)]) -> Figures {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), *value))
            .collect()
    }

    #[test]
    fn the_figures_below_their_hundredfold_target_are_named() {
        let ours = figures(&[
            ("serial_10_async_listeners", 400.0),
            ("waterfall_10_async_listeners", 700.0),
        ]);
        let peer = figures(&[
            ("serial_10_async_listeners", 48_000.0),
            ("next_chain_10_async_listeners", 49_000.0),
        ]);
        let text = render(&ours, Some(&peer), &Baseline::default());
        assert!(text.contains("| 120.0x |"), "{text}");
        assert!(
            text.contains(
                "Below the 100x target in this run: waterfall_10_async_listeners (70.0x)."
            ),
            "{text}"
        );
        let met = render(
            &figures(&[("serial_10_async_listeners", 400.0)]),
            Some(&peer),
            &Baseline::default(),
        );
        assert!(
            met.contains("Below the 100x target in this run: none."),
            "{met}"
        );
        let alone = render(&ours, None, &Baseline::default());
        assert!(!alone.contains("Below the 100x target"), "{alone}");
    }

    #[test]
    fn every_figure_shows_its_baseline_beside_this_run() {
        let baseline = Baseline::parse(
            "# measured at commit abc1234 on 2026-01-02\n# name<TAB>value\nemit_1_listeners\t20.0\nmount_100_plugins\t0.5\nsession_fixture_bytes\t0\n",
        );
        assert_eq!(
            baseline.measured.as_deref(),
            Some("measured at commit abc1234 on 2026-01-02")
        );
        let ours = figures(&[
            ("emit_1_listeners", 25.0),
            ("mount_100_plugins", 0.4),
            ("emit_10_listeners", 30.0),
            ("session_fixture_bytes", 10.0),
        ]);
        let peer = figures(&[
            ("emit_1_listeners", 20_000.0),
            ("emit_10_listeners", 45_000.0),
        ]);
        let text = render(&ours, Some(&peer), &baseline);
        assert!(
            text.contains("| before | now | change | Cordis | ratio (Cordis / now) |"),
            "{text}"
        );
        assert!(
            text.contains("`xtask/bench-baseline.tsv` (measured at commit abc1234 on 2026-01-02)"),
            "{text}"
        );
        assert!(
            text.contains(
                "| emit to 1 listener in a plugin library (ns/emit) | 20.000 | 25.000 | +25.0% | 20000.000 | 800.0x |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| 0.500 | 0.400 | -20.0% | (peer did not run) | - |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| emit to 10 listeners (ns/emit) | - | 30.000 | - | 45000.000 | 1500.0x |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| bytes of the recorded fixture logs | 0.000 | 10.000 | - | (ours only: no peer) | - |"),
            "{text}"
        );
        assert!(!text.contains("appends to the in-memory log"), "{text}");
    }
}
