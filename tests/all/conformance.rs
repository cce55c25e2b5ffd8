//! Replay conformance: recorded single-turn cases whose tools we have re-run through our loop
//! with `llm-replay`, the recording's task and workspace files, and must reproduce the recorded
//! durable sequence: the same turn, step, message, tool call and tool result events in order,
//! the same tool names and arguments, the same turn ending, and byte-equal result texts for
//! `bash`, `todo_write` and the `terminal_*` tools once the workspace path reads `{{cwd}}`, and
//! the same skill catalogs and loaded skill instructions.

use std::path::Path;

use dsh_tests::events::durable_types;
use dsh_tests::recorded::{hook_rows, hook_workspace, prompt_of_input, refused_before_any_step};
use dsh_tests::sessions::read_log;
use dsh_tests::skills::{recorded_skills, skills_seen};
use dsh_tests::{TestDir, run_host_with_env};
use serde_json::Value;

/// Cases we run, by folder under the fixtures.
const CASES: &[&str] = &[
    "acp/snapshots/bash-tool-turn",
    "acp/snapshots/fs-read",
    "acp/snapshots/fs-edit",
    "acp/snapshots/fs-write",
    "acp/snapshots/fs-delete-recreate",
    "acp/snapshots/fs-write-overwrite-bounded",
    "acp/snapshots/repeat-tool-reminder",
    "headless/snapshots/headless-profile",
    "acp/snapshots/fs-policy-reject",
    "acp/snapshots/fs-glob-sampling",
    "acp/snapshots/text-turn",
    "acp/snapshots/tool-call-turn",
    "acp/snapshots/workspace-edit",
    "acp/snapshots/session-sandbox-root",
    "jsonrpc/snapshots/bash-tool",
    "jsonrpc/snapshots/text-turn",
    "acp/snapshots/session-title-after-turn",
    "acp/snapshots/bash-spill",
    "headless/snapshots/compaction-recovery",
    "acp/snapshots/hook-cc-invalid-matcher",
    "acp/snapshots/hook-cc-posttool-block",
    "acp/snapshots/hook-cc-posttool-context",
    "acp/snapshots/hook-cc-pretool-ask",
    "acp/snapshots/hook-cc-pretool-deny",
    "acp/snapshots/hook-cc-promptsubmit-block",
    "acp/snapshots/hook-cc-promptsubmit-context",
    "acp/snapshots/hook-cc-stop-continue",
    "acp/snapshots/hook-codex-invalid-matcher",
    "acp/snapshots/hook-codex-posttool-block",
    "acp/snapshots/hook-codex-posttool-context",
    "acp/snapshots/hook-codex-pretool-block",
    "acp/snapshots/hook-codex-promptsubmit-block",
    "acp/snapshots/hook-codex-promptsubmit-context",
    "acp/snapshots/hook-codex-stop-continue",
    "acp/snapshots/skill-load",
    "headless/snapshots/pty-tools",
];

/// Per-case patch layers: the recording's own configuration where it differs from ours.
const PATCHES: &[(&str, &str)] = &[
    (
        "acp/snapshots/bash-spill",
        "- id: spill\n  config:\n    maxInlineBytes: 800\n",
    ),
    // The six terminal tools of `tool-pty`, results cut as the reference's scenario cuts them.
    (
        "headless/snapshots/pty-tools",
        "- insert:\n    - id: tool-pty\n      name: tool-pty\n      config:\n        tools: [terminal]\n        maxResultBytes: 64\n",
    ),
];

/// Writes a case's workspace files from its recording (its events, the workspace).
type Setup = fn(&[Value], &Path);

/// Per-case setup of the workspace from the recording, where its files are not in the fixture.
const SETUP: &[(&str, Setup)] = &[("acp/snapshots/skill-load", recorded_skills)];

/// Programs a case's recorded commands run; without them the case is skipped, saying so.
const REQUIRES: &[(&str, &str)] = &[("acp/snapshots/bash-spill", "node")];

/// Cases with our tools that we cannot run yet, and why.
const SKIPPED: &[(&str, &str)] = &[(
    "acp/snapshots/agent-instructions",
    "its instruction messages are the reference's agent-instructions plugin (baseline and change records with digests, re-entered through the inbox), and its log needs the fixture's test-only compaction plugin; ours reaches the model as system-prompt snapshots instead",
)];

/// Cases whose inbox splices are not compared, and why.
const INBOX_NOT_COMPARED: &[(&str, &str)] = &[(
    "acp/snapshots/repeat-tool-reminder",
    "its repeated-tool reminders are queued by a plugin we do not have",
)];

/// The durable events' types, the inbox's splices among them or not.
fn durable(events: &[Value], inbox: bool) -> Vec<String> {
    let mut kinds = durable_types(events);
    kinds.retain(|kind| inbox || kind != "agent/inbox/spliced");
    kinds
}

fn calls(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|event| event["type"] == "tool/call")
        .map(|event| {
            (
                event["data"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                event["data"]["arguments"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

/// `(tool name, result text)` of bash, todo_write and terminal results, in order.
fn compared_results(events: &[Value], cwd: &str) -> Vec<(String, String)> {
    let names: std::collections::HashMap<String, String> = events
        .iter()
        .filter(|event| event["type"] == "tool/call")
        .map(|event| {
            (
                event["data"]["callId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                event["data"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    events
        .iter()
        .filter(|event| event["type"] == "tool/result")
        .filter_map(|event| {
            let block = &event["data"]["message"]["content"][0];
            let name = names.get(block["toolCallId"].as_str()?)?.clone();
            if name != "bash" && name != "todo_write" && !name.starts_with("terminal_") {
                return None;
            }
            let text: String = block["content"]
                .as_array()?
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect();
            Some((name, normalize_spill(&text.replace(cwd, "{{cwd}}"))))
        })
        .collect()
}

/// A spilled result names a file outside the workspace, and the preview's size follows the
/// length of that path: compare its first and last 16 characters and the notice's wording,
/// with the count and the path as placeholders.
fn normalize_spill(text: &str) -> String {
    const STORED: &str = " Full formatted result stored at: ";
    const HINT: &str = ". Use read with offset/limit";
    let Some(at) = text.find("\n\n(Omitted ") else {
        return text.to_owned();
    };
    let (preview, notice) = text.split_at(at);
    let Some(hint) = notice.find(HINT).filter(|_| notice.contains(STORED)) else {
        return text.to_owned();
    };
    let chars: Vec<char> = preview.chars().collect();
    let head: String = chars.iter().take(16).collect();
    let tail: String = chars[chars.len().saturating_sub(16)..].iter().collect();
    format!(
        "{head}…{tail}\n\n(Omitted {{{{n}}}} bytes.{STORED}{{{{spill}}}}{}",
        &notice[hint..]
    )
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            // A checkout's files are its owner's to write; the shared fixtures are read-only,
            // and a confined command has no capability to write past that.
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode | 0o200))
                .unwrap();
        }
    }
}

/// Runs one case; `Err` lists every difference.
fn run_case(case: &str) -> Result<(), String> {
    let folder = dsh_tests::corpus_dir().join(case);
    let log = ["session.jsonl", "session.expected.jsonl"]
        .iter()
        .map(|name| folder.join(name))
        .find(|path| path.is_file())
        .ok_or("no session log")?;
    let (_, recorded) = read_log(&log);
    let task = recorded
        .iter()
        .find(|event| event["type"] == "user/message" && event["data"]["source"]["kind"] == "user")
        .and_then(|event| event["data"]["content"][0]["text"].as_str())
        .map(str::to_owned)
        .or_else(|| prompt_of_input(&folder))
        .ok_or("no user task in the recording")?;
    let mode = recorded
        .iter()
        .find(|event| event["type"] == "sandbox/mode")
        .and_then(|event| event["data"]["mode"].as_str())
        .unwrap_or("workspace-write")
        .to_owned();
    let dir = TestDir::new(&format!("conformance-{}", case.replace('/', "-")));
    // The recordings' own hook files applied in the reference without a trust step.
    dir.trust_projects();
    let patch: String = PATCHES
        .iter()
        .filter(|(name, _)| *name == case)
        .map(|(_, patch)| (*patch).to_owned())
        .chain(hook_rows(case))
        .collect();
    if !patch.is_empty() {
        dir.write("home/cordis.patch.yml", &patch);
    }
    let work = dir.join("work");
    if folder.join("workspace").is_dir() {
        copy_tree(&folder.join("workspace"), &work);
    }
    std::fs::create_dir_all(&work).unwrap();
    hook_workspace(case, &work);
    if let Some((_, setup)) = SETUP.iter().find(|(name, _)| *name == case) {
        setup(&recorded, &work);
    }
    // The log and its override are read beside each other.
    let replay = dir.join("replay");
    std::fs::create_dir_all(&replay).unwrap();
    std::fs::copy(&log, replay.join("session.jsonl")).unwrap();
    if folder.join("replay.override.json").is_file() {
        std::fs::copy(
            folder.join("replay.override.json"),
            replay.join("replay.override.json"),
        )
        .unwrap();
    }
    let out = run_host_with_env(
        &dir.home(),
        &[
            "--profile",
            "headless",
            "--",
            "--cwd",
            work.to_str().unwrap(),
            "--replay",
            replay.join("session.jsonl").to_str().unwrap(),
            "--output",
            "stream-json",
            &task,
        ],
        &[
            ("DEEPSEEK_API_KEY", ""),
            ("DSH_PERMISSION_MODE", &mode),
            // The user's own ~/.agents/skills stay out of the catalog.
            ("DSH_AGENTS_HOME", dir.join("agents").to_str().unwrap()),
        ],
    );
    let ours: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == "session_event")
        .map(|line| line["event"].clone())
        .collect();
    if recorded.is_empty() {
        return refused_before_any_step(case, &ours, &out);
    }
    let mut problems = Vec::new();
    let inbox = !INBOX_NOT_COMPARED.iter().any(|(name, _)| *name == case);
    if durable(&ours, inbox) != durable(&recorded, inbox) {
        problems.push(format!(
            "durable events differ:\n  ours     {:?}\n  recorded {:?}",
            durable(&ours, inbox),
            durable(&recorded, inbox)
        ));
    }
    if calls(&ours) != calls(&recorded) {
        problems.push(format!(
            "tool calls differ:\n  ours     {:?}\n  recorded {:?}",
            calls(&ours),
            calls(&recorded)
        ));
    }
    let end = |events: &[Value]| {
        events
            .iter()
            .rev()
            .find(|event| event["type"] == "turn/end")
            .map(|event| event["data"]["reason"]["kind"].clone())
    };
    if end(&ours) != end(&recorded) {
        problems.push(format!(
            "turn end differs: ours {:?}, recorded {:?}",
            end(&ours),
            end(&recorded)
        ));
    }
    let ours_results = compared_results(&ours, work.canonicalize().unwrap().to_str().unwrap());
    let recorded_results = compared_results(&recorded, "{{cwd}}");
    if ours_results != recorded_results {
        problems.push(format!(
            "result texts (bash, todo_write, terminal_*) differ:\n  ours     {ours_results:?}\n  recorded {recorded_results:?}"
        ));
    }
    let (ours_skills, recorded_skills) = (skills_seen(&ours), skills_seen(&recorded));
    if ours_skills != recorded_skills {
        problems.push(format!(
            "skill catalogs or loaded instructions differ:\n  ours     {ours_skills:?}\n  recorded {recorded_skills:?}"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{case} (exit {:?}):\n{}\nstderr: {}",
            out.code,
            problems.join("\n"),
            out.stderr
        ))
    }
}

#[test]
fn recorded_single_turn_cases_replay_to_the_recorded_sequence() {
    dsh_tests::needs_corpus!("recorded_single_turn_cases_replay_to_the_recorded_sequence");
    for (case, reason) in SKIPPED {
        eprintln!("conformance: skipped {case}: {reason}");
    }
    for (case, reason) in INBOX_NOT_COMPARED {
        eprintln!("conformance: inbox splices of {case} not compared: {reason}");
    }
    let runnable = |case: &&&str| match REQUIRES.iter().find(|(name, _)| name == *case) {
        Some((_, program)) if !on_path(program) => {
            eprintln!(
                "conformance: skipped {case}: its recorded command runs `{program}`, which is not installed"
            );
            false
        }
        _ => true,
    };
    let failures: Vec<String> = CASES
        .iter()
        .filter(runnable)
        .filter_map(|case| run_case(case).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
