//! `dsh-bench`: the runtime benchmarks of `cargo xtask bench`, on the real runtime with the
//! real benchmark plugin libraries (built next to this binary). Prints `name value unit` lines,
//! the same shape as the Cordis peer script, so the two can be put side by side.
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmarks own their runtime and threads"
)]

mod agent;
mod archive;
mod compaction;
mod dispatch;
mod fs;
mod instructions;
mod lifecycle;
mod mcp;
mod memory;
mod postgres;
mod process;
mod sandbox;
mod session;
mod socket;
mod subagents;
mod tools;
mod tui;
mod undo;
mod web;

use std::path::PathBuf;
use std::time::Duration;

/// Median of a sample set (the machine is shared and noisy: never a mean, never one run).
fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let middle = samples.len() / 2;
    if samples.is_empty() {
        f64::NAN
    } else if samples.len() % 2 == 1 {
        samples[middle]
    } else {
        (samples[middle - 1] + samples[middle]) / 2.0
    }
}

fn report(name: &str, value: f64, unit: &str) {
    println!("{name} {value:.3} {unit}");
}

fn exe_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// One group of figures: `dsh-bench NAME` runs it alone. Groups that are not `by_default`
/// run only when named: `cargo xtask bench` runs `tui` beside Codex's TUI, `postgres` as a
/// section of its own (it starts a database server) and `instructions` against both sides'
/// hosts.
struct Group {
    name: &'static str,
    by_default: bool,
    run: fn() -> anyhow::Result<()>,
}

const fn group(name: &'static str, run: fn() -> anyhow::Result<()>) -> Group {
    Group {
        name,
        by_default: true,
        run,
    }
}

const fn named_only(name: &'static str, run: fn() -> anyhow::Result<()>) -> Group {
    Group {
        name,
        by_default: false,
        run,
    }
}

/// Every group, in the order a whole run takes them.
const GROUPS: &[Group] = &[
    group("dispatch", || on_runtime(dispatch::run())),
    group("lifecycle", || on_runtime(lifecycle::run())),
    group("process", process::run),
    group("tools", tools::run),
    group("agent", agent::run),
    group("memory", memory::run),
    group("sandbox", sandbox::run),
    group("fs", fs::run),
    group("compaction", compaction::run),
    group("mcp", mcp::run),
    group("subagents", subagents::run),
    group("web", web::run),
    named_only("tui", tui::run),
    group("socket", socket::run),
    group("undo", undo::run),
    group("archive", archive::run),
    group("session", || {
        // The recorded logs, when the shared folder sits beside the project.
        let fixtures = std::env::var_os("DSH_FIXTURES")
            .map(PathBuf::from)
            .filter(|path| path.is_dir());
        session::run(fixtures.as_deref())
    }),
    named_only("instructions", instructions::run),
    named_only("postgres", postgres::run),
];

/// Runs an async group on a runtime of its own, a thread like the host's.
fn on_runtime(group: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(group);
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// `dsh-bench [GROUP...]`: the named groups, or every group that runs by default;
/// `dsh-bench --groups` lists those (what `cargo xtask bench` runs, each in a process of its
/// own).
fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    if only.iter().any(|arg| arg == "--groups") {
        for group in GROUPS.iter().filter(|group| group.by_default) {
            println!("{}", group.name);
        }
        return;
    }
    if let Some(unknown) = only
        .iter()
        .find(|arg| !GROUPS.iter().any(|group| group.name == arg.as_str()))
    {
        let known: Vec<&str> = GROUPS.iter().map(|group| group.name).collect();
        eprintln!(
            "dsh-bench: no group `{unknown}` (known: {}; --groups lists those a whole run takes)",
            known.join(", ")
        );
        std::process::exit(2);
    }
    let wants = |group: &Group| {
        (only.is_empty() && group.by_default) || only.iter().any(|arg| arg == group.name)
    };
    for group in GROUPS.iter().filter(|group| wants(group)) {
        if let Err(error) = (group.run)() {
            eprintln!("dsh-bench: {}: {error}", group.name);
            std::process::exit(1);
        }
    }
}
