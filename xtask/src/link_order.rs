//! `cargo xtask link-order`: writes `xtask/link/start-order.txt`, the order in which the linker
//! lays out the functions a start and a turn execute (see `xtask/link/cc`). It builds the
//! release binaries, installs valgrind where it is missing, and runs
//! `xtask/link/profile_start.py` against the agents bench's fake model. Run it again after large
//! changes: a stale list never breaks a build, it only packs less. Cargo does not know the file,
//! so a new list takes effect in a build that links again: this command cleans and rebuilds the
//! release build (the names are the release build's; a debug build's differ and are ignored).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{apt, process::cargo, timed};

pub(crate) fn run(root: &Path) -> Result<()> {
    let server = root.join("../shared/peers/agents-bench/fake_server.py");
    if !server.is_file() {
        bail!(
            "the fake model the profile runs against (`../shared/peers/agents-bench/fake_server.py`) is not beside the project"
        );
    }
    apt::ensure("/usr/bin/valgrind", "valgrind").map_err(anyhow::Error::msg)?;
    timed("build release", || {
        cargo(
            root,
            &["build", "--release", "--workspace", "--bins", "--lib"],
        )
    })?;
    let out = root.join("xtask/link/start-order.txt");
    timed("profile a start under callgrind", || {
        let status = Command::new("python3")
            .arg(root.join("xtask/link/profile_start.py"))
            .arg("--bin")
            .arg(root.join("target/release"))
            .arg("--server")
            .arg(&server)
            .arg("--out")
            .arg(&out)
            .current_dir(root)
            .status()
            .context("cannot run python3")?;
        if !status.success() {
            bail!("profile_start.py failed ({status})");
        }
        Ok(())
    })?;
    timed("link the release build again with it", || {
        cargo(root, &["clean", "--release"])?;
        cargo(
            root,
            &["build", "--release", "--workspace", "--bins", "--lib"],
        )
    })?;
    println!("xtask: `cargo xtask bench` measures the new layout");
    Ok(())
}

/// `cargo xtask link-order check`: prints [`coverage`] of the release build as it is.
pub(crate) fn check(root: &Path) -> Result<()> {
    println!("xtask: {}", coverage(root)?);
    Ok(())
}

/// How much of the list a build defines (see [`coverage`]).
pub(crate) struct Coverage {
    found: usize,
    listed: usize,
}

impl Coverage {
    /// Below this share of the list a build defines, the list is called stale.
    const STALE_BELOW_PERCENT: f64 = 95.0;

    fn percent(&self) -> f64 {
        100.0 * self.found as f64 / self.listed.max(1) as f64
    }
}

impl std::fmt::Display for Coverage {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (found, listed, percent) = (self.found, self.listed, self.percent());
        let verdict = if percent < Self::STALE_BELOW_PERCENT {
            "stale: `cargo xtask link-order` writes it again"
        } else {
            "current"
        };
        write!(
            formatter,
            "the release build defines {found} of the {listed} functions `xtask/link/start-order.txt` lays out first ({percent:.1}%; {verdict})"
        )
    }
}

/// How much of `start-order.txt` a release build under `root` still has: the functions it
/// lists (the part in the workspace's own binaries and libraries; `(below main)` and the like
/// have no symbol) and how many of them the build's host and libraries define. Rust's symbol
/// names carry a hash of the crate's build (its dependencies and features among them), so the
/// list goes stale as the dependency graph moves; the bench prints this share so a stale list
/// shows before its unpacked pages do.
pub(crate) fn coverage(root: &Path) -> Result<Coverage> {
    let listed = std::fs::read_to_string(root.join("xtask/link/start-order.txt"))
        .context("cannot read xtask/link/start-order.txt")?;
    let release = root.join("target/release");
    let mut objects = vec![release.join("dsh-host")];
    for entry in std::fs::read_dir(&release).context("no release build")? {
        let path = entry?.path();
        if path.extension().is_some_and(|extension| extension == "so") {
            objects.push(path);
        }
    }
    let output = Command::new("nm")
        .args(["--defined-only", "--format=just-symbols"])
        .args(&objects)
        .output()
        .context("cannot run nm")?;
    let defined: std::collections::HashSet<&str> = std::str::from_utf8(&output.stdout)
        .context("nm printed no text")?
        .lines()
        .collect();
    let names: Vec<&str> = listed
        .lines()
        .filter(|name| !name.is_empty() && !name.contains(' '))
        .collect();
    let found = names.iter().filter(|name| defined.contains(*name)).count();
    Ok(Coverage {
        found,
        listed: names.len(),
    })
}
