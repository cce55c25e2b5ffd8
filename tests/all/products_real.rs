//! The real agent products as children through the real `dsh-host`: the Codex CLI and
//! Claude Code (installed into `tests/products` by `cargo xtask test`, or these tests are
//! skipped with the reason) against the agents-bench fake model server on loopback, each
//! running one shell step of its own and answering its parent.

use std::path::PathBuf;

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::products::{product_row, run_task};
use serde_json::json;

/// The real products, installed by `cargo xtask test`, or why their tests are skipped.
fn installed(product: &str) -> Result<PathBuf, String> {
    if let Ok(reason) = std::env::var("DSH_PRODUCTS_SKIP") {
        return Err(reason);
    }
    let modules = dsh_tests::workspace_root().join("tests/products/node_modules");
    // The native binary of the platform package: no install script has to have run.
    let path = match product {
        "codex" => modules.join(".bin/codex"),
        _ => modules.join(format!("@anthropic-ai/claude-code-{}/claude", platform())),
    };
    match path.is_file() {
        true => Ok(path),
        false => Err(format!(
            "{} is not installed (cargo xtask test installs the products into tests/products)",
            path.display()
        )),
    }
}

fn platform() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "linux-arm64",
        _ => "linux-x64",
    }
}

/// The agents-bench fake model server on a loopback port of its own choosing; it stops by
/// itself after two minutes, and when dropped.
struct BenchModel {
    child: std::process::Child,
    port: u16,
}

impl BenchModel {
    /// The server, or why it cannot run: its script lives beside the checkout, in the peers'
    /// folder, which a clone standing alone does not have.
    fn start(dir: &TestDir) -> Result<Self, String> {
        let script =
            dsh_tests::workspace_root().join("../shared/peers/agents-bench/fake_server.py");
        if !script.is_file() {
            return Err(
                "the agents-bench fake model server (../shared/peers/agents-bench/fake_server.py) is not beside the checkout".to_owned(),
            );
        }
        let port_file = dir.join("model.port");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .args(["--port", "0", "--max-seconds", "120", "--port-file"])
            .arg(&port_file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 runs the fake model server");
        for _ in 0..200 {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return Ok(Self { child, port });
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the fake model server did not say its port");
    }
}

impl Drop for BenchModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Codex's home for a run against `model`: its provider is the fake server's Responses wire.
fn codex_home(dir: &TestDir, model: &BenchModel) -> PathBuf {
    let home = dir.join("codex-home");
    dir.write(
        "codex-home/config.toml",
        &format!(
            "model = \"fake-model\"\nmodel_provider = \"fake\"\ncheck_for_update_on_startup = false\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nenv_key = \"FAKE_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n[analytics]\nenabled = false\n\n[otel]\nexporter = \"none\"\n",
            model.port
        ),
    );
    home
}

#[test]
fn the_real_codex_runs_as_a_child_and_its_answer_reaches_the_parent() {
    let codex = match installed("codex") {
        Ok(path) => path,
        Err(reason) => {
            dsh_tests::skip("the real Codex as a child", &reason);
            return;
        }
    };
    let dir = TestDir::new("products-real-codex");
    let model = match BenchModel::start(&dir) {
        Ok(model) => model,
        Err(reason) => {
            dsh_tests::skip("the real Codex as a child", &reason);
            return;
        }
    };
    let home = codex_home(&dir, &model);
    // Codex will not make its helper links under the temp dir: its temp dir is elsewhere.
    let tmp = dir.join("codex-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "c1",
            "subagent_codex",
            json!({"description": "run the check", "prompt": "BENCH_STEPS=1 Run the check and say DONE."}),
        ),
        Reply::text("Codex said it"),
    ]);
    let rows = product_row(
        "codex",
        "codex",
        "subagent_codex",
        &codex,
        &[
            ("CODEX_HOME", home.to_str().unwrap()),
            ("FAKE_API_KEY", "bench"),
            ("TMPDIR", tmp.to_str().unwrap()),
        ],
    );
    let out = run_task(&server, &dir, &rows, "ask codex", "workspace-write");
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(server.last_tool_texts(), ["DONE"], "stderr: {}", out.stderr);
}

#[test]
fn the_real_claude_code_runs_as_a_child_and_its_answer_reaches_the_parent() {
    let claude = match installed("claude") {
        Ok(path) => path,
        Err(reason) => {
            dsh_tests::skip("the real Claude Code as a child", &reason);
            return;
        }
    };
    let dir = TestDir::new("products-real-claude");
    let model = match BenchModel::start(&dir) {
        Ok(model) => model,
        Err(reason) => {
            dsh_tests::skip("the real Claude Code as a child", &reason);
            return;
        }
    };
    let config = dir.join("claude-config");
    std::fs::create_dir_all(&config).unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "c1",
            "subagent_claude_code",
            json!({"description": "run the check", "prompt": "BENCH_STEPS=1 Run the check and say DONE."}),
        ),
        Reply::text("Claude Code said it"),
    ]);
    let base = format!("http://127.0.0.1:{}", model.port);
    let rows = product_row(
        "claude",
        "claude-code",
        "subagent_claude_code",
        &claude,
        &[
            ("ANTHROPIC_BASE_URL", &base),
            ("ANTHROPIC_API_KEY", "sk-ant-fake"),
            ("CLAUDE_CONFIG_DIR", config.to_str().unwrap()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("CLAUDE_CODE_MAX_RETRIES", "0"),
            ("NO_PROXY", "127.0.0.1,localhost"),
        ],
    );
    let out = run_task(&server, &dir, &rows, "ask claude", "workspace-write");
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(server.last_tool_texts(), ["DONE"], "stderr: {}", out.stderr);
}
