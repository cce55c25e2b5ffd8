//! The product subagents under test: the test doubles of `tests/fixtures/products` (which speak
//! Codex's app-server JSON-RPC and Claude Code's stream-json on cue), the `subagent-product`
//! row that runs one behind its tool, and a headless run with such rows inserted.

use std::path::{Path, PathBuf};

use crate::fake_deepseek::FakeDeepSeek;
use crate::headless;
use crate::tree::yaml_string;
use crate::{Output, TestDir, workspace_root};

/// A test double of `tests/fixtures/products`.
pub fn double(name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures/products").join(name)
}

/// A row of plugin `subagent-product`, indented to go under `- insert:`.
pub fn product_row(
    id: &str,
    product: &str,
    tool: &str,
    command: &Path,
    env: &[(&str, &str)],
) -> String {
    let mut row = format!(
        "    - id: {id}\n      name: subagent-product\n      config:\n        product: {product}\n        toolName: {tool}\n        command: {}\n        timeoutMs: 60000\n",
        yaml_string(command.to_str().unwrap())
    );
    if !env.is_empty() {
        row.push_str("        env:\n");
        for (name, value) in env {
            row.push_str(&format!("          {name}: {}\n", yaml_string(value)));
        }
    }
    row
}

/// The row that runs the Codex double behind `subagent_codex`, with `env` set for it.
pub fn codex_double(env: &[(&str, &str)]) -> String {
    product_row(
        "codex",
        "codex",
        "subagent_codex",
        &double("fake-codex"),
        env,
    )
}

/// A headless run of `task` against `server` with `rows` inserted, in sandbox mode `mode`.
pub fn run_task(
    server: &FakeDeepSeek,
    dir: &TestDir,
    rows: &str,
    task: &str,
    mode: &str,
) -> Output {
    run_task_with_env(server, dir, rows, task, &[("DSH_PERMISSION_MODE", mode)])
}

/// [`run_task`] with `envs` for the host (its sandbox mode among them, if it is to be set).
pub fn run_task_with_env(
    server: &FakeDeepSeek,
    dir: &TestDir,
    rows: &str,
    task: &str,
    envs: &[(&str, &str)],
) -> Output {
    dir.write("home/cordis.patch.yml", &format!("- insert:\n{rows}"));
    headless::against_with_env(server, dir, &[task], envs)
}
