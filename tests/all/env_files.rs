//! Layered `.env` files through the real host: the invoking directory's `./.env` and
//! `$DSH_HOME/.env` fill what the inherited environment leaves unset (inherited, then
//! `./.env`, then the home's), reach the provider (an API key from the home's file) and the
//! commands the sandbox runs (without the secrets it strips), and a file that sets a
//! variable only the launching environment may set stops the boot, naming both.

use std::process::{Command, Stdio};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{patched_args, stream_json};
use dsh_tests::{TestDir, host_bin};
use serde_json::json;

/// `dsh-host ARGS` run from `cwd` with only `envs` beyond a clean environment's basics.
fn host_in(
    cwd: &std::path::Path,
    home: &std::path::Path,
    args: &[String],
    envs: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut command = Command::new(host_bin());
    command
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("DSH_HOME", home)
        .envs(envs.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = command.output().expect("start dsh-host");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn layered_env_files_reach_the_provider_and_commands() {
    let command = "echo \"A=$LAYER_A B=$LAYER_B C=$LAYER_C KEY=${DEEPSEEK_API_KEY:-stripped}\"";
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[(
            "call_1",
            "bash",
            &json!({ "command": command, "description": "print the layers" }).to_string(),
        )]),
        Reply::text("done"),
    ]);
    let dir = TestDir::new("env-files");
    dir.write(
        "home/.env",
        "# the user's layer\nDEEPSEEK_API_KEY=sk-from-the-home-env-file\nLAYER_A=home\nLAYER_C=home\n",
    );
    dir.write(
        "launch/.env",
        "LAYER_A=project\nexport LAYER_B='project' # overridden by the shell\nnot a pair\n",
    );
    let mut args = patched_args(&server, &dir, "");
    args.extend(["--output", "stream-json", "run it"].map(str::to_owned));
    let (code, stdout, stderr) = host_in(
        &dir.join("launch"),
        &dir.home(),
        &args,
        &[
            ("LAYER_B", "inherited"),
            ("DSH_PERMISSION_MODE", "danger-full-access"),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}\n{stdout}");
    assert!(
        stderr.contains(".env:3: not NAME=VALUE; the line is skipped"),
        "the malformed line is named: {stderr}"
    );
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-from-the-home-env-file"),
        "the provider's key came from $DSH_HOME/.env"
    );
    let (events, _) = stream_json(&stdout);
    let result = events
        .iter()
        .find(|event| event["type"] == "tool/result")
        .unwrap_or_else(|| panic!("no tool result: {events:?}"));
    let text = result["data"]["message"]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("A=project B=inherited C=home KEY=stripped"),
        "inherited > ./.env > $DSH_HOME/.env, and the key stays out of commands: {text}"
    );
}

#[test]
fn a_env_file_setting_a_launch_variable_stops_the_boot() {
    let server = FakeDeepSeek::start(vec![Reply::text("never")]);
    let dir = TestDir::new("env-files-bootstrap");
    dir.write(
        "launch/.env",
        "FINE=1\nDSH_PERMISSION_MODE=danger-full-access\n",
    );
    let mut args = patched_args(&server, &dir, "");
    args.extend(["--output", "stream-json", "hello"].map(str::to_owned));
    let (code, stdout, stderr) = host_in(
        &dir.join("launch"),
        &dir.home(),
        &args,
        &[("DEEPSEEK_API_KEY", "sk-test")],
    );
    assert_eq!(code, Some(1), "{stderr}\n{stdout}");
    let file = dir.join("launch/.env");
    assert!(
        stderr.contains(&format!(
            "{} sets \"DSH_PERMISSION_MODE\", which only the launching environment may set",
            file.display()
        )),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "the run went on");
}
