//! The terminal UI section of `cargo xtask bench` (issue 23), and `cargo xtask bench tui`,
//! which builds in release, runs that section alone and puts it into BENCHMARKS.md in place of
//! the one there. `dsh-bench tui` drives our `dsh` in tmux (see its `tui.rs`) and, where the
//! Codex CLI is installed (`cargo xtask test` puts it into `tests/products`) and the agents-bench
//! fake model is beside the project, Codex's TUI the same way; each of [`RUNS`] runs prints
//! `name value unit` lines, and the section is their medians, ours beside Codex's with the ratio.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

const RUNS: usize = 3;

pub(super) const HEADING: &str = "## Terminal UI in tmux (issue 23)";

/// Our figure, Codex's (where it measures the same thing) and what it is.
const FIGURES: &[(&str, Option<&str>, &str)] = &[
    (
        "tui_start_to_composer",
        Some("codex_tui_start_to_composer"),
        "started in a tmux pane to a ready composer (ours: with its own `dsh-host --profile sdk` child, the session subscribed), median of 5 (ms; target under 100)",
    ),
    (
        "tui_keystroke_echo_p50",
        Some("codex_tui_keystroke_echo_p50"),
        "a key sent with `tmux send-keys` to the character on the screen, p50 of 40 (ms, including a capture-pane poll of a few ms)",
    ),
    (
        "tui_keystroke_echo_p95",
        Some("codex_tui_keystroke_echo_p95"),
        "the same, p95 (ms; target under 16)",
    ),
    (
        "tui_stream_words_per_s",
        None,
        "the rate an answer of 10,000 words (a token each) in 2,500 deltas, one every 2 ms, was streamed and painted at, from Enter to the turn's end on the screen (words/s; asked for: 2,000)",
    ),
    (
        "tui_stream_cpu",
        None,
        "CPU of the `dsh` process while it painted that answer (% of one core)",
    ),
    (
        "tui_stream_words_missing",
        None,
        "words of that answer not in the pane's scrollback once the turn ended (words; must be 0)",
    ),
    (
        "tui_rss_peak",
        Some("codex_tui_rss_peak"),
        "peak RSS of the TUI process after its turn (ours: that answer; Codex: one tool step and its answer) (MiB; target under 25)",
    ),
    (
        "tui_and_host_rss_peak",
        None,
        "peak RSS of `dsh` plus its `dsh-host --profile sdk` child (MiB)",
    ),
    (
        "tui_reopen_10k_events",
        None,
        "`dsh --resume` of a 10,000-event session to its last answer drawn with a ready composer, median of 3 (ms; target under 200)",
    ),
];

/// `cargo xtask bench tui`: the release build, then the section, printed and put into
/// BENCHMARKS.md.
pub(super) fn alone(root: &Path) -> Result<()> {
    super::alone_section(root, "run the terminal UIs", HEADING, section)
}

/// The markdown section: the table, or why there is none.
pub(super) fn section(root: &Path) -> String {
    match measure(root) {
        Ok((figures, codex_note)) => render(&figures, codex_note.as_deref()),
        Err(error) => format!("\n{HEADING}\n\nNot measured in this run: {error:#}.\n"),
    }
}

type Figures = BTreeMap<String, f64>;

/// The medians of [`RUNS`] runs, and why Codex was not measured where it was not.
fn measure(root: &Path) -> Result<(Figures, Option<String>)> {
    let codex = codex_binary(root);
    let server = root.join("../shared/peers/agents-bench/fake_server.py");
    let codex_note = match (&codex, server.is_file()) {
        (Some(_), true) => None,
        (None, _) => Some(
            "the Codex CLI is not installed in `tests/products` (`cargo xtask test` installs it)"
                .to_owned(),
        ),
        (_, false) => Some(
            "the fake model (`../shared/peers/agents-bench/fake_server.py`) is not beside the project"
                .to_owned(),
        ),
    };
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let mut command = Command::new(root.join("target/release/dsh-bench"));
        command.arg("tui").stderr(Stdio::inherit());
        if let (Some(codex), None) = (&codex, &codex_note) {
            command
                .env("DSH_BENCH_CODEX", codex)
                .env("DSH_BENCH_FAKE_SERVER", &server);
        }
        let output = command
            .output()
            .context("cannot run target/release/dsh-bench")?;
        if !output.status.success() {
            bail!("`dsh-bench tui` failed ({})", output.status);
        }
        runs.push(super::parse_lines(&String::from_utf8_lossy(&output.stdout)));
    }
    let mut medians = Figures::new();
    for name in runs
        .iter()
        .flat_map(|run| run.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let values: Vec<f64> = runs
            .iter()
            .filter_map(|run| run.get(name).copied())
            .collect();
        medians.insert(name.clone(), super::median(values));
    }
    if medians.is_empty() {
        bail!("`dsh-bench tui` printed no figures (is tmux installed?)");
    }
    Ok((medians, codex_note))
}

/// The native Codex binary the npm package `@openai/codex` carries (run directly: the npm
/// launcher is a Node script that would add Node's start and memory to Codex's figures).
fn codex_binary(root: &Path) -> Option<PathBuf> {
    let vendor = root.join("tests/products/node_modules/@openai/codex-linux-x64/vendor");
    std::fs::read_dir(&vendor)
        .ok()?
        .flatten()
        .find_map(|triple| {
            let binary = triple.path().join("bin/codex");
            binary.is_file().then_some(binary)
        })
}

fn render(figures: &Figures, codex_note: Option<&str>) -> String {
    let mut text = format!(
        "\n{HEADING}\n\nMedians of {RUNS} runs of `dsh-bench tui`: the release `dsh` in a 100 x 30 tmux pane against the instant bench model, and Codex's TUI (its native binary) in the same pane against the agents-bench fake model, driven the same way (`send-keys` in, `capture-pane` polled out).\n\n| figure | dsh (ours) | codex | ratio (codex / ours) |\n|---|---:|---:|---:|\n"
    );
    for (ours, codex, what) in FIGURES {
        let Some(value) = figures.get(*ours) else {
            continue;
        };
        let (peer, ratio) = match codex.and_then(|name| figures.get(name)) {
            Some(peer) => (format!("{peer:.1}"), format!("{:.1}x", peer / value)),
            None if codex.is_none() => ("(not comparable)".to_owned(), "-".to_owned()),
            None => ("(not measured)".to_owned(), "-".to_owned()),
        };
        let _ = writeln!(text, "| {what} | {value:.1} | {peer} | {ratio} |");
    }
    if let Some(note) = codex_note {
        let _ = writeln!(text, "\nCodex was not measured in this run: {note}.");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_replaces_its_old_self_and_nothing_else() {
        let old = format!("# B\n\n## A\n\na\n\n{HEADING}\n\nold\n\n## C\n\nc\n");
        let new = format!("\n{HEADING}\n\nnew\n");
        let spliced = super::super::splice(&old, HEADING, &new);
        assert_eq!(
            spliced,
            format!("# B\n\n## A\n\na\n\n{HEADING}\n\nnew\n\n## C\n\nc\n")
        );
        let appended = super::super::splice("# B\n\n## A\n\na\n", HEADING, &new);
        assert_eq!(appended, format!("# B\n\n## A\n\na\n\n{HEADING}\n\nnew\n"));
    }

    #[test]
    fn codex_is_beside_ours_with_the_ratio_and_a_missing_codex_is_said() {
        let figures: Figures = [
            ("tui_start_to_composer".to_owned(), 50.0),
            ("codex_tui_start_to_composer".to_owned(), 300.0),
            ("tui_stream_cpu".to_owned(), 4.0),
        ]
        .into_iter()
        .collect();
        let text = render(&figures, None);
        assert!(text.contains("| 50.0 | 300.0 | 6.0x |"), "{text}");
        assert!(text.contains("| 4.0 | (not comparable) | - |"), "{text}");
        assert!(!text.contains("tui_keystroke"), "{text}");
        let without = render(&figures, Some("no codex here"));
        assert!(without.contains("Codex was not measured in this run: no codex here."));
    }
}
