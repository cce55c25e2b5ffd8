//! Session log figures (ours only: the reference needs Node 22, which cannot run here): append
//! throughput in memory and through the store, the fsync cost of one batch, loading a
//! 100,000-event session, `derive_messages` after step 10 and after step 10,000, and our packed
//! size against the recorded fixtures.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use dsh_session_jsonl::{
    Encoding, SessionHeader, SessionWriter, WriterOptions, encode_lines, read_session,
};
use dsh_session_log::{NewEvent, SessionEvent, SessionLog, SurfaceOp, TypeRegistry};
use serde_json::json;

use crate::{median, report};

/// The events of step `step` of turn 1: a streamed answer (block, 20 deltas, usage, finish), the
/// assistant message, a tool call and its result. About 30 events, like a real tool step.
fn step_events(step: u64, time: i64) -> Vec<NewEvent> {
    let chunk = |chunk: serde_json::Value| {
        NewEvent::new(
            "assistant/chunk",
            json!({"turn": 1, "step": step, "chunk": chunk}),
            time,
        )
    };
    let mut events = vec![NewEvent::new(
        "step/start",
        json!({"turn": 1, "step": step}),
        time,
    )];
    events.push(chunk(
        json!({"type": "block-start", "index": 0, "blockType": "text"}),
    ));
    for index in 0..20 {
        events.push(chunk(
            json!({"type": "text-delta", "index": 0, "text": format!("word{index} ")}),
        ));
    }
    events.push(chunk(
        json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": "the answer"}}),
    ));
    events.push(chunk(
        json!({"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 20}}),
    ));
    events.push(chunk(
        json!({"type": "finish", "reason": {"kind": "tool-calls"}}),
    ));
    let call_id = format!("call-{step}");
    events.push(NewEvent::surface(
        "assistant/message",
        json!({"turn": 1, "step": step, "message": {"role": "assistant", "id": format!("a{step}"),
            "source": {"kind": "model", "provider": "p", "model": "m"},
            "content": [{"type": "text", "text": "the answer"},
                        {"type": "tool-call", "id": call_id, "name": "read", "arguments": "{\"file_path\":\"x\"}"}]}}),
        SurfaceOp::append(),
        time,
    ));
    events.push(NewEvent::new(
        "tool/call",
        json!({"turn": 1, "step": step, "callId": call_id, "name": "read", "arguments": "{\"file_path\":\"x\"}"}),
        time,
    ));
    events.push(NewEvent::surface(
        "tool/result",
        json!({"turn": 1, "step": step, "message": {"role": "user", "id": format!("r{step}"),
            "source": {"kind": "tool", "callId": call_id},
            "content": [{"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": "file contents"}], "isError": false}]}}),
        SurfaceOp::append(),
        time,
    ));
    events.push(NewEvent::new(
        "step/end",
        json!({"turn": 1, "step": step}),
        time,
    ));
    events
}

fn opening(log: &mut SessionLog) -> anyhow::Result<()> {
    let user = json!({"role": "user", "id": "u1", "source": {"kind": "user"}, "content": [{"type": "text", "text": "go"}]});
    log.append(NewEvent::new("turn/start", json!({"turn": 1}), 1))?;
    log.append(NewEvent::surface(
        "user/message",
        user,
        SurfaceOp::append(),
        1,
    ))?;
    Ok(())
}

/// A log of at least `target` events made of whole steps.
pub(crate) fn build_log(target: usize) -> anyhow::Result<SessionLog> {
    let mut log = SessionLog::new(Arc::new(TypeRegistry::new()));
    opening(&mut log)?;
    let mut step = 1;
    while log.len() < target {
        for event in step_events(step, 1) {
            log.append(event)?;
        }
        step += 1;
    }
    Ok(log)
}

fn scratch() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("dsh-bench-session-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub(crate) fn write_session(
    root: &Path,
    id: &str,
    events: &[SessionEvent],
    encoding: Encoding,
    batch: usize,
) -> anyhow::Result<PathBuf> {
    let options = WriterOptions {
        encoding,
        pack_chunks: true,
    };
    let mut writer = SessionWriter::create(root, SessionHeader::new(id, 1), options)?;
    for slice in events.chunks(batch) {
        writer.append(slice)?;
    }
    Ok(writer.path().to_path_buf())
}

pub(crate) fn run(fixtures: Option<&Path>) -> anyhow::Result<()> {
    // In-memory append rate (validation, surface, derive bookkeeping included).
    let started = Instant::now();
    let log = build_log(100_000)?;
    let per_second = log.len() as f64 / started.elapsed().as_secs_f64();
    report("session_log_append_in_memory", per_second, "events/s");

    let events: Vec<SessionEvent> = log.events().iter().map(|event| (**event).clone()).collect();
    let dir = scratch()?;
    for (encoding, name) in [(Encoding::Zstd, "zstd"), (Encoding::Raw, "raw")] {
        let root = dir.join(name);
        let started = Instant::now();
        let path = write_session(&root, "bench", &events, encoding, 1000)?;
        let rate = events.len() as f64 / started.elapsed().as_secs_f64();
        report(
            &format!("session_store_append_batched_{name}"),
            rate,
            "events/s",
        );
        let mut loads = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            let read = read_session(&path)?;
            let loaded = SessionLog::from_events(read.events, Arc::new(TypeRegistry::new()))?;
            std::hint::black_box(loaded.derive_messages().len());
            loads.push(started.elapsed().as_secs_f64() * 1e3);
        }
        report(&format!("session_load_100k_{name}"), median(loads), "ms");
    }
    // One tiny batch per append: what the fsync of a batch costs.
    let root = dir.join("fsync");
    let options = WriterOptions {
        encoding: Encoding::Raw,
        pack_chunks: true,
    };
    let mut writer = SessionWriter::create(&root, SessionHeader::new("fsync", 1), options)?;
    let mut samples = Vec::new();
    for event in events.iter().take(50) {
        let started = Instant::now();
        writer.append(std::slice::from_ref(event))?;
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    report("session_store_fsync_per_batch", median(samples), "ms");

    // derive_messages after one more step, at step 10 and at step 10,000.
    for steps in [10_u64, 10_000] {
        let mut log = SessionLog::new(Arc::new(TypeRegistry::new()));
        opening(&mut log)?;
        for step in 1..steps {
            for event in step_events(step, 1) {
                log.append(event)?;
            }
        }
        std::hint::black_box(log.derive_messages().len());
        let mut samples = Vec::new();
        for round in 0..20 {
            for event in step_events(steps + round, 1) {
                log.append(event)?;
            }
            let started = Instant::now();
            std::hint::black_box(log.derive_messages().len());
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
        report(
            &format!("session_derive_after_step_{steps}"),
            median(samples),
            "us",
        );
        // The request side of the model-visible check: hashing the history a request carries
        // (the log side is the rolling hash kept with the snapshot, read in O(1)).
        let values = log.derive_messages().to_values();
        let hashes: Vec<f64> = (0..9)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(dsh_session_log::messages_hash(&values));
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        report(
            &format!("visible_check_request_hash_step_{steps}"),
            median(hashes),
            "us",
        );
    }

    if let Some(fixtures) = fixtures {
        let (ours, theirs) = packed_sizes(fixtures)?;
        report("session_fixture_bytes", theirs as f64, "bytes");
        report("session_our_packed_bytes", ours as f64, "bytes");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Our packed raw encoding of every durable fixture log against the recorded file sizes.
fn packed_sizes(root: &Path) -> anyhow::Result<(u64, u64)> {
    let mut stack = vec![root.to_path_buf()];
    let (mut ours, mut theirs) = (0_u64, 0_u64);
    while let Some(dir) = stack.pop() {
        for entry in
            std::fs::read_dir(&dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?
        {
            let path = entry?.path();
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().to_string())
                .unwrap_or_default();
            if path.is_dir() {
                stack.push(path);
            } else if name.starts_with("session")
                && name.ends_with(".jsonl")
                && !path.to_string_lossy().contains("/ralph-loop/")
            {
                let Ok(read) = read_session(&path) else {
                    continue;
                };
                let lines = encode_lines(&read.events, true)?;
                ours += (read.header.to_line().len() + 1 + lines.len()) as u64;
                theirs += std::fs::metadata(&path)?.len();
            }
        }
    }
    Ok((ours, theirs))
}
