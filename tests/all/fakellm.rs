//! The DeepSeek adapter in OpenAI-compatible mode against `fakellm` 0.3.5, a mock server
//! someone else wrote (PyPI). The test installs it into a virtual environment under `target/`
//! and is skipped, with the reason printed, only where pip cannot reach the registry.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dsh_tests::{TestDir, plugin_lib, run_host_with_env, workspace_root};
use serde_json::json;

/// The fakellm executable, installed on first use; `Err` says why it cannot be had here.
fn fakellm() -> Result<PathBuf, String> {
    let venv = workspace_root().join("target/fakellm-venv");
    let exe = venv.join("bin/fakellm");
    if exe.is_file() {
        return Ok(exe);
    }
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status();
    if !matches!(status, Ok(status) if status.success()) {
        return Err(format!(
            "cannot create a virtual environment at {}",
            venv.display()
        ));
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "fakellm==0.3.5",
        ])
        .output()
        .map_err(|error| format!("cannot run pip: {error}"))?;
    if !pip.status.success() || !exe.is_file() {
        let _ = std::fs::remove_dir_all(&venv);
        return Err(format!(
            "pip cannot install fakellm 0.3.5: {}",
            String::from_utf8_lossy(&pip.stderr).trim()
        ));
    }
    Ok(exe)
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn serve(exe: &Path, config: &Path, port: u16) -> Server {
    let child = Command::new(exe)
        .args([
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--config",
        ])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "fakellm did not start listening on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

#[test]
fn the_adapter_streams_from_fakellm_in_openai_compatible_mode() {
    let exe = match fakellm() {
        Ok(exe) => exe,
        Err(reason) => {
            dsh_tests::skip(
                "the_adapter_streams_from_fakellm_in_openai_compatible_mode",
                &reason,
            );
            return;
        }
    };
    for name in ["llm", "llm_deepseek", "llm_probe"] {
        plugin_lib(name);
    }
    let dir = TestDir::new("fakellm");
    let config = dir.write(
        "fakellm.yaml",
        "version: 1\nrules:\n  - name: tool_first\n    when:\n      messages_contain: \"list the files\"\n    respond:\n      tool_calls:\n        - name: glob\n          arguments: {pattern: \"*.rs\"}\n",
    );
    let port = free_port();
    let _server = serve(&exe, &config, port);
    let request = json!({
        "config": {"provider": "fakellm", "model": "gpt-4o-mini"},
        "messages": [{"id": "u1", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "please list the files"}]}],
        "tools": [{"name": "glob", "description": "find files", "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}}}]
    });
    let rows = json!([
        {"id": "http", "name": "dsh-host/http"},
        {"id": "llm", "name": "llm"},
        {"id": "fakellm", "name": "llm-deepseek", "config": {"provider": "fakellm", "baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKeyEnv": "FAKELLM_KEY", "compat": "openai"}},
        {"id": "probe", "name": "llm-probe", "config": {"request": request}}
    ]);
    let tree = dir.write("tree.yml", &serde_json::to_string_pretty(&rows).unwrap());
    let out = run_host_with_env(
        &dir.home(),
        &["check", "--config", tree.to_str().unwrap()],
        &[("FAKELLM_KEY", "not-used")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("llm done"), "{}", out.stdout);
    let chunks: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("chunk "))
        .map(|json| serde_json::from_str(json).unwrap())
        .collect();
    let call = chunks
        .iter()
        .find(|chunk| chunk["type"] == "block-end" && chunk["block"]["type"] == "tool-call")
        .unwrap_or_else(|| panic!("no tool call in {chunks:?}"));
    assert_eq!(call["block"]["name"], "glob");
    let arguments: serde_json::Value =
        serde_json::from_str(call["block"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"pattern": "*.rs"}));
    assert_eq!(chunks.last().unwrap()["type"], "finish");
}
