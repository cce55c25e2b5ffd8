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

/// Totals of cargo's `test result:` lines.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TestTotals {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    pub(crate) ignored: u64,
}

impl TestTotals {
    /// Adds one `test result: ok. 3 passed; 0 failed; 1 ignored; ...` line.
    pub(crate) fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        for part in rest.split([';', '.']) {
            let mut words = part.split_whitespace();
            let (Some(count), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(count) = count.parse::<u64>() else {
                continue;
            };
            match kind {
                "passed" => self.passed += count,
                "failed" => self.failed += count,
                "ignored" => self.ignored += count,
                _ => {}
            }
        }
    }
}

/// Runs `cargo ARGS` with `envs` set, passing its output through while adding up the test
/// results.
pub(crate) fn cargo_test(
    dir: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Result<(bool, TestTotals)> {
    use std::io::{BufRead, BufReader};
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut child = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {cargo}"))?;
    let mut totals = TestTotals::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            println!("{line}");
            totals.add_line(&line);
        }
    }
    let status = child.wait()?;
    Ok((status.success(), totals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_result_lines_add_up() {
        let mut totals = TestTotals::default();
        totals.add_line("test result: ok. 14 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s");
        totals.add_line(
            "test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out",
        );
        totals.add_line("running 3 tests");
        assert_eq!(
            totals,
            TestTotals {
                passed: 17,
                failed: 2,
                ignored: 1
            }
        );
    }
}
