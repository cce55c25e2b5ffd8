//! Debian packages the commands need, installed where they are missing (through apt, as root).
//! Where that cannot be done, the answer is the reason, for the caller to print.

use std::path::Path;
use std::process::Command;

/// Installs `package` unless `binary` exists; the reason when it is still missing.
pub(crate) fn ensure(binary: &str, package: &str) -> Result<(), String> {
    if Path::new(binary).is_file() {
        return Ok(());
    }
    if !is_root() {
        return Err(format!(
            "{binary} is missing and installing it needs root (apt-get install {package})"
        ));
    }
    let apt = Path::new("/");
    run(apt, "apt-get", &["update", "-q"])
        .and_then(|()| run(apt, "apt-get", &["install", "-y", "-q", package]))
        .map_err(|reason| format!("{package} could not be installed: {reason}"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Runs `program args` in `dir`, quietly; the error is the tail of what it printed.
pub(crate) fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
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

/// `npm ci` in `dir` (from its lock file) unless what it installs is `installed` already. Where
/// `npm ci` refuses the lock file, `npm install` from it: a lock written where some platforms'
/// optional packages could not be resolved (a registry that does not carry them) lacks their
/// entries, which `npm ci` takes for a lock out of step with `package.json` and `npm install`
/// does not (it still installs the locked versions).
pub(crate) fn npm_ci_where_missing(dir: &Path, installed: bool) -> Result<(), String> {
    if installed {
        return Ok(());
    }
    run(dir, "npm", &["ci", "--no-audit", "--no-fund"]).or_else(|ci| {
        run(dir, "npm", &["install", "--no-audit", "--no-fund"])
            .map_err(|install| format!("{ci}; then {install}"))
    })
}

/// Bubblewrap, which the sandbox confines commands with; a warning when it cannot be had
/// (commands outside danger-full-access are then refused, and say so).
pub(crate) fn ensure_bubblewrap() {
    if let Err(reason) = ensure("/usr/bin/bwrap", "bubblewrap") {
        eprintln!("xtask: warning: {reason}; the sandbox will refuse shell commands");
    }
}

/// Whether a PostgreSQL server is installed (Debian keeps it under
/// `/usr/lib/postgresql/<version>/bin`, off the `PATH`).
pub(crate) fn postgres_installed() -> bool {
    std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
        versions
            .flatten()
            .any(|version| version.path().join("bin/postgres").is_file())
    })
}

/// Debian's PostgreSQL server, for the session store's tests (each starts a throwaway cluster
/// of its own); a warning when it cannot be had (those tests then skip, saying so).
pub(crate) fn ensure_postgres() {
    if postgres_installed() {
        return;
    }
    if let Err(reason) = ensure("/usr/lib/postgresql", "postgresql") {
        eprintln!("xtask: warning: {reason}; the PostgreSQL session store's tests will skip");
    }
}

/// Where Debian's libfaketime keeps the library the fault catalogue preloads.
pub(crate) const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// libfaketime (its thread-safe variant), for the fault catalogue's clock that jumps back
/// (preloaded into one host, so the machine's own clock is never touched); a warning when it
/// cannot be had (that row then skips).
pub(crate) fn ensure_faketime() {
    if let Err(reason) = ensure(LIBFAKETIME, "libfaketime") {
        eprintln!("xtask: warning: {reason}; the fault catalogue's clock row will skip");
    }
}
