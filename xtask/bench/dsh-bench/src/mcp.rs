//! What a call through MCP costs: a 20-step headless task whose every step calls
//! server-everything's `echo` over stdio (the reference server from npm, in `tests/mcp`,
//! started once and confined by the sandbox like any tool process), against the same task
//! calling the in-process no-op tool. The gap between consecutive model requests is one whole
//! step; the difference is one MCP call: the JSON-RPC round trip over the server's pipes and
//! the reference server's own handling of it (it validates its arguments with zod). Where the
//! servers are not installed (`cargo xtask test` installs them) the figures are left out, and
//! stderr says why.

use std::path::Path;

use crate::process::{Host, scratch};
use crate::{exe_dir, median, report};

const STEPS: usize = 20;
/// Headless runs per variant; the medians of their step gaps are taken.
const RUNS: usize = 3;

pub(crate) fn run() -> anyhow::Result<()> {
    // `target/<profile>/dsh-bench`: the workspace is two levels up.
    let server = exe_dir()
        .join("../../tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !server.is_file() {
        eprintln!(
            "dsh-bench: the MCP figures are left out: {} is missing (cargo xtask test installs it)",
            server.display()
        );
        return Ok(());
    }
    let dir = scratch("mcp")?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let direct = step_gap(&dir, &work, "")?;
    let tool = format!(
        "        tool: mcp__everything__echo\n        arguments: '{{\"message\": \"bench\"}}'\n- id: mcp\n  config:\n    projectFile: ''\n    servers:\n      everything:\n        command: node\n        args: [{:?}, stdio]\n",
        server.display().to_string()
    );
    let over_mcp = step_gap(&dir, &work, &tool)?;
    report("mcp_step_direct_noop", direct, "us");
    report("mcp_step_stdio_echo", over_mcp, "us");
    report("mcp_call_overhead_stdio", over_mcp - direct, "us");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The median step gap (steps 3 to 20) of [`RUNS`] headless tasks; `extra` adds lines to the
/// `bench-model` row's config and rows after it.
fn step_gap(dir: &Path, work: &Path, extra: &str) -> anyhow::Result<f64> {
    let wanted: Vec<String> = (3..=STEPS).map(|n| n.to_string()).collect();
    let patch = dir.join("mcp.patch.yml");
    std::fs::write(
        &patch,
        format!(
            "- id: agent-loop\n  config:\n    maxSteps: {}\n- insert:\n    - id: bench-model\n      name: bench-model\n      config:\n        steps: {STEPS}\n        report: [{}]\n{}",
            STEPS + 5,
            wanted.join(", "),
            extra,
        ),
    )?;
    let mut medians = Vec::new();
    for _ in 0..RUNS {
        let host = Host::instant_turn(dir, &patch, work)?;
        let mut gaps = Vec::new();
        for _ in 0..wanted.len() {
            gaps.push(host.figure("step_gap_us")?.1);
        }
        host.stop();
        medians.push(median(gaps));
    }
    Ok(median(medians))
}
