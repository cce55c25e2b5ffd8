//! The replayed model through the real host, in the forms the reference's recordings use: an
//! override that patches the derived script, a throw after a prefix, `{{fromRequest:..}}`
//! placeholders, a replayed compaction summary, child scripts bound to live sessions by their
//! first call, and `paceMs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dsh_tests::events::of_type;
use dsh_tests::headless::{self, stream_json};
use dsh_tests::recorded::{DEMO_TASK, demo_log};
use dsh_tests::{HostProcess, TestDir, WAIT, plugin_lib};
use serde_json::{Value, json};

/// The chunks of one text answer.
fn answer(text: &str) -> Vec<Value> {
    vec![
        json!({"type": "block-start", "index": 0, "blockType": "text"}),
        json!({"type": "text-delta", "index": 0, "text": text}),
        json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": text}}),
        json!({"type": "finish", "reason": {"kind": "stop"}}),
    ]
}

/// A recorded log of `events` (type and data) after a header created at `created`.
fn write_log(path: &Path, created: i64, events: &[(&str, Value)]) {
    let mut lines = vec![
        json!({"type": "session", "version": 0, "id": format!("recorded-{created}"), "createdAt": created, "delegationDepth": 0})
            .to_string(),
    ];
    for (seq, (kind, data)) in events.iter().enumerate() {
        lines.push(
            json!({"type": kind, "seq": seq, "time": created + seq as i64, "data": data})
                .to_string(),
        );
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// A recorded log whose one model call answered `text`.
fn answering(path: &Path, created: i64, text: &str) {
    let events: Vec<(&str, Value)> = answer(text)
        .into_iter()
        .map(|chunk| {
            (
                "assistant/chunk",
                json!({"turn": 1, "step": 1, "chunk": chunk}),
            )
        })
        .collect();
    write_log(path, created, &events);
}

/// The shipped demo's recording (a bash call, then the answer) with `overrides` beside it.
fn demo_with(dir: &TestDir, overrides: &Value) -> PathBuf {
    let log = dir.join("replay/session.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::copy(demo_log(), &log).unwrap();
    dir.write("replay/replay.override.json", &overrides.to_string());
    log
}

fn replayed(dir: &TestDir, log: &Path, task: &str) -> (dsh_tests::Output, Vec<Value>, Value) {
    let out = headless::run(
        dir,
        &[
            "--replay",
            log.to_str().unwrap(),
            "--output",
            "stream-json",
            task,
        ],
        &[],
    );
    let (events, result) = stream_json(&out.stdout);
    (out, events, result)
}

/// `{"patches": ..}` keeps the derived script and swaps one call; the swapped answer takes
/// words from the live request.
#[test]
fn a_patch_swaps_one_recorded_answer_and_fills_it_from_the_request() {
    let dir = TestDir::new("replay-patch");
    let patched = answer("The shell says {{fromRequest:What is (\\d+ times \\d+)}} is 42.");
    let log = demo_with(
        &dir,
        &json!({"patches": [{"at": 1, "entry": {"kind": "chunks", "chunks": patched}}]}),
    );
    let (out, events, result) = replayed(&dir, &log, DEMO_TASK);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(result["output"], "The shell says 6 times 7 is 42.");
    // Call 0 is still the recording's: the bash call ran.
    assert_eq!(of_type(&events, "tool/call").len(), 1, "{events:?}");
    assert_eq!(of_type(&events, "tool/result").len(), 1);
}

/// A placeholder nothing in the request matches fails the call loudly instead of answering
/// with the raw template.
#[test]
fn a_placeholder_without_a_match_fails_the_call_naming_the_pattern() {
    let dir = TestDir::new("replay-no-match");
    let log = demo_with(
        &dir,
        &json!([{"kind": "chunks", "chunks": answer("{{fromRequest:no such (words)}}")}]),
    );
    let (out, events, _) = replayed(&dir, &log, DEMO_TASK);
    assert_eq!(out.code, Some(1), "{out:?}");
    let end = of_type(&events, "turn/end");
    let message = end[0]["data"]["reason"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("no such (words)"), "{message}");
    assert!(of_type(&events, "assistant/message").is_empty());
}

/// A transient `throw` injected at call 1 and its retry appended at call 2 (`at` equal to the
/// script's length): the retry answers in the same step, the thrown prefix stays the failed
/// attempt's.
#[test]
fn an_injected_transient_throw_is_retried_by_the_appended_entry() {
    let dir = TestDir::new("replay-throw-retry");
    dir.write(
        "home/cordis.patch.yml",
        "- id: llm-retry\n  config:\n    baseDelayMs: 20\n",
    );
    let prefix = &answer("The answer is")[..2];
    let log = demo_with(
        &dir,
        &json!({"patches": [
            {"at": 1, "entry": {"kind": "throw", "chunks": prefix, "message": "connection reset by peer", "code": "TRANSPORT"}},
            {"at": 2, "entry": {"kind": "chunks", "chunks": answer("RETRIED 42")}},
        ]}),
    );
    let (out, events, result) = replayed(&dir, &log, DEMO_TASK);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(result["output"], "RETRIED 42");
    let retries = of_type(&events, "llm/retry");
    assert_eq!(retries.len(), 1, "{events:?}");
    assert_eq!(retries[0]["data"]["failure"]["code"], "TRANSPORT");
    assert_eq!(
        retries[0]["data"]["failure"]["message"],
        "connection reset by peer"
    );
    // Two steps (the bash call, the answer) and no third: the retry stayed in step 2.
    assert_eq!(of_type(&events, "step/start").len(), 2);
    let messages = of_type(&events, "assistant/message");
    assert_eq!(messages.len(), 2);
    assert!(
        messages
            .iter()
            .all(|message| message["data"]["interrupted"] != true)
    );
}

/// A bare array replaces the script; a `throw` of a failure nobody retries ends the turn
/// `error` with its code and message, what it streamed kept as an interrupted message.
#[test]
fn a_fatal_throw_ends_the_turn_with_its_code_and_keeps_the_prefix() {
    let dir = TestDir::new("replay-throw-fatal");
    let prefix = &answer("half an answer")[..2];
    let log = demo_with(
        &dir,
        &json!([{"kind": "throw", "chunks": prefix, "message": "the key was revoked", "code": "AUTH"}]),
    );
    let (out, events, _) = replayed(&dir, &log, DEMO_TASK);
    assert_eq!(out.code, Some(1), "{out:?}");
    let end = of_type(&events, "turn/end");
    assert_eq!(
        end[0]["data"]["reason"],
        json!({"kind": "error", "error": {"message": "the key was revoked", "code": "AUTH"}})
    );
    let messages = of_type(&events, "assistant/message");
    assert_eq!(messages[0]["data"]["interrupted"], true);
    assert_eq!(
        messages[0]["data"]["message"]["content"][0]["text"],
        "half an answer"
    );
    assert!(of_type(&events, "llm/retry").is_empty());
}

/// A bad override stops the replay before anything is asked, naming the file and the entry.
#[test]
fn a_bad_override_names_its_file_and_entry() {
    let dir = TestDir::new("replay-bad-override");
    let log = demo_with(
        &dir,
        &json!({"patches": [{"at": 0, "entry": {"kind": "chunks", "chunks": [{"type": "shout"}]}}]}),
    );
    let out = headless::run(&dir, &["--replay", log.to_str().unwrap(), DEMO_TASK], &[]);
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains("replay.override.json") && out.stderr.contains("patches[0]"),
        "{}",
        out.stderr
    );
}

/// A `compaction/summary` made by a model call is replayed at its place as a whole stream.
#[test]
fn a_recorded_compaction_summary_is_replayed_as_a_stream() {
    let dir = TestDir::new("replay-summary");
    let log = dir.join("replay/session.jsonl");
    write_log(
        &log,
        1,
        &[
            (
                "compaction/summary",
                json!({"llmStreamCall": true, "rawOutput": [{"type": "text", "text": "SUMMARY: the user asked for 42."}], "usage": {"inputTokens": 120, "outputTokens": 9}}),
            ),
            // A summary written without a model call is not a call to replay.
            (
                "compaction/summary",
                json!({"llmStreamCall": false, "rawOutput": [{"type": "text", "text": "not asked"}]}),
            ),
        ],
    );
    let (out, events, result) = replayed(&dir, &log, "summarize");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(result["output"], "SUMMARY: the user asked for 42.");
    let usage: Vec<&Value> = of_type(&events, "assistant/chunk")
        .into_iter()
        .map(|event| &event["data"]["chunk"])
        .filter(|chunk| chunk["type"] == "usage")
        .collect();
    assert_eq!(usage[0]["usage"]["inputTokens"], 120, "{usage:?}");
}

/// The session logs under `root` (recursively) holding `needle`.
fn logs_holding(root: &Path, needle: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .map(|path| match path.is_dir() {
            true => logs_holding(&path, needle),
            false => std::fs::read_to_string(&path)
                .map(|text| usize::from(text.contains(needle)))
                .unwrap_or(0),
        })
        .sum()
}

/// Agents `ids` started in one host on the replay row `replay` (YAML config lines); answers the
/// log of each once every turn has ended.
fn agents_on_replay(dir: &TestDir, replay: &str, ids: &[&str]) -> Vec<String> {
    for lib in [
        "session",
        "session_persistence_jsonl",
        "llm",
        "llm_replay",
        "tools",
        "agent",
        "agent_loop",
        "agent_probe",
    ] {
        plugin_lib(lib);
    }
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let sessions = dir.home().join("sessions");
    let mut tree = format!(
        "- id: session\n  name: session\n- id: persistence\n  name: session-persistence-jsonl\n  config:\n    root: {}\n    compression: none\n- id: llm\n  name: llm\n- id: replay\n  name: llm-replay\n  config:\n{replay}- id: tools\n  name: tools\n- id: agent\n  name: agent\n- id: agent-loop\n  name: agent-loop\n",
        sessions.display()
    );
    for id in ids {
        tree.push_str(&format!(
            "- id: probe-{id}\n  name: agent-probe\n  inject: [llm_replay]\n  config:\n    agent: {id}\n    model: replay/replay\n    cwd: {}\n    followup: go\n",
            work.display()
        ));
    }
    let config = dir.write("tree.yml", &tree);
    let mut host = HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    let deadline = Instant::now() + WAIT;
    while logs_holding(&sessions, "\"turn/end\"") < ids.len() {
        assert!(
            Instant::now() < deadline,
            "the turns did not end: {:?}",
            host.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(host.stop(), Some(0), "{:?}", host.stderr());
    ids.iter()
        .map(|id| {
            find_log(&sessions, &format!("\"id\":\"{id}\""))
                .unwrap_or_else(|| panic!("no log of {id}"))
        })
        .collect()
}

/// Parent and child recordings are bound to live sessions by the order of their first calls:
/// each session gets a script of its own, and one session more than there are scripts fails
/// loud. (Which session's call comes first is a race here; the order itself is unit-tested.)
#[test]
fn child_scripts_bind_one_per_live_session() {
    let dir = TestDir::new("replay-children");
    let parent = dir.join("replay/session.jsonl");
    let child = dir.join("replay/session.1.jsonl");
    answering(&parent, 10, "FROM_THE_PARENT_SCRIPT");
    answering(&child, 20, "FROM_THE_CHILD_SCRIPT");
    let replay = format!(
        "    log: {}\n    childFiles: [{}]\n",
        parent.display(),
        child.display()
    );
    let outputs = agents_on_replay(&dir, &replay, &["a1", "a2", "a3"]);
    let holding = |needle: &str| outputs.iter().filter(|out| out.contains(needle)).count();
    assert_eq!(holding("FROM_THE_PARENT_SCRIPT"), 1, "{outputs:#?}");
    assert_eq!(holding("FROM_THE_CHILD_SCRIPT"), 1, "{outputs:#?}");
    assert_eq!(holding("is one more"), 1, "{outputs:#?}");
}

/// `paceMs` spaces the chunks of a replayed answer (as a slow model would), so a client can be
/// watched streaming.
#[test]
fn pace_spaces_the_replayed_chunks() {
    let dir = TestDir::new("replay-pace");
    let log = dir.join("replay/session.jsonl");
    answering(&log, 1, "SLOWLY");
    let replay = format!("    log: {}\n    paceMs: 150\n", log.display());
    let text = agents_on_replay(&dir, &replay, &["a1"]).remove(0);
    let time_of = |kind: &str| {
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|event| event["type"] == kind)
            .and_then(|event| event["time"].as_i64())
            .unwrap_or_else(|| panic!("no {kind}: {text}"))
    };
    // Four chunks, each 150 ms after the one before.
    let streaming = time_of("assistant/message") - time_of("request/context");
    assert!(streaming >= 550, "{streaming} ms: {text}");
}

/// The text of the first log under `root` holding `needle`.
fn find_log(root: &Path, needle: &str) -> Option<String> {
    let entries = std::fs::read_dir(root).ok()?;
    entries
        .flatten()
        .map(|entry| entry.path())
        .find_map(|path| {
            if path.is_dir() {
                return find_log(&path, needle);
            }
            std::fs::read_to_string(&path)
                .ok()
                .filter(|text| text.contains(needle))
        })
}
