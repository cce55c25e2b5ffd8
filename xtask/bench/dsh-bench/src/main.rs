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

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    // `tui`, `postgres` and `instructions` run only when named: `cargo xtask bench` runs the
    // first beside Codex's TUI, the second as a section of its own (it starts a database
    // server) and the third against both sides' hosts.
    let named_only = ["tui", "postgres", "instructions"];
    let wants = |group: &str| {
        (only.is_empty() && !named_only.contains(&group)) || only.iter().any(|arg| arg == group)
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("dsh-bench: cannot start a runtime: {error}");
            std::process::exit(1);
        }
    };
    let result: anyhow::Result<()> = runtime.block_on(async {
        if wants("dispatch") {
            dispatch::run().await?;
        }
        if wants("lifecycle") {
            lifecycle::run().await?;
        }
        Ok(())
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    let result = result.and_then(|()| {
        if wants("process") {
            process::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| if wants("tools") { tools::run() } else { Ok(()) });
    let result = result.and_then(|()| if wants("agent") { agent::run() } else { Ok(()) });
    let result = result.and_then(|()| {
        if wants("memory") {
            memory::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| {
        if wants("sandbox") {
            sandbox::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| if wants("fs") { fs::run() } else { Ok(()) });
    let result = result.and_then(|()| {
        if wants("compaction") {
            compaction::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| if wants("mcp") { mcp::run() } else { Ok(()) });
    let result = result.and_then(|()| {
        if wants("subagents") {
            subagents::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| if wants("web") { web::run() } else { Ok(()) });
    let result = result.and_then(|()| if wants("tui") { tui::run() } else { Ok(()) });
    let result = result.and_then(|()| {
        if wants("socket") {
            socket::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| if wants("undo") { undo::run() } else { Ok(()) });
    let result = result.and_then(|()| {
        if wants("archive") {
            archive::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| {
        if wants("session") {
            // The recorded logs, when the shared folder sits beside the project.
            let fixtures = std::env::var_os("DSH_FIXTURES")
                .map(PathBuf::from)
                .filter(|path| path.is_dir());
            session::run(fixtures.as_deref())
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| {
        if wants("instructions") {
            instructions::run()
        } else {
            Ok(())
        }
    });
    let result = result.and_then(|()| {
        if wants("postgres") {
            postgres::run()
        } else {
            Ok(())
        }
    });
    if let Err(error) = result {
        eprintln!("dsh-bench: {error}");
        std::process::exit(1);
    }
}
