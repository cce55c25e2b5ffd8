//! What the tests of recorded runs share: the reference's recorded bash round trip (replayed
//! as it is, with rows added, or made to hang in its first model request), the shipped demo and
//! its task, and what the conformance cases of the hook files need beyond their recording.
//! Every path into the recorded corpus assumes the caller checked for it (`needs_corpus!`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::headless::{self, stream_json};
use crate::{HostProcess, Output, TestDir, WAIT, corpus_dir, workspace_root};

/// The recorded bash round trip (`headless-profile`): one `bash` call, then the answer
/// `CLI tool round trip complete: CLI_TOOL_ROUND_TRIP`.
pub fn round_trip_log() -> PathBuf {
    corpus_dir().join("headless/snapshots/headless-profile/session.expected.jsonl")
}

/// The recorded round trip replayed with `rows` (YAML list items, indented under `- insert:`)
/// added by the home patch: the output, the logged events and the result line.
pub fn round_trip_with(
    name: &str,
    rows: &str,
    envs: &[(&str, &str)],
) -> (Output, Vec<Value>, Value) {
    let dir = TestDir::new(name);
    dir.write("home/cordis.patch.yml", &format!("- insert:\n{rows}"));
    let log = round_trip_log();
    let out = headless::run(
        &dir,
        &[
            "--replay",
            log.to_str().unwrap(),
            "--output",
            "stream-json",
            "go",
        ],
        envs,
    );
    let (events, result) = stream_json(&out.stdout);
    (out, events, result)
}

/// A copy of the recorded round trip under `dir/replay` whose first answer hangs, creating the
/// ready file first: the log to replay and the ready file.
pub fn hanging_replay(dir: &TestDir) -> (PathBuf, PathBuf) {
    let log = dir.write(
        "replay/session.jsonl",
        &std::fs::read_to_string(round_trip_log()).unwrap(),
    );
    let ready = dir.join("hanging");
    dir.write(
        "replay/replay.override.json",
        &json!([{"kind": "hang", "readyFile": ready}]).to_string(),
    );
    (log, ready)
}

/// Waits until the hanging replay was reached.
pub fn wait_until_hanging(host: &HostProcess, ready: &Path) {
    let deadline = Instant::now() + WAIT;
    while !ready.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        ready.exists(),
        "the replay never started: {:?}",
        host.stderr()
    );
}

/// The task `cargo xtask run` gives the demo (the words `demo/session.jsonl` was recorded with).
pub const DEMO_TASK: &str = "What is 6 times 7? Check it with the shell.";

/// The shipped demo's recording: a bash call, then the answer.
pub fn demo_log() -> PathBuf {
    workspace_root().join("demo/session.jsonl")
}

/// A hook case's rows: the reference's example read `hooks.json` (Claude Code) and
/// `codex-hooks.json` (Codex) from its launch directory, which was the workspace; the
/// `pretool-ask` session refused every approval (its runtime context says so). `None` for a
/// case that is not a hook case.
pub fn hook_rows(case: &str) -> Option<String> {
    let name = case.rsplit('/').next()?;
    if !name.starts_with("hook-cc-") && !name.starts_with("hook-codex-") {
        return None;
    }
    let mut rows = String::from(
        "- id: hooks-claude-code\n  config:\n    format: claude-code\n    files: [hooks.json]\n\
         - id: hooks-codex\n  config:\n    format: codex\n    files: [codex-hooks.json]\n",
    );
    if name == "hook-cc-pretool-ask" {
        rows.push_str("- id: approval\n  config:\n    policy: never\n");
    }
    Some(rows)
}

/// Files a case's hooks run that the fixture does not hold: `hook-cc-posttool-block` runs a
/// script that blocks the first result it sees with the recorded reason and passes the rest.
pub fn hook_workspace(case: &str, work: &Path) {
    if case.ends_with("/hook-cc-posttool-block") {
        std::fs::write(
            work.join("posttool-once.sh"),
            "# Blocks the first result, then lets results through.\n\
             [ -e .posttool-seen ] && exit 0\n\
             touch .posttool-seen\n\
             echo 'tool output rejected by policy: retry once' >&2\n\
             exit 2\n",
        )
        .unwrap();
    }
}

/// The prompt of a case's `input.json`, for recordings that logged none.
pub fn prompt_of_input(folder: &Path) -> Option<String> {
    let text = std::fs::read_to_string(folder.join("input.json")).ok()?;
    let input: Value = serde_json::from_str(&text).ok()?;
    input["steps"]
        .as_array()?
        .iter()
        .find(|step| step["op"] == "prompt")
        .and_then(|step| step["text"].as_str())
        .map(str::to_owned)
}

/// For a recording with no events (the reference refused the prompt before its turn opened and
/// harvested no log): whether ours refused it too, one turn, no step, ended `blocked`.
pub fn refused_before_any_step(case: &str, ours: &[Value], out: &Output) -> Result<(), String> {
    let kinds: Vec<&str> = ours.iter().filter_map(|e| e["type"].as_str()).collect();
    let end = ours
        .iter()
        .find(|event| event["type"] == "turn/end")
        .map(|event| event["data"]["reason"]["kind"].clone());
    if kinds.contains(&"step/start") || end != Some(Value::from("blocked")) {
        return Err(format!(
            "{case}: the recording refused the prompt before any step; ours ran {kinds:?} (exit {:?})\nstderr: {}",
            out.code, out.stderr
        ));
    }
    Ok(())
}
