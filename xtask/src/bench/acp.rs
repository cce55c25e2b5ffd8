//! The ACP section of `cargo xtask bench` (issue 22), and `cargo xtask bench acp`, which builds
//! in release and runs that section alone: it prints the section and leaves BENCHMARKS.md as
//! it is. Our `dsh-host --profile acp` is driven over ACP v1 beside the agents users would
//! pick instead, `@zed-industries/codex-acp` and `@zed-industries/claude-code-acp` (pinned in
//! `xtask/bench/acp/package.json`, installed by npm into `target/acp-bench`), all against the
//! instant fake model of `../shared/peers/agents-bench/fake_server.py`, run where it is. The
//! driver is `xtask/bench/acp/acp_bench.py` (Python 3, stdlib only; its docstring says what
//! each figure times); this module runs it, reads its `acp.AGENT.FIGURE VALUE UNIT` lines and
//! renders one table, a column per agent, the peers' ratios against ours, and whether our
//! step through ACP stays within 10% of our headless step. An agent that cannot be driven
//! here is named with the reason; without the fake model, Python or npm the section says so.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::figures::{ACP, ACP_FIGURES};
use crate::process::cargo;

/// Rounds; each runs every agent three times (an instant answer, 1 step, `STEPS` steps).
const ROUNDS: &str = "5";
/// The long task's steps (the figures' texts in `figures.rs` say 20 too).
const STEPS: &str = "20";
/// Our ACP step may cost at most this much more than our headless step.
const HEADLESS_MARGIN: f64 = 1.10;

/// The columns, in order: the driver's agent name and its heading.
const AGENTS: &[(&str, &str)] = &[
    ("ours", "dsh-host (ours)"),
    ("ours-headless", "dsh-host headless (not ACP)"),
    ("codex-acp", "codex-acp (npm launcher)"),
    ("codex-acp-native", "codex-acp (its native binary)"),
    ("claude-code-acp", "claude-code-acp"),
];

/// `cargo xtask bench acp`: the release build the section needs, then the section, printed.
pub(super) fn alone(root: &Path) -> Result<()> {
    crate::timed("build release", || {
        cargo(
            root,
            &["build", "--release", "--workspace", "--bins", "--lib"],
        )
    })?;
    let text = crate::timed("run the ACP agents", || Ok(section(root)))?;
    println!("{text}");
    Ok(())
}

/// The markdown section: the table, or why there is none.
pub(super) fn section(root: &Path) -> String {
    let server = root.join("../shared/peers/agents-bench/fake_server.py");
    if !server.is_file() {
        return not_measured(
            "the fake model (`../shared/peers/agents-bench/fake_server.py`) is not beside the project",
        );
    }
    let peers = root.join("target/acp-bench");
    let install = install_peers(root, &peers);
    // The driver counts our instructions per step under callgrind; without it, it says so.
    if let Err(error) = crate::apt::ensure("/usr/bin/valgrind", "valgrind") {
        eprintln!("xtask: valgrind could not be installed ({error}): instructions not counted");
    }
    // -B: no `__pycache__` of the driver's client module in the source tree.
    let output = Command::new("python3")
        .arg("-B")
        .arg(root.join("xtask/bench/acp/acp_bench.py"))
        .arg("--server")
        .arg(&server)
        .arg("--dsh-host")
        .arg(root.join("target/release/dsh-host"))
        .arg("--peers")
        .arg(&peers)
        .args(["--runs", ROUNDS, "--steps", STEPS])
        .arg("--out")
        .arg(peers.join("latest"))
        .stderr(Stdio::inherit())
        .output();
    match output {
        Ok(output) if output.status.success() => {
            let report = Report::parse(&String::from_utf8_lossy(&output.stdout));
            let install_error = install.err().map(|error| format!("{error:#}"));
            render(&report, install_error.as_deref())
        }
        Ok(output) => match Report::parse(&String::from_utf8_lossy(&output.stdout)).all_skipped {
            Some(why) => not_measured(&why),
            None => not_measured(&format!("the driver failed ({})", output.status)),
        },
        Err(error) => not_measured(&format!("python3 did not start: {error}")),
    }
}

fn not_measured(why: &str) -> String {
    format!("\n## {ACP}\n\nNot measured in this run: {why}.\n")
}

/// Installs the pinned peers with npm unless the same `package.json` is installed already.
/// An error says why they are missing (the driver then skips them, naming their executables).
fn install_peers(root: &Path, dir: &Path) -> Result<()> {
    let pinned = std::fs::read_to_string(root.join("xtask/bench/acp/package.json"))
        .context("xtask/bench/acp/package.json")?;
    let installed = std::fs::read_to_string(dir.join("package.json")).ok();
    if installed.as_deref() == Some(pinned.as_str()) && dir.join("node_modules/.bin").is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(dir.join("package.json"), &pinned))
        .with_context(|| dir.display().to_string())?;
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent"])
        .current_dir(dir)
        .status()
        .context("npm did not start (Node.js and npm are needed)")?;
    if !status.success() {
        // Installed or not, the next run must try again.
        let _ = std::fs::remove_file(dir.join("package.json"));
        bail!("`npm install` of the pinned peers failed ({status})");
    }
    Ok(())
}

/// What the driver printed.
#[derive(Debug, Default)]
struct Report {
    /// (agent, figure) to its median.
    figures: BTreeMap<(String, String), f64>,
    /// Agent to (successful rounds, rounds).
    runs: BTreeMap<String, (u32, u32)>,
    skipped: Vec<(String, String)>,
    versions: BTreeMap<String, String>,
    /// The whole bench could not run (`skip all REASON`).
    all_skipped: Option<String>,
}

impl Report {
    fn parse(text: &str) -> Self {
        let mut report = Self::default();
        for line in text.lines() {
            let Some((word, rest)) = line.split_once(' ') else {
                continue;
            };
            match word {
                "skip" => match rest.split_once(' ') {
                    Some(("all", why)) => report.all_skipped = Some(why.to_owned()),
                    Some((agent, why)) => report.skipped.push((agent.to_owned(), why.to_owned())),
                    None => {}
                },
                "version" => {
                    if let Some((agent, version)) = rest.split_once(' ') {
                        report.versions.insert(agent.to_owned(), version.to_owned());
                    }
                }
                "runs" => {
                    let numbers: Vec<&str> = rest.split_whitespace().collect();
                    if let [agent, ok, total] = numbers[..]
                        && let (Ok(ok), Ok(total)) = (ok.parse(), total.parse())
                    {
                        report.runs.insert(agent.to_owned(), (ok, total));
                    }
                }
                name => {
                    let value = rest.split_whitespace().next().map(str::parse::<f64>);
                    if let Some((agent, figure)) = name
                        .strip_prefix("acp.")
                        .and_then(|name| name.split_once('.'))
                        && let Some(Ok(value)) = value
                    {
                        report
                            .figures
                            .insert((agent.to_owned(), figure.to_owned()), value);
                    }
                }
            }
        }
        report
    }

    fn get(&self, agent: &str, figure: &str) -> Option<f64> {
        self.figures
            .get(&(agent.to_owned(), figure.to_owned()))
            .copied()
    }
}

/// A peer's cell: its median and its ratio against ours (> 1: the peer is slower or bigger).
fn cell(report: &Report, agent: &str, figure: &str) -> String {
    let Some(value) = report.get(agent, figure) else {
        return "-".to_owned();
    };
    let ours = report.get("ours", figure).filter(|ours| *ours > 0.0);
    match ours {
        Some(ours) if agent != "ours" && agent != "ours-headless" => {
            format!("{value:.1} ({:.1}x)", value / ours)
        }
        _ => format!("{value:.1}"),
    }
}

/// Our step through ACP against our headless step, in one sentence per way of timing it.
fn headless_check(report: &Report) -> String {
    let mut lines = String::new();
    for (figure, how, unit) in [
        ("step_ms", "per step, client side", "ms"),
        ("server_step_ms", "per step, seen by the model", "ms"),
        ("cpu_step_ms", "CPU per step", "ms"),
        (
            "instr_step",
            "instructions per step of the agent process, steps 20 to 100 under callgrind (the steadiest: no other load moves it)",
            "million",
        ),
    ] {
        let (Some(acp), Some(headless)) = (
            report.get("ours", figure),
            report.get("ours-headless", figure),
        ) else {
            let _ = writeln!(
                lines,
                "- {how}: not compared (a figure of ours is missing)."
            );
            continue;
        };
        let ratio = acp / headless;
        let verdict = match ratio <= HEADLESS_MARGIN {
            true => "within",
            false => "NOT within",
        };
        let _ = writeln!(
            lines,
            "- {how}: {acp:.2} {unit} through ACP against {headless:.2} {unit} headless, {ratio:.2}x: {verdict} the 10% target."
        );
    }
    lines
}

fn render(report: &Report, install_error: Option<&str>) -> String {
    let columns: Vec<&(&str, &str)> = AGENTS
        .iter()
        .filter(|(agent, _)| report.runs.contains_key(*agent))
        .collect();
    let mut text = format!(
        "\n## {ACP}\n\nWritten by `xtask/bench/acp/acp_bench.py` in this run: each agent a fresh process per run in a fresh, empty directory, driven over ACP v1 on stdio as an editor does, against `../shared/peers/agents-bench/fake_server.py` (which answers at once: a shell call of `true` per step, then DONE); medians over {ROUNDS} rounds of an instant answer, a 1-step and a {STEPS}-step task per agent, after one warm-up. Ours runs in `danger-full-access`, codex-acp with `approval_policy = \"never\"` and `danger-full-access`, claude-code-acp's session set to `bypassPermissions`. A peer's cell gives its ratio against ours (> 1: slower or bigger). Two shared cores: compare ratios, not absolute times.\n\n| figure |"
    );
    for (_, heading) in &columns {
        let _ = write!(text, " {heading} |");
    }
    text.push_str("\n|---|");
    text.push_str(&"---:|".repeat(columns.len()));
    text.push('\n');
    for figure in ACP_FIGURES {
        let _ = write!(text, "| {} |", figure.what);
        for (agent, _) in &columns {
            let _ = write!(text, " {} |", cell(report, agent, figure.ours));
        }
        text.push('\n');
    }
    text.push_str("\nOur ACP step against our headless step, measured the same way in this run (the issue: within 10%):\n\n");
    text.push_str(&headless_check(report));
    let runs: Vec<String> = columns
        .iter()
        .map(|(agent, heading)| {
            let (ok, total) = report.runs.get(*agent).copied().unwrap_or_default();
            let version = report
                .versions
                .get(*agent)
                .map(|version| format!(", {version}"))
                .unwrap_or_default();
            format!("{heading}: {ok}/{total}{version}")
        })
        .collect();
    let _ = writeln!(
        text,
        "\nRounds with every run ok, and the versions the agents reported: {}.",
        runs.join("; ")
    );
    for (agent, why) in &report.skipped {
        let _ = writeln!(text, "\nNot measured: {agent}: {why}.");
    }
    if let Some(error) = install_error {
        let _ = writeln!(text, "\nThe peers could not be installed: {error}.");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRIVER: &str = "runs ours 5 5
version ours deepseek-harness-acp 0.0.1
acp.ours.init_ms 40.000 ms
acp.ours.ready_ms 50.000 ms
acp.ours.step_ms 6.000 ms
acp.ours.server_step_ms 5.000 ms
acp.ours.cpu_step_ms 3.100 ms
runs ours-headless 5 5
acp.ours-headless.step_ms 5.000 ms
acp.ours-headless.server_step_ms 4.800 ms
acp.ours-headless.cpu_step_ms 3.000 ms
acp.ours-headless.instr_step 6.000 Minstr
acp.ours.instr_step 6.200 Minstr
runs claude-code-acp 4 5
acp.claude-code-acp.ready_ms 1250.000 ms
acp.claude-code-acp.step_ms 42.000 ms
skip codex-acp no executable at x (not installed)
not a figure line
acp.broken nope ms
";

    #[test]
    fn without_the_fake_model_the_section_says_so() {
        let root = std::env::temp_dir().join(format!("acp-bench-no-model-{}", std::process::id()));
        let text = section(&root.join("project"));
        assert!(
            text.contains("Not measured in this run: the fake model (`../shared/peers/agents-bench/fake_server.py`) is not beside the project."),
            "{text}"
        );
    }

    #[test]
    fn the_driver_lines_are_read() {
        let report = Report::parse(DRIVER);
        assert_eq!(report.get("ours", "ready_ms"), Some(50.0));
        assert_eq!(report.get("claude-code-acp", "step_ms"), Some(42.0));
        assert_eq!(report.runs.get("claude-code-acp"), Some(&(4, 5)));
        assert_eq!(
            report.skipped,
            [(
                "codex-acp".to_owned(),
                "no executable at x (not installed)".to_owned()
            )]
        );
        assert_eq!(report.figures.len(), 12, "{:?}", report.figures);
        assert!(report.all_skipped.is_none());
        assert_eq!(
            Report::parse("skip all the fake model did not start").all_skipped,
            Some("the fake model did not start".to_owned())
        );
    }

    #[test]
    fn the_table_has_a_column_per_agent_and_the_peers_ratios() {
        let text = render(&Report::parse(DRIVER), None);
        assert!(
            text.contains(
                "| figure | dsh-host (ours) | dsh-host headless (not ACP) | claude-code-acp |\n|---|---:|---:|---:|\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("| process start to `session/new` answered: ready for a prompt (ms) | 50.0 | - | 1250.0 (25.0x) |"),
            "{text}"
        );
        assert!(text.contains("| 6.0 | 5.0 | 42.0 (7.0x) |"), "{text}");
        assert!(
            text.contains("Not measured: codex-acp: no executable at x (not installed)."),
            "{text}"
        );
        assert!(
            text.contains("dsh-host (ours): 5/5, deepseek-harness-acp 0.0.1; dsh-host headless (not ACP): 5/5; claude-code-acp: 4/5."),
            "{text}"
        );
    }

    #[test]
    fn our_acp_step_is_held_to_our_headless_step() {
        let text = render(&Report::parse(DRIVER), None);
        assert!(
            text.contains("- per step, client side: 6.00 ms through ACP against 5.00 ms headless, 1.20x: NOT within the 10% target."),
            "{text}"
        );
        assert!(
            text.contains("- per step, seen by the model: 5.00 ms through ACP against 4.80 ms headless, 1.04x: within the 10% target."),
            "{text}"
        );
        assert!(
            text.contains("- CPU per step: 3.10 ms through ACP against 3.00 ms headless, 1.03x: within the 10% target."),
            "{text}"
        );
        assert!(
            text.contains("(the steadiest: no other load moves it): 6.20 million through ACP against 6.00 million headless, 1.03x: within the 10% target."),
            "{text}"
        );
        let alone = render(&Report::parse("runs ours 0 5\n"), Some("npm did not start"));
        assert!(
            alone.contains("- per step, client side: not compared (a figure of ours is missing)."),
            "{alone}"
        );
        assert!(
            alone.contains("The peers could not be installed: npm did not start."),
            "{alone}"
        );
    }
}
