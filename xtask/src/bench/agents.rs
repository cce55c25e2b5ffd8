//! The whole-agent figures: `../shared/peers/agents-bench` runs our `dsh-host` and each peer
//! agent that is installed (Codex CLI, opencode, Claude Code, the TypeScript reference) against
//! one instant fake model, and writes a table of start-up, per-step overhead, memory, request
//! sizes and prefix reuse, with the peer / ours ratios. BENCHMARKS.md carries that table.
//! Where Python, GNU time or the script are missing the section says so; a peer that is not
//! installed is left out (the script's `install.sh` installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The peer agents the script knows, and the executable each needs under its peers folder.
const PEERS: &[(&str, &str)] = &[
    ("codex", "node_modules/.bin/codex"),
    ("opencode", "node_modules/.bin/opencode"),
    ("claude", "node_modules/.bin/claude"),
    ("dsh-ref", "dshref/apps/cli/lib/bin.js"),
];

/// Rounds of the script (each a 1-step and a 20-step task per agent).
const ROUNDS: &str = "3";

fn peers_dir() -> PathBuf {
    std::env::var_os("PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("agents-bench-peers"))
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null")])
        .status()
        .is_ok_and(|status| status.success())
}

/// The markdown section: the script's table, or why there is none.
pub(super) fn section(root: &Path) -> String {
    let heading = "\n## Whole agents against one instant fake model (agents-bench)\n\n";
    let script = root.join("../shared/peers/agents-bench/bench.py");
    let missing: Vec<&str> = [("python3", "python3"), ("time", "GNU time")]
        .iter()
        .filter(|(program, _)| !on_path(program))
        .map(|(_, name)| *name)
        .collect();
    if !script.is_file() || !missing.is_empty() {
        let why = match script.is_file() {
            false => "the agents-bench script is not beside the project".to_owned(),
            true => format!("{} not installed", missing.join(" and ")),
        };
        return format!("{heading}Not measured in this run: {why}.\n");
    }
    let peers = peers_dir();
    let agents: Vec<&str> = std::iter::once("ours")
        .chain(
            PEERS
                .iter()
                .filter(|(_, file)| peers.join(file).is_file())
                .map(|(agent, _)| *agent),
        )
        .collect();
    let out = root.join("target/agents-bench/latest");
    let _ = std::fs::remove_dir_all(&out);
    let ran = Command::new("python3")
        .arg(&script)
        .current_dir(root)
        .env("BENCH_AGENTS", agents.join(","))
        .env("BENCH_RUNS", ROUNDS)
        .env("BENCH_OUT", &out)
        .env("DSH_HOST", root.join("target/release/dsh-host"))
        .status();
    let table = std::fs::read_to_string(out.join("table.md"));
    match (ran, table) {
        (Ok(status), Ok(table)) if status.success() => {
            let body: String = table
                .lines()
                // The script's own heading and the machine's name stay out of the file.
                .filter(|line| !line.starts_with("# ") && !line.starts_with("Machine:"))
                .map(|line| format!("{line}\n"))
                .collect();
            let left_out = match agents.len() < PEERS.len() + 1 {
                true => {
                    "; peers not installed here are left out (`sh ../shared/peers/agents-bench/install.sh` installs them)"
                }
                false => "",
            };
            format!(
                "{heading}Written by `../shared/peers/agents-bench/bench.py` in this run ({ROUNDS} rounds; agents: {}{left_out}).\n{body}{}",
                agents.join(", "),
                confined(root, &script)
            )
        }
        (Ok(status), _) => {
            format!("{heading}Not measured in this run: the script failed ({status}).\n")
        }
        (Err(error), _) => {
            format!("{heading}Not measured in this run: python3 did not start: {error}.\n")
        }
    }
}

/// The script runs ours in `danger-full-access`; this runs it once more for ours alone with
/// the sandbox row in `workspace-write` (through a wrapper that adds the patch), so the table
/// of the same run shows what a confined step costs there: a paragraph with its row.
fn confined(root: &Path, script: &Path) -> String {
    let dir = root.join("target/agents-bench/confined");
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&dir);
    let patch = dir.join("confined.patch.yml");
    let wrapper = dir.join("dsh-host-confined");
    let host = root.join("target/release/dsh-host");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| {
            std::fs::write(
                &patch,
                "- id: sandbox\n  config:\n    mode: workspace-write\n",
            )
        })
        .and_then(|()| {
            std::fs::write(
                &wrapper,
                format!(
                    "#!/bin/sh\ncase \"$1\" in --version) exec '{host}' \"$@\";; esac\nexec '{host}' --patch '{patch}' \"$@\"\n",
                    host = host.display(),
                    patch = patch.display()
                ),
            )
        })
        .and_then(|()| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        });
    if let Err(error) = written {
        return format!("\nThe confined run was not made: {error}.\n");
    }
    let ran = Command::new("python3")
        .arg(script)
        .current_dir(root)
        .env("BENCH_AGENTS", "ours")
        .env("BENCH_RUNS", ROUNDS)
        .env("BENCH_OUT", &out)
        .env("DSH_HOST", &wrapper)
        .stdout(std::process::Stdio::null())
        .status();
    let row = std::fs::read_to_string(out.join("table.md"))
        .ok()
        .and_then(|table| {
            table
                .lines()
                .find(|line| line.starts_with("| dsh-host (ours) | ") && line.contains("/"))
                .map(str::to_owned)
        });
    match (ran, row) {
        (Ok(status), Some(row)) if status.success() => format!(
            "\nThe same script run again in this run for ours alone, its sandbox row in `workspace-write` (each `true` confined: the session's enclave, the row's launcher, a spare made ahead), same columns:\n\n| agent | ok | (a) first request ms | (a') first tool-offering request ms | (b) 1-step wall ms | (c) 20-step wall ms | per-step ms (c-b)/19 | per-step ms, server-side | (d) max RSS MiB (time %M) | tree RSS peak MiB (sampled) | procs | (e) body bytes at step 1 / step 20 | requests in 20-step run |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n{}\n",
            row.replacen("dsh-host (ours)", "dsh-host (ours), workspace-write", 1)
        ),
        (Ok(status), _) => format!("\nThe confined run failed ({status}).\n"),
        (Err(error), _) => format!("\nThe confined run did not start: {error}.\n"),
    }
}
