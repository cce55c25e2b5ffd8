//! Running cargo and other commands with their output passed through.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Runs `cargo ARGS` in `dir`; fails when cargo does.
pub(crate) fn cargo(dir: &Path, args: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .current_dir(dir)
        .status()
        .with_context(|| format!("cannot run {cargo}"))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}
