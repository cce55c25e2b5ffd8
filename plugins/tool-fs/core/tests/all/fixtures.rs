//! Conformance against the recorded sessions in `shared/fixtures/dsh`: every recorded `read`,
//! `write`, `edit` and `todo_write` call is replayed, in log order, against a scratch copy of the
//! case's recorded `workspace/` with one observation record per session, and the result text,
//! `isError`, `meta` and `error` `{name, code}` must equal the recording after replacing the
//! scratch root with `{{cwd}}`.
//!
//! Two things are reconstructed rather than recorded, and say so: a file a recorded `read` saw
//! but the case's `workspace/` lacks is written from the recorded line window (synthetic input
//! shaped like the recording), and a file a recorded `read` reported missing is deleted first
//! (the recorded `bash rm` between the calls is not replayed). The one `glob` recording's tree
//! is not recorded at all; `glob_sampling_matches_the_recording` rebuilds a tree that yields it.

use std::path::{Path, PathBuf};

use dsh_tool_fs_core::{
    EditArgs, GlobArgs, Observations, ReadArgs, SandboxMode, SearchOptions, TodoWriteArgs,
    Workspace, WriteArgs, edit, glob, parse_args, read, todo_write, write, write_with,
};
use serde_json::Value;

use crate::common::Scratch;

/// The recorded corpus, or a counted skip of `test`.
fn fixtures(test: &str) -> Option<PathBuf> {
    let corpus = dsh_test_corpus::corpus();
    if corpus.is_none() {
        dsh_test_corpus::skip(test, dsh_test_corpus::CORPUS_ABSENT);
    }
    corpus
}

fn session_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            session_files(&path, out);
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("session") && n.ends_with(".jsonl"))
        {
            out.push(path);
        }
    }
}

fn events(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event.get("seq").is_some())
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

const TOOLS: [&str; 6] = ["read", "write", "edit", "glob", "grep", "todo_write"];

/// One replayed outcome in the recorded shape.
struct Outcome {
    text: String,
    is_error: bool,
    meta: Option<Value>,
    error: Option<Value>,
}

fn outcome_of<T>(
    result: Result<T, dsh_tool_fs_core::ToolError>,
    ok: impl FnOnce(T) -> (String, Option<Value>),
) -> Outcome {
    match result {
        Ok(value) => {
            let (text, meta) = ok(value);
            Outcome {
                text,
                is_error: false,
                meta,
                error: None,
            }
        }
        Err(error) => Outcome {
            text: error.model_text(),
            is_error: true,
            meta: None,
            error: error.info().map(|info| serde_json::to_value(info).unwrap()),
        },
    }
}

fn placeholder_value(s: &Scratch, value: Option<Value>) -> Option<Value> {
    value.map(|v| serde_json::from_str(&s.placeholder(&v.to_string())).unwrap())
}

/// Our `meta` as the reference records it: each diff hunk without the `oldStart`/`newStart`
/// we add (where the hunk starts, for a page's line numbers), which must be present.
fn without_hunk_starts(meta: Option<Value>) -> Option<Value> {
    let mut meta = meta?;
    if let Some(diffs) = meta.get_mut("diffs").and_then(Value::as_array_mut) {
        for diff in diffs {
            let diff = diff.as_object_mut().unwrap();
            assert!(
                diff.remove("oldStart")
                    .is_some_and(|n| n.as_u64() >= Some(1)),
                "{diff:?}"
            );
            assert!(
                diff.remove("newStart")
                    .is_some_and(|n| n.as_u64() >= Some(1)),
                "{diff:?}"
            );
        }
    }
    Some(meta)
}

/// The recorded text with a literal recorded workspace path (one case was not normalized)
/// replaced by `{{cwd}}`.
fn normalized_expectation(text: &str, file_path: Option<&str>) -> String {
    if text.contains("{{cwd}}") {
        return text.to_owned();
    }
    let (Some(file_path), Some(start)) = (file_path, text.find("<path>")) else {
        return text.to_owned();
    };
    let Some(end) = text.find("</path>") else {
        return text.to_owned();
    };
    let shown = &text[start + 6..end];
    match shown.strip_suffix(&format!("/{file_path}")) {
        Some(root) if root.starts_with('/') => text.replace(root, "{{cwd}}"),
        _ => text.to_owned(),
    }
}

#[test]
fn recorded_file_tool_results_replay_byte_for_byte() {
    let Some(root) = fixtures("recorded_file_tool_results_replay_byte_for_byte") else {
        return;
    };
    let mut files = Vec::new();
    session_files(&root, &mut files);
    let mut matched: Vec<String> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for file in files {
        let events = events(&file);
        let has_tool = events.iter().any(|e| {
            e["type"] == "tool/call" && TOOLS.contains(&e["data"]["name"].as_str().unwrap_or(""))
                || e["type"] == "tool/code-dispatch" && e["data"]["name"] == "read"
        });
        if !has_tool {
            continue;
        }
        let case_dir = file.parent().unwrap();
        let case = case_dir
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('/', "_");
        let s = Scratch::new(&case);
        if case_dir.join("workspace").is_dir() {
            copy_tree(&case_dir.join("workspace"), s.root());
        }
        let ws = Workspace::new(s.root()).with_mode(SandboxMode::DangerFullAccess);
        let record = Observations::new();
        let mut calls: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
        let mut last_todo_event: Option<Value> = None;
        for event in &events {
            let data = &event["data"];
            match event["type"].as_str().unwrap_or("") {
                "tool/call" => {
                    calls.insert(
                        data["callId"].as_str().unwrap_or("").to_owned(),
                        data.clone(),
                    );
                }
                "todo/write" => last_todo_event = Some(data.clone()),
                "tool/code-dispatch" if data["name"] == "read" => {
                    let args: ReadArgs = parse_args(&data["arguments"]).unwrap();
                    let got = read(&args, &ws, Some(&record)).unwrap();
                    assert_eq!(
                        s.placeholder(&got.text),
                        data["content"][0]["text"].as_str().unwrap(),
                        "{case} code-dispatch read"
                    );
                    matched.push(format!("{case} seq {} read (code-dispatch)", event["seq"]));
                }
                "tool/result" => {
                    let block = &data["message"]["content"][0];
                    let Some(call) = calls.get(block["toolCallId"].as_str().unwrap_or("")) else {
                        continue;
                    };
                    let name = call["name"].as_str().unwrap_or("");
                    if !TOOLS.contains(&name) {
                        continue;
                    }
                    let args: Value =
                        serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
                    let expected_text = block["content"][0]["text"].as_str().unwrap();
                    let expected_error = block["isError"].as_bool().unwrap_or(false);
                    let mut label = format!("{case} seq {} {name}", event["seq"]);
                    let got = match name {
                        "read" => {
                            let args: ReadArgs = parse_args(&args).unwrap();
                            if let Some(note) = prepare_read(&s, &ws, &args, data, expected_error) {
                                label.push_str(note);
                            }
                            outcome_of(read(&args, &ws, Some(&record)), |o| (o.text, Some(o.meta)))
                        }
                        "write" => {
                            let args: WriteArgs = parse_args(&args).unwrap();
                            // This case configures a 64-byte diff-basis bound (see its prompt).
                            let result = if case.contains("fs-write-overwrite-bounded") {
                                write_with(&args, &ws, Some(&record), 64)
                            } else {
                                write(&args, &ws, Some(&record))
                            };
                            outcome_of(result, |o| (o.text, Some(o.meta)))
                        }
                        "edit" => {
                            let args: EditArgs = parse_args(&args).unwrap();
                            outcome_of(edit(&args, &ws, Some(&record)), |o| (o.text, Some(o.meta)))
                        }
                        "todo_write" => {
                            let args: TodoWriteArgs = parse_args(&args).unwrap();
                            let out = todo_write(&args, true);
                            if let Ok(out) = &out {
                                assert_eq!(
                                    Some(&serde_json::to_value(&out.event).unwrap()),
                                    last_todo_event.as_ref(),
                                    "{label}: todo/write event data"
                                );
                            }
                            outcome_of(out, |o| (o.text, None))
                        }
                        _ => {
                            skipped.push(format!("{label}: the searched tree is not recorded (see glob_sampling_matches_the_recording)"));
                            continue;
                        }
                    };
                    let file_path = args.get("file_path").and_then(Value::as_str);
                    let expected = normalized_expectation(expected_text, file_path);
                    assert_eq!(s.placeholder(&got.text), expected, "{label}: text");
                    assert_eq!(got.is_error, expected_error, "{label}: isError");
                    let recorded_meta = data.get("meta").cloned();
                    let got_meta = without_hunk_starts(placeholder_value(&s, got.meta));
                    assert_eq!(got_meta, recorded_meta, "{label}: meta");
                    assert_eq!(got.error, data.get("error").cloned(), "{label}: error");
                    matched.push(label);
                }
                _ => {}
            }
        }
    }
    eprintln!(
        "matched byte for byte ({}):\n  {}",
        matched.len(),
        matched.join("\n  ")
    );
    eprintln!("skipped ({}):\n  {}", skipped.len(), skipped.join("\n  "));
    assert!(
        matched.len() >= 24,
        "expected the recorded calls to replay, matched {}",
        matched.len()
    );
}

/// Bring the scratch workspace in line with what a recorded `read` saw: a file it found but the
/// case's workspace lacks is written from the recorded window; a file it missed is removed.
fn prepare_read(
    s: &Scratch,
    ws: &Workspace,
    args: &ReadArgs,
    data: &Value,
    expected_error: bool,
) -> Option<&'static str> {
    let path = ws.root().join(&args.file_path);
    if expected_error {
        if data["error"]["code"] == "FS_NOT_FOUND" && path.exists() {
            std::fs::remove_file(&path).unwrap();
            return Some(" (after emulating the recorded `rm`)");
        }
        return None;
    }
    if path.exists() {
        return None;
    }
    let lines = data["meta"]["lines"].as_array().unwrap();
    let text: String = lines
        .iter()
        .map(|l| format!("{}\n", l["text"].as_str().unwrap()))
        .collect();
    s.write(&args.file_path, text);
    Some(" (file content synthesized from the recorded window)")
}

#[test]
fn glob_sampling_matches_the_recording() {
    let Some(root) = fixtures("glob_sampling_matches_the_recording") else {
        return;
    };
    let file = root.join("acp/snapshots/fs-glob-sampling/session.jsonl");
    let result = events(&file)
        .into_iter()
        .find(|e| e["type"] == "tool/result")
        .unwrap();
    let expected_text = result["data"]["message"]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let expected_meta = result["data"]["meta"].clone();
    // Eight files in six top-level entries; the first appearance in modification-time order is
    // archive, docs, src, test (the case configures four inline paths and sampling).
    let s = Scratch::new("glob-sampling");
    let files = [
        "tree/archive/a.ts",
        "tree/docs/guide.md",
        "tree/src/index.ts",
        "tree/test/spec.ts",
        "tree/README.md",
        "tree/package.json",
        "tree/src/util.ts",
        "tree/archive/b.ts",
    ];
    for (index, rel) in files.iter().enumerate() {
        s.write(rel, "x\n");
        s.set_mtime(rel, 1_700_000_000 + index as u64);
    }
    let options = SearchOptions {
        glob_max_results: 4,
        sample_over_cap_glob_results: true,
        ..SearchOptions::default()
    };
    let args = GlobArgs {
        pattern: "*".into(),
        path: Some("tree".into()),
    };
    let out = glob(&args, &Workspace::new(s.root()), &options).unwrap();
    assert_eq!(out.text, expected_text);
    assert_eq!(out.meta, expected_meta);
}
