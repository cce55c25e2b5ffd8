//! The agent tree through the real `dsh-host`: the reference's recorded delegation cases
//! replayed (each child served its own recorded script) with the parent's and every child's
//! durable events, calls, results and headers compared, and the tree's behaviour against the
//! fake DeepSeek server (children at once, a cancel that follows the parent, reports,
//! send_message and list_agents, a fork that inherits the conversation).

use dsh_tests::TestDir;
use dsh_tests::events::{calls_and_results, durable_types};
use dsh_tests::headless::replayed_run;
use dsh_tests::sessions::{PLAIN_STORE, read_log, stored_logs};
use serde_json::Value;

/// Recorded cases, replayed whole (a recording's later prompts follow with `--then`).
const CASES: &[&str] = &[
    "acp/snapshots/subagent-spawn-in-process",
    "acp/snapshots/subagent-multi",
    "acp/snapshots/subagent-parallel",
    "acp/snapshots/subagent-depth-two-rejection",
    "acp/snapshots/subagent-max-tokens-partial",
    "acp/snapshots/subagent-continuable-inheritance",
    "acp/snapshots/subagent-continuable",
    "acp/snapshots/subagent-fork-in-process",
    "acp/snapshots/subagent-mixed",
    "acp/snapshots/subagent-report",
    "acp/snapshots/subagent-list-agents",
    "acp/snapshots/subagent-child-question-rejection",
    "jsonrpc/snapshots/subagent-spawn-in-process",
];

/// Per-case patch layers: the recording's own configuration where it differs from ours.
/// The SDK recording's composition has no approval service and no runtime context of its own
/// (a child's delegation notice is its only section).
const PATCHES: &[(&str, &str)] = &[(
    "jsonrpc/snapshots/subagent-spawn-in-process",
    "- id: subagents\n  config:\n    backgroundByDefault: false\n- id: approval\n  disabled: true\n- id: system-prompt\n  config:\n    runtimeContext: false\n",
)];

/// Recorded cases not replayed, and why. (The `product-subagent-*` cases are in `products`.)
const SKIPPED: &[(&str, &str)] = &[(
    "acp/snapshots/subagent-published-run-failure",
    "it injects a failure into the reference's snapshot publisher, which we do not have",
)];

/// Cases where a background child settles while its parent may still be running: when its
/// notice lands (in the running turn, or as the next) and when the parent's messages reach the
/// child are matters of timing, so only the calls, their results and the notice's arrival are
/// compared, not the order of turns and splices.
const TIMING_DEPENDENT: &[(&str, &str)] = &[
    (
        "acp/snapshots/subagent-continuable",
        "besides the timing, the child's third turn fails inside the reference's snapshot store (a fault injected there)",
    ),
    (
        "acp/snapshots/subagent-continuable-inheritance",
        "timing only",
    ),
    ("acp/snapshots/subagent-report", "timing only"),
    ("acp/snapshots/subagent-list-agents", "timing only"),
];

/// Session ids are fresh in our run: a recorded id reads as `<id>` in both.
fn without_ids(lines: Vec<String>) -> Vec<String> {
    let uuid = |word: &str| {
        word.len() >= 36
            && word
                .chars()
                .filter(|c| *c != '"')
                .take(36)
                .all(|c| c.is_ascii_hexdigit() || c == '-')
    };
    lines
        .into_iter()
        .map(|line| {
            line.split(' ')
                .map(|word| if uuid(word) { "<id>" } else { word })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Adds what differs between `ours` and `recorded` to `problems` (the order of durable
/// events too, when it does not depend on timing).
fn compare(
    problems: &mut Vec<String>,
    what: &str,
    ours: &[Value],
    recorded: &[Value],
    ordered: bool,
) {
    if ordered && durable_types(ours) != durable_types(recorded) {
        problems.push(format!(
            "{what}: durable events differ:\n  ours     {:?}\n  recorded {:?}",
            durable_types(ours),
            durable_types(recorded)
        ));
    }
    let (mine, theirs) = (
        without_ids(calls_and_results(ours)),
        without_ids(calls_and_results(recorded)),
    );
    if mine != theirs {
        problems.push(format!(
            "{what}: calls and results differ:\n  ours     {mine:?}\n  recorded {theirs:?}"
        ));
    }
}

/// A child's opening: the types of its events from its own first turn (after a forked child's
/// seed) to its first `request/header` (its delegation's policy, its task's turn and splices,
/// its descriptor, its messages; a snapshot message with the names of its sections), without
/// the first-words title, whose place races the loop's appends, and without the preset events
/// the explicit `DSH_PERMISSION_MODE` of these runs causes (the recordings ran without one): the
/// startup preset, mode and approval policy, and the parent's preset and mode a child inherits.
fn opening(events: &[Value]) -> Vec<String> {
    let own = events
        .iter()
        .rposition(|event| event["type"] == "session/end-seed")
        .map_or(0, |seed_end| seed_end + 1);
    events[own..]
        .iter()
        .take_while(|event| event["type"] != "request/header")
        .filter(|event| {
            let kind = &event["type"];
            kind != "session/title"
                && kind != "permission/preset"
                && kind != "sandbox/mode"
                && (kind != "approval/policy" || event["data"]["source"] == "delegation")
        })
        .map(|event| {
            let kind = event["type"].as_str().unwrap_or_default();
            match event["data"]["source"]["sections"].as_array() {
                Some(sections) => {
                    let names: Vec<&str> = sections
                        .iter()
                        .filter_map(|section| section["name"].as_str())
                        .collect();
                    format!("{kind}[{}]", names.join(","))
                }
                None => kind.to_owned(),
            }
        })
        .collect()
}

fn run_case(case: &str) -> Result<(), String> {
    let folder = dsh_tests::corpus_dir().join(case);
    let (_, recorded) = read_log(&folder.join("session.jsonl"));
    let recorded_children: Vec<(Value, Vec<Value>)> = (1..)
        .map(|n| folder.join(format!("session.{n}.jsonl")))
        .take_while(|path| path.is_file())
        .map(|path| read_log(&path))
        .collect();
    // Each person's prompt of the recording, in order: the first is the task, the others
    // follow with --then once the one before has settled.
    let prompts: Vec<String> = recorded
        .iter()
        .filter(|event| {
            event["type"] == "user/message" && event["data"]["source"]["kind"] == "user"
        })
        .filter_map(|event| event["data"]["content"][0]["text"].as_str())
        .map(str::to_owned)
        .collect();
    let (task, later) = prompts
        .split_first()
        .ok_or("no user task in the recording")?;
    let dir = TestDir::new(&format!("subagents-{}", case.replace('/', "-")));
    let patch = PATCHES
        .iter()
        .find(|(name, _)| *name == case)
        .map_or("", |(_, patch)| patch);
    dir.write("home/cordis.patch.yml", &format!("{PLAIN_STORE}{patch}"));
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let replay = dir.join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    for entry in std::fs::read_dir(&folder).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("session") || name == "replay.override.json" {
            std::fs::copy(entry.path(), replay.join(&name)).unwrap();
        }
    }
    let tasks: Vec<&str> = std::iter::once(task)
        .chain(later)
        .map(String::as_str)
        .collect();
    let out = replayed_run(&dir, &replay.join("session.jsonl"), &tasks);
    let logs = stored_logs(&dir.home());
    let Some(((parent_header, ours), children)) = logs.split_first() else {
        return Err(format!(
            "{case}: nothing was stored\nstderr: {}",
            out.stderr
        ));
    };
    let mut problems = Vec::new();
    let ordered = !TIMING_DEPENDENT.iter().any(|(name, _)| *name == case);
    compare(&mut problems, "parent", ours, &recorded, ordered);
    let notices = |events: &[Value]| {
        events
            .iter()
            .filter(|event| {
                event["type"] == "user/message"
                    && event["data"]["source"]["kind"] == "subagent-settled"
            })
            .count()
    };
    // Where timing decides, a child that settled before more work reached it settles twice.
    let notices_differ = match ordered {
        true => notices(ours) != notices(&recorded),
        false => (notices(ours) == 0) != (notices(&recorded) == 0),
    };
    if notices_differ {
        problems.push(format!(
            "parent: {} settled notices reached the model, {} recorded",
            notices(ours),
            notices(&recorded)
        ));
    }
    if children.len() != recorded_children.len() {
        problems.push(format!(
            "{} children stored, {} recorded",
            children.len(),
            recorded_children.len()
        ));
    }
    for (index, ((header, events), (recorded_header, recorded_events))) in
        children.iter().zip(&recorded_children).enumerate()
    {
        compare(
            &mut problems,
            &format!("child {}", index + 1),
            events,
            recorded_events,
            ordered,
        );
        if ordered && opening(events) != opening(recorded_events) {
            problems.push(format!(
                "child {}: the opening differs:\n  ours     {:?}\n  recorded {:?}",
                index + 1,
                opening(events),
                opening(recorded_events)
            ));
        }
        for field in ["origin", "delegationDepth"] {
            if header[field] != recorded_header[field] {
                problems.push(format!(
                    "child {}: header {field} is {}, recorded {}",
                    index + 1,
                    header[field],
                    recorded_header[field]
                ));
            }
        }
        let parent_id = header["parentSession"].as_str().unwrap_or_default();
        let known = std::iter::once(parent_header)
            .chain(children.iter().map(|(header, _)| header))
            .any(|candidate| candidate["id"] == parent_id);
        if !known {
            problems.push(format!(
                "child {}: its parentSession `{parent_id}` is no session of the run",
                index + 1
            ));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{case} (exit {:?}):\n{}\nstderr: {}",
            out.code,
            problems.join("\n"),
            out.stderr
        )),
    }
}

#[test]
fn recorded_delegation_cases_replay_parent_and_children() {
    dsh_tests::needs_corpus!("recorded_delegation_cases_replay_parent_and_children");
    for (case, reason) in SKIPPED {
        eprintln!("subagents: skipped {case}: {reason}");
    }
    for (case, reason) in TIMING_DEPENDENT {
        eprintln!("subagents: order of turns in {case} not compared: {reason}");
    }
    let failures: Vec<String> = CASES
        .iter()
        .filter_map(|case| run_case(case).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The recorded headless settlement: the run does not end at the parent's first idle moment
/// but once its background child settled and the parent answered from the child's notice.
#[test]
fn headless_waits_for_a_background_child_and_answers_from_its_notice() {
    let folder = dsh_tests::needs_corpus!(
        "headless_waits_for_a_background_child_and_answers_from_its_notice"
    )
    .join("headless/snapshots/subagent-settlement");
    let dir = TestDir::new("subagents-settlement");
    let work = dir.join("work");
    let replay = dir.join("replay");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&replay).unwrap();
    for (from, to) in [
        ("parent.replay.jsonl", "session.jsonl"),
        ("child.replay.jsonl", "session.1.jsonl"),
        ("parent.override.json", "replay.override.json"),
    ] {
        std::fs::copy(folder.join(from), replay.join(to)).unwrap();
    }
    let expected: Vec<Value> = std::fs::read_to_string(folder.join("stream-json.expected.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let task = expected[0]["event"]["data"]["inserted"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = replayed_run(&dir, &replay.join("session.jsonl"), &[&task]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["output"], expected.last().unwrap()["output"]);
    let events: Vec<Value> = lines
        .iter()
        .filter(|line| line["type"] == "session_event")
        .map(|line| line["event"].clone())
        .collect();
    let recorded: Vec<Value> = expected
        .iter()
        .filter(|line| line["type"] == "session_event")
        .map(|line| line["event"].clone())
        .collect();
    assert_eq!(
        without_ids(calls_and_results(&events)),
        without_ids(calls_and_results(&recorded))
            .into_iter()
            .map(|line| line.replace("{{sessionId}}", "<id>"))
            .collect::<Vec<_>>()
    );
    let notice = events
        .iter()
        .find(|event| {
            event["type"] == "user/message" && event["data"]["source"]["kind"] == "subagent-settled"
        })
        .expect("the child's settled notice reached the model");
    assert_eq!(notice["data"]["content"][2]["text"], "CHILD_RESULT");
}
