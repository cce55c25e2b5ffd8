//! The recorded reference logs, read in place: every chunk, message, usage, failure and call
//! config they hold deserializes into our types and serializes back to the same JSON value, and
//! folding each recorded attempt's chunks reproduces the assistant message the reference logged.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] functions"
)]

use std::path::{Path, PathBuf};

use dsh_llm_kit::BlockAssembler;
use dsh_protocol::{
    CallConfigAdapterDefaults, ContentBlock, FinishReason, LlmCallConfig, LlmFailure, Message,
    StreamChunk, TokenUsage, ToolSchema,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn fixtures_dir() -> PathBuf {
    dsh_test_corpus::corpus().expect("the recorded corpus (the test checks for it first)")
}

fn walk(dir: &Path, keep: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, keep, out);
        } else if path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(keep)
        {
            out.push(path);
        }
    }
}

fn files(keep: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let dir = fixtures_dir();
    assert!(dir.is_dir(), "fixture corpus missing at {}", dir.display());
    let mut out = Vec::new();
    walk(&dir, keep, &mut out);
    out.sort();
    out
}

/// Every logged event of every `*.jsonl` (session logs and headless stream-json transcripts),
/// with packed chunk rows expanded back into `assistant/chunk` events.
fn events() -> Vec<(PathBuf, Value)> {
    let logs = files(&|name| name.ends_with(".jsonl"));
    assert!(
        logs.len() > 100,
        "expected the recorded corpus, found {}",
        logs.len()
    );
    let mut out = Vec::new();
    for path in logs {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let mut value: Value = serde_json::from_str(line).unwrap();
            if value["type"] == "session_event" {
                value = value["event"].take();
            }
            for event in unpack(value) {
                out.push((path.clone(), event));
            }
        }
    }
    out
}

/// A packed `text-chunks` / `reasoning-chunks` / `tool-call-chunks` row as its chunk events.
fn unpack(row: Value) -> Vec<Value> {
    let kind = match row["type"].as_str() {
        Some("text-chunks") => "text-delta",
        Some("reasoning-chunks") => "reasoning-delta",
        Some("tool-call-chunks") => "tool-call-delta",
        _ => return vec![row],
    };
    let data = &row["data"];
    let pieces = data["texts"]
        .as_array()
        .or(data["args"].as_array())
        .unwrap();
    pieces
        .iter()
        .map(|piece| {
            let chunk = if kind == "tool-call-delta" {
                let mut chunk = json!({"type": kind, "index": data["index"], "id": data["id"]});
                if !data["name"].is_null() {
                    chunk["name"] = data["name"].clone();
                }
                chunk["argumentsDelta"] = piece.clone();
                chunk
            } else {
                json!({"type": kind, "index": data["index"], "text": piece})
            };
            json!({"type": "assistant/chunk", "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk}})
        })
        .collect()
}

/// `value` parses as `T` and writes back as the same JSON value.
fn round_trip<T: DeserializeOwned + Serialize>(what: &str, path: &Path, value: &Value) -> T {
    let parsed: T = serde_json::from_value(value.clone()).unwrap_or_else(|error| {
        panic!("{}: {what} {value} does not parse: {error}", path.display())
    });
    let back = serde_json::to_value(&parsed).unwrap();
    assert_eq!(
        &back,
        value,
        "{}: {what} does not round-trip",
        path.display()
    );
    parsed
}

#[derive(Default)]
struct Counts {
    chunks: usize,
    messages: usize,
    configs: usize,
    failures: usize,
    usages: usize,
    tools: usize,
}

/// Hand-written replay scripts (`*replay.jsonl`) feed the replay adapter only: their messages
/// were never written by the reference (they have no ids), so only their chunks count.
fn is_replay_script(path: &Path) -> bool {
    path.to_string_lossy().ends_with("replay.jsonl")
}

#[test]
fn every_recorded_value_round_trips() {
    dsh_test_corpus::needs_corpus!("every_recorded_value_round_trips");
    let mut counts = Counts::default();
    for (path, event) in events() {
        let data = &event["data"];
        let kind = event["type"].as_str().unwrap_or_default();
        if is_replay_script(&path) && kind != "assistant/chunk" {
            continue;
        }
        match kind {
            "assistant/chunk" => {
                round_trip::<StreamChunk>("chunk", &path, &data["chunk"]);
                counts.chunks += 1;
            }
            "user/message" => {
                round_trip::<Message>("message", &path, data);
                counts.messages += 1;
            }
            "assistant/message" | "tool/result" => {
                round_trip::<Message>("message", &path, &data["message"]);
                counts.messages += 1;
                if !data["usage"].is_null() {
                    round_trip::<TokenUsage>("usage", &path, &data["usage"]);
                    counts.usages += 1;
                }
            }
            "agent/inbox/spliced" => {
                for message in data["inserted"].as_array().unwrap() {
                    round_trip::<Message>("message", &path, message);
                    counts.messages += 1;
                }
            }
            "request/header" => {
                let header = &data["header"];
                round_trip::<LlmCallConfig>("config", &path, &header["config"]);
                counts.configs += 1;
                if !header["adapterDefaults"].is_null() {
                    round_trip::<CallConfigAdapterDefaults>(
                        "adapterDefaults",
                        &path,
                        &header["adapterDefaults"],
                    );
                }
                // Placeholder-normalized logs carry "{{tools}}" instead of the array.
                if let Some(tools) = header["tools"].as_array() {
                    for tool in tools {
                        round_trip::<ToolSchema>("tool", &path, tool);
                        counts.tools += 1;
                    }
                }
            }
            "llm/retry" => {
                round_trip::<LlmFailure>("failure", &path, &data["failure"]);
                counts.failures += 1;
            }
            "turn/end" if data["reason"]["kind"] == "error" => {
                round_trip::<LlmFailure>("failure", &path, &data["reason"]["error"]);
                counts.failures += 1;
            }
            _ => {}
        }
    }
    for path in files(&|name| name == "replay.override.json") {
        let entries: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for entry in entries.as_array().unwrap() {
            for chunk in entry["chunks"].as_array().into_iter().flatten() {
                round_trip::<StreamChunk>("override chunk", &path, chunk);
                counts.chunks += 1;
            }
        }
    }
    assert!(counts.chunks > 2000, "chunks: {}", counts.chunks);
    assert!(counts.messages > 500, "messages: {}", counts.messages);
    assert!(counts.configs > 100, "configs: {}", counts.configs);
    assert!(counts.usages > 100, "usages: {}", counts.usages);
    assert!(counts.tools > 20, "tools: {}", counts.tools);
    assert!(counts.failures >= 4, "failures: {}", counts.failures);
}

/// An attempt ends at its `finish` chunk; the `assistant/message` that follows in the same turn
/// and step must hold exactly what the assembler folds from that attempt's chunks.
#[test]
fn assembling_recorded_attempts_reproduces_the_logged_messages() {
    dsh_test_corpus::needs_corpus!("assembling_recorded_attempts_reproduces_the_logged_messages");
    let mut assembler: Option<(PathBuf, Value, BlockAssembler)> = None;
    let mut finished: Option<(PathBuf, Value, BlockAssembler)> = None;
    let mut compared = 0;
    for (path, event) in events() {
        let data = &event["data"];
        let key = json!([data["turn"], data["step"]]);
        match event["type"].as_str().unwrap_or_default() {
            "session" => {
                assembler = None;
                finished = None;
            }
            "assistant/chunk" => {
                let chunk: StreamChunk = serde_json::from_value(data["chunk"].clone()).unwrap();
                let open = assembler
                    .take()
                    .filter(|(at, open_key, _)| *at == path && *open_key == key);
                let (_, _, mut current) =
                    open.unwrap_or_else(|| (path.clone(), key.clone(), BlockAssembler::new()));
                current.push(&chunk);
                if matches!(chunk, StreamChunk::Finish { .. }) {
                    finished = Some((path.clone(), key.clone(), current));
                } else {
                    assembler = Some((path.clone(), key.clone(), current));
                }
            }
            "assistant/message" => {
                let message: Message = serde_json::from_value(data["message"].clone()).unwrap();
                let interrupted = data["interrupted"] == true;
                let source = if interrupted {
                    assembler.take()
                } else {
                    finished.take()
                };
                let Some((at, attempt_key, attempt)) = source else {
                    continue;
                };
                if at != path || attempt_key != key {
                    continue;
                }
                let blocks: Vec<ContentBlock> = if interrupted {
                    attempt.interrupted_blocks()
                } else {
                    assert!(
                        !matches!(attempt.finish(), FinishReason::Error { .. }),
                        "{}: a message after an error finish",
                        path.display()
                    );
                    attempt.blocks().unwrap()
                };
                assert_eq!(
                    blocks,
                    message.content,
                    "{}: turn/step {key} assembled differently",
                    path.display()
                );
                if let Some(usage) = data.get("usage") {
                    assert_eq!(
                        attempt
                            .usage()
                            .map(|usage| serde_json::to_value(usage).unwrap()),
                        Some(usage.clone()),
                        "{}: usage of {key}",
                        path.display()
                    );
                }
                compared += 1;
            }
            _ => {}
        }
    }
    assert!(compared > 200, "compared only {compared} attempts");
}
