//! `cargo xtask fuzz TARGET SECONDS`: builds the fuzz runner (`tests/fuzz`, optimized unless
//! `--debug`) and runs one target, or `all` of them, each in its own process so that the peak
//! RSS it reports is that target's. Crashers land in `tests/fuzz/corpus/<target>/`, where the
//! crate's test replays them. `cargo xtask test` runs every target for a few seconds with the
//! debug runner the workspace build already made ([`smoke`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process::cargo;

/// How long `cargo xtask test` runs each target.
const SMOKE_SECONDS: &str = "3";

fn runner(root: &Path, release: bool) -> PathBuf {
    let profile = if release { "release" } else { "debug" };
    root.join("target").join(profile).join("dsh-fuzz")
}

fn target_names(runner: &Path) -> Result<Vec<String>> {
    let output = Command::new(runner)
        .arg("list")
        .output()
        .with_context(|| format!("cannot start {}", runner.display()))?;
    if !output.status.success() {
        bail!("{} list failed", runner.display());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Runs each of `targets` for `seconds` in its own process; answers the ones that failed.
fn run_each(
    runner: &Path,
    targets: &[String],
    seconds: &str,
    extra: &[String],
) -> Result<Vec<String>> {
    let mut failed = Vec::new();
    for target in targets {
        let status = Command::new(runner)
            .args([target.as_str(), seconds])
            .args(extra)
            .status()
            .with_context(|| format!("cannot start {}", runner.display()))?;
        if !status.success() {
            failed.push(format!("{target} (exit {:?})", status.code()));
        }
    }
    Ok(failed)
}

/// `cargo xtask fuzz TARGET|all SECONDS [--debug] [runner flags: --seed N, --hang-ms MS, ...]`.
pub(crate) fn run(root: &Path, args: Vec<String>) -> Result<()> {
    let (Some(target), Some(seconds)) = (args.first(), args.get(1)) else {
        bail!(
            "fuzz needs a TARGET (or `all`) and SECONDS; the targets: cargo run -p dsh-fuzz -- list"
        )
    };
    let release = !args.iter().any(|arg| arg == "--debug");
    let extra: Vec<String> = args[2..]
        .iter()
        .filter(|arg| *arg != "--debug")
        .cloned()
        .collect();
    let mut build = vec!["build", "-p", "dsh-fuzz", "--bin", "dsh-fuzz"];
    if release {
        build.push("--release");
    }
    crate::timed("build the fuzz runner", || cargo(root, &build))?;
    let runner = runner(root, release);
    let targets = match target.as_str() {
        "all" => target_names(&runner)?,
        one => vec![one.to_owned()],
    };
    let failed = run_each(&runner, &targets, seconds, &extra)?;
    if !failed.is_empty() {
        bail!("fuzzing failed: {}", failed.join(", "));
    }
    Ok(())
}

/// The bounded run of `cargo xtask test`: every target for a few seconds, with the runner the
/// workspace build made. An error names the targets that found something.
pub(crate) fn smoke(root: &Path) -> Result<()> {
    let runner = runner(root, false);
    let targets = target_names(&runner)?;
    let failed = run_each(&runner, &targets, SMOKE_SECONDS, &[])?;
    if !failed.is_empty() {
        bail!(
            "fuzzing found panics, hangs or memory over the bound: {}",
            failed.join(", ")
        );
    }
    Ok(())
}
