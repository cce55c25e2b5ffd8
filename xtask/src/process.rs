//! Running cargo and other commands with their output passed through.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Runs `cargo ARGS` in `dir`; fails when cargo does.
pub(crate) fn cargo(dir: &Path, args: &[&str]) -> Result<()> {
    cargo_with_env(dir, args, &[])
}

/// [`cargo`] with `envs` set for it.
pub(crate) fn cargo_with_env(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().copied())
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

/// The `---- name stdout ----` sections cargo prints for failed tests, kept so the closing
/// lines can repeat why each test failed (a CI log is often read from its tail only).
#[derive(Debug, Default)]
pub(crate) struct FailureReports {
    reports: Vec<Vec<String>>,
    capturing: bool,
}

impl FailureReports {
    /// Lines kept per failed test: enough for a panic message and an assertion's context.
    const LINES_PER_FAILURE: usize = 40;

    /// Reads one line of cargo's output.
    pub(crate) fn add_line(&mut self, line: &str) {
        if line.starts_with("---- ") && line.ends_with(" stdout ----") {
            self.reports.push(vec![line.to_owned()]);
            self.capturing = true;
        } else if line == "failures:" || line.starts_with("test result: ") {
            self.capturing = false;
        } else if self.capturing
            && let Some(report) = self.reports.last_mut()
            && report.len() < Self::LINES_PER_FAILURE
        {
            report.push(line.to_owned());
        }
    }

    /// Each failed test's report, one after the other.
    pub(crate) fn lines(&self) -> impl Iterator<Item = &str> {
        self.reports.iter().flatten().map(String::as_str)
    }
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
/// results and keeping the failed tests' reports.
pub(crate) fn cargo_test(
    dir: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Result<(bool, TestTotals, FailureReports)> {
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
    let mut failures = FailureReports::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            println!("{line}");
            totals.add_line(&line);
            failures.add_line(&line);
        }
    }
    let status = child.wait()?;
    Ok((status.success(), totals, failures))
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

    #[test]
    fn failure_reports_keep_each_failed_tests_section() {
        let mut failures = FailureReports::default();
        for line in [
            "test a ... FAILED",
            "failures:",
            "",
            "---- a stdout ----",
            "thread 'a' panicked at tests/a.rs:3:5:",
            "the reason",
            "",
            "failures:",
            "    a",
            "test result: FAILED. 0 passed; 1 failed; 0 ignored",
        ] {
            failures.add_line(line);
        }
        let lines: Vec<&str> = failures.lines().collect();
        assert_eq!(
            lines,
            [
                "---- a stdout ----",
                "thread 'a' panicked at tests/a.rs:3:5:",
                "the reason",
                ""
            ]
        );
    }
}
