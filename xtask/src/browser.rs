//! What the browser tests need, installed where it is missing: Debian's `chromium` (through
//! apt, as root) and playwright-core (through npm, into `tests/web/node_modules` from its lock
//! file). Where a registry cannot be reached or the tools are absent, the answer is the reason,
//! which the tests print as they skip.

use std::path::Path;
use std::process::Command;

/// The browser the tests drive.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// `None` when everything is in place; otherwise why the browser tests must be skipped.
pub(crate) fn prepare(root: &Path) -> Option<String> {
    let scripts = root.join("tests/web");
    if !scripts.join("node_modules/playwright-core").is_dir()
        && let Err(reason) = run(&scripts, "npm", &["ci", "--no-audit", "--no-fund"])
    {
        return Some(format!("playwright-core could not be installed: {reason}"));
    }
    if !Path::new(CHROMIUM).is_file() {
        if !is_root() {
            return Some(format!(
                "{CHROMIUM} is missing and installing it needs root"
            ));
        }
        let apt = Path::new("/");
        let installed = run(apt, "apt-get", &["update", "-q"])
            .and_then(|()| run(apt, "apt-get", &["install", "-y", "-q", "chromium"]));
        if let Err(reason) = installed {
            return Some(format!("chromium could not be installed: {reason}"));
        }
    }
    None
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Runs `program args` in `dir`, quietly; the error is the tail of what it printed.
fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    println!("xtask: {program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .map_err(|error| format!("cannot run {program}: {error}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    Err(format!(
        "{program} {} failed ({}): {}",
        args.join(" "),
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
    ))
}
