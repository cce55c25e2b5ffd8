//! The agent-preset section of `cargo xtask bench` (issue 25), and `cargo xtask bench presets`,
//! which builds in release, runs that section alone and puts it into BENCHMARKS.md in place of
//! the one there. The figures come from the integration tests that exercise each preset's tools
//! through the real host against the fake DeepSeek server, built in release and run [`RUNS`]
//! times, one test at a time; each prints `bench.figure NAME VALUE UNIT` lines (see
//! `dsh_tests::figure`), and the section is their medians: Code Mode against native calls, a
//! persistent shell against a fresh `bash -c`, the Code Mode engine, and the plugin-author loop.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::shown;

const RUNS: usize = 3;

pub(super) const HEADING: &str =
    "## Agent presets: Code Mode, the persistent shell, the plugin author (issue 25)";

/// The tests that print the figures.
const TESTS: &[&str] = &[
    "code_mode::ten_reads_in_one_program_against_ten_native_calls",
    "code_mode::a_program_offered_alone_calls_the_tools_through_the_pipeline",
    "pty_tools::measure_a_persistent_shell_call_against_a_fresh_bash",
    "plugin_author::a_model_writes_builds_installs_and_calls_a_tool_plugin_in_one_turn",
];

/// Pairs: the preset's way, the native way it replaces, and what was timed.
const PAIRS: &[(&str, &str, &str)] = &[
    (
        "ten_reads_code_wall",
        "ten_reads_native_wall",
        "ten files read: one `run_code` program (`Promise.all` of ten `tools.read`) against ten native `read` calls, one a step; headless run from start to exit (ms)",
    ),
    (
        "ten_reads_code_requests",
        "ten_reads_native_requests",
        "the same task: model requests",
    ),
    (
        "ten_reads_code_sent",
        "ten_reads_native_sent",
        "the same task: request bodies sent to the model, all requests (KiB)",
    ),
    (
        "persistent_bash_call",
        "fresh_bash_call",
        "`echo $((6 * 7))`: the minimal preset's persistent shell (after its first call) against tool-bash's fresh confined `bash -c`, tool call to tool result, median of 11 (ms)",
    ),
];

/// Single figures and what they are.
const SINGLES: &[(&str, &str)] = &[
    (
        "run_code_engine_start",
        "Code Mode: a fresh QuickJS engine per `run_code` call, start (ms)",
    ),
    (
        "run_code_engine_peak",
        "Code Mode: the engine's peak memory for a 15-call program (KiB)",
    ),
    (
        "persistent_bash_first_call",
        "persistent shell: its first call, which starts the shell on a terminal (ms)",
    ),
    (
        "plugin_author_scaffold",
        "plugin author: `plugin_new` scaffolds a tool plugin crate (s)",
    ),
    (
        "plugin_author_first_build",
        "plugin author: its first `plugin_build` (a compiler error comes back), shared target directory warm (s)",
    ),
    ("plugin_author_first_build_cargo", "of which cargo (s)"),
    (
        "plugin_author_build",
        "plugin author: the fixed crate built (s)",
    ),
    ("plugin_author_build_cargo", "of which cargo (s)"),
    (
        "plugin_author_install",
        "plugin author: `plugin_install` (the host's check, the copy, the mount to ACTIVE) (s)",
    ),
    (
        "plugin_author_first_call",
        "plugin author: the new tool's first call, the next step (s)",
    ),
];

/// `cargo xtask bench presets`: the release build, then the section, spliced into BENCHMARKS.md.
pub(super) fn alone(root: &Path) -> Result<()> {
    super::alone_section(root, "run the preset figures", HEADING, section)
}

/// The markdown section: the tables, or why there are none.
pub(super) fn section(root: &Path) -> String {
    match measure(root) {
        Ok(figures) => render(&figures),
        Err(error) => format!("\n{HEADING}\n\nNot measured in this run: {error:#}.\n"),
    }
}

/// Every figure's values over the runs.
fn measure(root: &Path) -> Result<BTreeMap<String, Vec<f64>>> {
    let mut figures: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for _ in 0..RUNS {
        let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let output = Command::new(&cargo_bin)
            .args([
                "test",
                "--release",
                "-q",
                "-p",
                "dsh-tests",
                "--test",
                "all",
                "--",
            ])
            .args(TESTS)
            .args(["--exact", "--nocapture", "--test-threads", "1"])
            .current_dir(root)
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("cannot run {cargo_bin}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            bail!(
                "the measuring tests failed ({}): {}",
                output.status,
                stdout
                    .lines()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
        for line in stdout.lines() {
            // The test harness's progress dots may share the line with a figure.
            let Some(at) = line.find("bench.figure ") else {
                continue;
            };
            let mut words = line[at..].split_whitespace().skip(1);
            let (Some(name), Some(value)) = (words.next(), words.next()) else {
                continue;
            };
            if let Ok(value) = value.parse::<f64>() {
                figures.entry(name.to_owned()).or_default().push(value);
            }
        }
    }
    Ok(figures)
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

fn render(figures: &BTreeMap<String, Vec<f64>>) -> String {
    let of = |name: &str| figures.get(name).and_then(|values| median(values));
    let mut text = format!(
        "\n{HEADING}\n\nThe tests that drive each preset's tools through the real host (release build) against \
         the fake DeepSeek server, run {RUNS} times one test at a time; medians. Ratio: the native way over \
         the preset's.\n\n| task | the preset's way | native | ratio (native / preset) |\n|---|---:|---:|---:|\n"
    );
    for (preset, native, what) in PAIRS {
        let (ours, theirs) = (of(preset), of(native));
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
    text.push_str("\n| figure | value |\n|---|---:|\n");
    for (name, what) in SINGLES {
        let _ = writeln!(text, "| {what} | {} |", shown(of(name)));
    }
    text
}
