//! Running `dsh-host --profile headless` for a test: in a fresh home with the working directory
//! `dir/work`, answered by a recorded log (`--replay`), by nothing, or by the fake DeepSeek
//! server through a patch layer; and reading a `--output stream-json` run back as its session
//! events and its closing `result` line.

use std::path::Path;

use serde_json::Value;

use crate::fake_deepseek::FakeDeepSeek;
use crate::{Output, TestDir, run_host_with_env};

/// Runs the headless profile with `args` in a fresh home; the working directory is `dir/work`.
pub fn run(dir: &TestDir, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut all = vec![
        "--profile",
        "headless",
        "--",
        "--cwd",
        work.to_str().unwrap(),
    ];
    all.extend(args);
    // No key from the environment running the tests may leak in: runs choose their model.
    let mut envs = envs.to_vec();
    if !envs.iter().any(|(name, _)| *name == "DEEPSEEK_API_KEY") {
        envs.push(("DEEPSEEK_API_KEY", ""));
    }
    run_host_with_env(&dir.home(), &all, &envs)
}

/// A stream-json run in `dir/work` whose model is the replay of `log` (child scripts beside
/// it), with the prompts `tasks` (the first the task, the others `--then`), in
/// danger-full-access.
pub fn replayed_run(dir: &TestDir, log: &Path, tasks: &[&str]) -> Output {
    let (task, later) = tasks.split_first().expect("a task");
    let mut args = vec!["--replay", log.to_str().unwrap(), "--output", "stream-json"];
    args.extend(later.iter().flat_map(|prompt| ["--then", *prompt]));
    args.push(task);
    run(dir, &args, &[("DSH_PERMISSION_MODE", "danger-full-access")])
}

/// The session events of a `--output stream-json` run, and its result line.
pub fn stream_json(stdout: &str) -> (Vec<Value>, Value) {
    let lines: Vec<Value> = stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let result = lines
        .iter()
        .find(|line| line["type"] == "result")
        .cloned()
        .unwrap_or_else(|| panic!("no result line: {stdout}"));
    let events = lines
        .into_iter()
        .filter(|line| line["type"] == "session_event")
        .map(|line| line["event"].clone())
        .collect();
    (events, result)
}

/// The headless profile pointed at a fake DeepSeek server through a patch layer.
pub fn against(server: &FakeDeepSeek, dir: &TestDir, args: &[&str]) -> Output {
    against_with_env(server, dir, args, &[])
}

/// [`against`] with `envs` for the host too.
pub fn against_with_env(
    server: &FakeDeepSeek,
    dir: &TestDir,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Output {
    against_patched(server, dir, "", args, envs)
}

/// [`against_with_env`] with `rows` in the patch layer (see [`patched_args`]).
pub fn against_patched(
    server: &FakeDeepSeek,
    dir: &TestDir,
    rows: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Output {
    let mut all = patched_args(server, dir, rows);
    all.extend(args.iter().map(|arg| (*arg).to_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let mut envs = envs.to_vec();
    envs.push(("DEEPSEEK_API_KEY", "sk-test"));
    run_host_with_env(&dir.home(), &all, &envs)
}

/// The arguments of [`against`] before the runner's own: the patch layer (written), the
/// profile, the working directory `dir/work` (made) and the fake server's model.
pub fn against_args(server: &FakeDeepSeek, dir: &TestDir) -> Vec<String> {
    patched_args(server, dir, "")
}

/// [`against_args`] with `rows` after the fake server's endpoint in the patch layer: more patch
/// entries, or more lines of `llm-deepseek`'s config (at four spaces) followed by entries.
pub fn patched_args(server: &FakeDeepSeek, dir: &TestDir, rows: &str) -> Vec<String> {
    patched_args_at(&server.url(), dir, rows)
}

/// [`patched_args`] against the model server at `url` (a fake of the test's own).
pub fn patched_args_at(url: &str, dir: &TestDir, rows: &str) -> Vec<String> {
    patched_args_on(url, dir, rows, "deepseek-official/deepseek-v4-flash")
}

/// [`patched_args_at`] on `model` (`PROVIDER/MODEL`); `rows` may go on the adapter's config
/// (`    models: ...`) as they follow its `baseURL`.
pub fn patched_args_on(url: &str, dir: &TestDir, rows: &str, model: &str) -> Vec<String> {
    let patch = dir.write(
        "fake.patch.yml",
        &format!("- id: llm-deepseek\n  config:\n    baseURL: {url}\n{rows}"),
    );
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    [
        "--patch",
        patch.to_str().unwrap(),
        "--profile",
        "headless",
        "--",
        "--cwd",
        work.to_str().unwrap(),
        "--model",
        model,
    ]
    .map(str::to_owned)
    .to_vec()
}
