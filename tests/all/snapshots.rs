//! insta snapshots of what the real binary prints: the composed headless config, the model
//! history derived from a recorded session, and the offline demo's `stream-json` output.
//!
//! Each output is made the same on every machine and every run before it is compared: the
//! paths of this machine (the test's directory, `$DSH_HOME` inside it, the checkout, `$HOME`)
//! become placeholders, and so do the demo's session id (also inside message ids) and times.
//! The snapshots live in `all/snapshots/`; `CI=true` makes insta fail on any difference instead
//! of writing a `.snap.new` (run `INSTA_UPDATE=always cargo test -p dsh-tests --test all --
//! snapshots::` to accept a change, then review the diff of the `.snap` files).

use std::path::PathBuf;

use dsh_tests::recorded::{DEMO_TASK, demo_log};
use dsh_tests::{TestDir, run_host, run_host_with_env, workspace_root};
use serde_json::Value;

/// Every machine-specific path `dir`'s run can print, with its placeholder; the longest first,
/// so a path inside another is replaced whole.
fn machine_paths(dir: &TestDir) -> Vec<(String, &'static str)> {
    let mut paths = vec![
        (dir.home(), "[DSH_HOME]"),
        (dir.path.clone(), "[TEST_DIR]"),
        (workspace_root(), "[WORKSPACE]"),
    ];
    if let Some(home) = std::env::var_os("HOME").filter(|home| home.len() > 1) {
        paths.push((PathBuf::from(home), "[HOME]"));
    }
    let mut paths: Vec<(String, &'static str)> = paths
        .into_iter()
        .map(|(path, placeholder)| (path.display().to_string(), placeholder))
        .collect();
    paths.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    // Not a path, but as much the machine's: which sandbox backend works here.
    for backend in ["bwrap", "landlock"] {
        paths.push((
            format!("(enforced by {backend})"),
            "(enforced by [BACKEND])",
        ));
    }
    paths
}

fn redact(text: &str, replacements: &[(String, &'static str)]) -> String {
    replacements
        .iter()
        .fold(text.to_owned(), |text, (from, to)| {
            text.replace(from.as_str(), to)
        })
}

#[test]
fn the_composed_headless_config() {
    let dir = TestDir::new("snap-dump-config");
    let out = run_host(&dir.home(), &["--profile", "headless", "--dump-config"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    insta::with_settings!({
        description => "dsh-host --profile headless --dump-config, in a fresh $DSH_HOME",
        omit_expression => true,
    }, {
        insta::assert_snapshot!("dump_config_headless", redact(&out.stdout, &machine_paths(&dir)));
    });
}

#[test]
fn the_history_derived_from_a_recorded_tool_round_trip() {
    let dir = TestDir::new("snap-derive");
    let log = dsh_tests::needs_corpus!("the_history_derived_from_a_recorded_tool_round_trip")
        .join("headless/snapshots/headless-profile/session.expected.jsonl");
    assert!(log.is_file(), "fixture missing: {}", log.display());
    let out = run_host(&dir.home(), &["session", "derive", log.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{out:?}");
    insta::with_settings!({
        description => "dsh-host session derive headless/snapshots/headless-profile/session.expected.jsonl",
        omit_expression => true,
    }, {
        insta::assert_snapshot!("derive_headless_profile", redact(&out.stdout, &machine_paths(&dir)));
    });
}

#[test]
fn the_offline_demo_as_stream_json() {
    let dir = TestDir::new("snap-demo");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let demo = demo_log();
    // As `cargo xtask run` runs it, but in a working directory of the test's own: the model is
    // shown the `AGENTS.md` files of the working directory and its parents, which differ
    // between checkouts.
    let out = run_host_with_env(
        &dir.home(),
        &[
            "--profile",
            "headless",
            "--",
            "--cwd",
            work.to_str().unwrap(),
            "--output",
            "stream-json",
            "--replay",
            demo.to_str().unwrap(),
            DEMO_TASK,
        ],
        &[("DEEPSEEK_API_KEY", "")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines = stable_stream(&out.stdout, &machine_paths(&dir));
    insta::with_settings!({
        description => "dsh-host --profile headless -- --output stream-json --replay demo/session.jsonl (the offline demo): each stdout line pretty-printed; session ids, times and paths redacted; the asynchronous session/title moved last",
        omit_expression => true,
    }, {
        insta::assert_snapshot!("demo_stream_json", lines);
    });
}

/// The `stream-json` lines of one run made comparable across runs: the session id (alone and
/// inside message ids), times and machine paths redacted, and `session/title` taken out of the
/// order. `session-title` appends the title from a spawned task, so where it lands among the
/// turn's events (and so the seqs after it) depends on scheduling; it is shown last, with its
/// seq redacted, and the seqs of the others, and every reference to them, are what they would
/// be without it.
fn stable_stream(stdout: &str, paths: &[(String, &'static str)]) -> String {
    let mut lines: Vec<Value> = stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not a stream-json line ({error}): {line}"))
        })
        .collect();
    let session = lines
        .first()
        .and_then(|line| line["sessionId"].as_str())
        .unwrap_or_else(|| panic!("no session id: {stdout}"))
        .to_owned();
    let mut replacements = paths.to_vec();
    replacements.push((session, "[SESSION]"));
    let title_at = lines
        .iter()
        .position(|line| line["event"]["type"] == "session/title");
    let title = title_at.map(|at| lines.remove(at));
    let title_seq = title
        .as_ref()
        .and_then(|line| line["event"]["seq"].as_u64());
    let shift = |seq: u64| match title_seq {
        Some(title) if seq > title => seq - 1,
        _ => seq,
    };
    if let Some(mut title) = title {
        title["event"]["seq"] = Value::from("[async]");
        let result_at = lines
            .iter()
            .position(|line| line["type"] == "result")
            .unwrap_or(lines.len());
        lines.insert(result_at, title);
    }
    lines
        .iter_mut()
        .map(|line| {
            stabilize(line, None, &shift, &replacements);
            serde_json::to_string_pretty(line).unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Redacts `value` in place; `key` is the name it sits under.
fn stabilize(
    value: &mut Value,
    key: Option<&str>,
    shift: &dyn Fn(u64) -> u64,
    replacements: &[(String, &'static str)],
) {
    match value {
        Value::Number(number) => match (key, number.as_u64()) {
            (Some("time"), _) => *value = Value::from("[time]"),
            (Some("seq" | "sourceEventSeqs" | "messageSeqs"), Some(seq)) => {
                *value = Value::from(shift(seq));
            }
            _ => {}
        },
        Value::String(text) => {
            // A tool result's message id ends with the seq of its `tool/call`.
            let text = match text
                .strip_prefix("tool-result-")
                .and_then(|rest| rest.rsplit_once('-'))
            {
                Some((call, seq)) => match seq.parse::<u64>() {
                    Ok(seq) => format!("tool-result-{call}-{}", shift(seq)),
                    Err(_) => text.clone(),
                },
                None => text.clone(),
            };
            *value = Value::from(redact(&text, replacements));
        }
        Value::Array(items) => {
            for item in items {
                stabilize(item, key, shift, replacements);
            }
        }
        Value::Object(map) => {
            for (name, item) in map.iter_mut() {
                stabilize(item, Some(name.as_str()), shift, replacements);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

#[test]
fn stable_stream_takes_the_title_out_of_the_order() {
    let line = |seq: u64, kind: &str, data: &str| {
        format!(
            r#"{{"type":"session_event","sessionId":"S-1","event":{{"type":"{kind}","seq":{seq},"time":17,"data":{data}}}}}"#
        )
    };
    let early = [
        line(0, "user/message", r#"{"id":"S-1-inbox-0"}"#),
        line(1, "session/title", r#"{"messageSeqs":[0]}"#),
        line(2, "tool/call", "{}"),
        line(
            3,
            "tool/result",
            r#"{"message":{"id":"tool-result-c-2"},"sourceEventSeqs":[2]}"#,
        ),
        r#"{"type":"result","sessionId":"S-1","output":"in /x/work"}"#.to_owned(),
    ];
    let late = [
        line(0, "user/message", r#"{"id":"S-1-inbox-0"}"#),
        line(1, "tool/call", "{}"),
        line(2, "session/title", r#"{"messageSeqs":[0]}"#),
        line(
            3,
            "tool/result",
            r#"{"message":{"id":"tool-result-c-1"},"sourceEventSeqs":[1]}"#,
        ),
        r#"{"type":"result","sessionId":"S-1","output":"in /x/work"}"#.to_owned(),
    ];
    let paths = [("/x".to_owned(), "[TEST_DIR]")];
    let stable = stable_stream(&early.join("\n"), &paths);
    assert_eq!(stable, stable_stream(&late.join("\n"), &paths));
    for expected in [
        r#""id": "[SESSION]-inbox-0""#,
        r#""id": "tool-result-c-1""#,
        r#""time": "[time]""#,
        r#""seq": "[async]""#,
        r#""output": "in [TEST_DIR]/work""#,
    ] {
        assert!(stable.contains(expected), "{expected} not in {stable}");
    }
    assert!(
        stable.find("session/title") > stable.find("tool/result"),
        "{stable}"
    );
}
