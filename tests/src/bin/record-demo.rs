//! `record-demo OUT`: records the demo that `cargo xtask run` replays. It answers a real
//! headless run from the project's fake DeepSeek server (a bash call, then the answer), with
//! the session store writing plain JSONL, and writes the resulting log to OUT
//! with the scratch working directory replaced by `/demo`.

use std::path::{Path, PathBuf};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, run_host_with_env};
use serde_json::json;

/// The task the demo answers (`cargo xtask run` passes the same words).
const TASK: &str = "What is 6 times 7? Check it with the shell.";

fn find_log(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_log(&path) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|name| name == "session.jsonl") {
            return Some(path);
        }
    }
    None
}

fn main() {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: record-demo OUT");
        std::process::exit(2);
    };
    let arguments = json!({"command": "echo $((6 * 7))", "description": "multiply in the shell"});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_demo_1", "bash", &arguments.to_string())]),
        Reply::text("6 × 7 = 42: the shell printed 42 for `echo $((6 * 7))`."),
    ]);
    let dir = TestDir::new("record-demo");
    let patch = dir.write(
        "record.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n- id: session-persistence-jsonl\n  config:\n    root: !home sessions\n    compression: none\n",
            server.url()
        ),
    );
    let work = dir.join("work");
    if let Err(error) = std::fs::create_dir_all(&work) {
        eprintln!("record-demo: {error}");
        std::process::exit(1);
    }
    let run = run_host_with_env(
        &dir.home(),
        &[
            "--patch",
            &patch.display().to_string(),
            "--profile",
            "headless",
            "--",
            "--cwd",
            &work.display().to_string(),
            "--model",
            "deepseek-official/deepseek-v4-flash",
            TASK,
        ],
        &[("DEEPSEEK_API_KEY", "sk-demo-recording")],
    );
    if run.code != Some(0) {
        eprintln!("record-demo: the recording run failed: {run:?}");
        std::process::exit(1);
    }
    let Some(log) = find_log(&dir.home().join("sessions")) else {
        eprintln!("record-demo: no session.jsonl was written");
        std::process::exit(1);
    };
    // The recording machine's scratch path stays out of the shipped file.
    let text = match std::fs::read_to_string(&log) {
        Ok(text) => text.replace(&work.display().to_string(), "/demo"),
        Err(error) => {
            eprintln!("record-demo: cannot read {}: {error}", log.display());
            std::process::exit(1);
        }
    };
    if let Err(error) = std::fs::write(&out, text) {
        eprintln!("record-demo: cannot write {out}: {error}");
        std::process::exit(1);
    }
    println!("recorded {out}: {}", run.stdout);
}
