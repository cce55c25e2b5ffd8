//! Builders for event payloads shaped like the recorded logs, and the fixture reader.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_session_log::{
    NewEvent, SessionEvent, SessionLog, SurfaceOp, TypeRegistry, parse_lossless,
};
use serde_json::{Value, json};

pub(crate) fn registry() -> Arc<TypeRegistry> {
    Arc::new(TypeRegistry::new())
}

pub(crate) fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

pub(crate) fn call_block(id: &str) -> Value {
    json!({"type": "tool-call", "id": id, "name": "bash", "arguments": "{}"})
}

pub(crate) fn user_data(id: &str, t: &str) -> Value {
    json!({"content": [text(t)], "source": {"kind": "user"}, "role": "user", "id": id})
}

pub(crate) fn assistant_data(turn: u64, step: u64, content: Value) -> Value {
    json!({"turn": turn, "step": step, "message": {"role": "assistant", "content": content,
        "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
        "id": format!("a-{turn}-{step}")}})
}

pub(crate) fn tool_result_data(turn: u64, step: u64, call_id: &str, out: &str) -> Value {
    json!({"turn": turn, "step": step, "message": {"source": {"kind": "tool", "callId": call_id},
        "content": [{"type": "tool-result", "toolCallId": call_id, "content": [text(out)], "isError": false}],
        "role": "user", "id": format!("r-{call_id}")}})
}

/// A summary message replacing the surface from `start` to `end`, citing `sources`.
pub(crate) fn summary(start: u64, end: u64, sources: Vec<u64>) -> NewEvent {
    NewEvent::surface(
        "user/message",
        user_data("s", "summary"),
        SurfaceOp::replace(start, end),
        0,
    )
    .with_sources(sources)
}

/// Appends with terse calls; panics on a refused append (tests of refusals call `append`).
pub(crate) struct B {
    pub(crate) log: SessionLog,
    pub(crate) time: i64,
}

impl B {
    pub(crate) fn new() -> Self {
        Self {
            log: SessionLog::new(registry()),
            time: 1_000,
        }
    }

    pub(crate) fn push(&mut self, e: NewEvent) -> u64 {
        self.time += 1;
        let e = NewEvent {
            time: self.time,
            ..e
        };
        self.log.append(e).unwrap_or_else(|err| panic!("{err}")).seq
    }

    pub(crate) fn plain(&mut self, kind: &str, data: Value) -> u64 {
        self.push(NewEvent::new(kind, data, 0))
    }

    pub(crate) fn turn_start(&mut self, turn: u64) -> u64 {
        self.plain("turn/start", json!({"turn": turn}))
    }

    pub(crate) fn turn_end(&mut self, turn: u64, kind: &str) -> u64 {
        self.plain("turn/end", json!({"turn": turn, "reason": {"kind": kind}}))
    }

    pub(crate) fn step_start(&mut self, turn: u64, step: u64) -> u64 {
        self.plain("step/start", json!({"turn": turn, "step": step}))
    }

    pub(crate) fn step_end(&mut self, turn: u64, step: u64) -> u64 {
        self.plain("step/end", json!({"turn": turn, "step": step}))
    }

    pub(crate) fn user(&mut self, id: &str, t: &str) -> u64 {
        self.push(NewEvent::surface(
            "user/message",
            user_data(id, t),
            SurfaceOp::append(),
            0,
        ))
    }

    pub(crate) fn assistant(&mut self, turn: u64, step: u64, content: Value) -> u64 {
        self.push(NewEvent::surface(
            "assistant/message",
            assistant_data(turn, step, content),
            SurfaceOp::append(),
            0,
        ))
    }

    pub(crate) fn tool_call(&mut self, turn: u64, step: u64, call_id: &str) -> u64 {
        self.plain(
            "tool/call",
            json!({"turn": turn, "step": step, "callId": call_id, "name": "bash", "arguments": "{}"}),
        )
    }

    pub(crate) fn tool_result(
        &mut self,
        turn: u64,
        step: u64,
        call_id: &str,
        call_seq: u64,
    ) -> u64 {
        self.push(
            NewEvent::surface(
                "tool/result",
                tool_result_data(turn, step, call_id, "ok"),
                SurfaceOp::append(),
                0,
            )
            .with_sources(vec![call_seq]),
        )
    }
}

// ---- fixtures ----

pub(crate) fn fixture_root() -> PathBuf {
    dsh_test_corpus::corpus().expect("the recorded corpus (the test checks for it first)")
}

/// Every `session*.jsonl` under the fixture root, sorted.
pub(crate) fn fixture_logs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![fixture_root()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                dirs.push(path);
            } else if name.starts_with("session") && name.ends_with(".jsonl") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The header line and the events of a recorded log, packed chunk rows expanded (REFERENCE §6:
/// member k has seq `seq0 + k` and time `time0` plus the first k gaps).
pub(crate) fn read_fixture(path: &Path) -> (Value, Vec<SessionEvent>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = parse_lossless(lines.next().expect("header line")).unwrap();
    let mut events = Vec::new();
    for line in lines {
        let row = parse_lossless(line).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match row["type"].as_str() {
            Some(tag @ ("text-chunks" | "reasoning-chunks" | "tool-call-chunks")) => {
                expand(tag, &row, &mut events);
            }
            _ => events.push(
                serde_json::from_value(row).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            ),
        }
    }
    (header, events)
}

fn expand(tag: &str, row: &Value, out: &mut Vec<SessionEvent>) {
    let d = &row["data"];
    let members = d[if tag == "tool-call-chunks" {
        "args"
    } else {
        "texts"
    }]
    .as_array()
    .unwrap();
    let dt = d["dt"].as_array().unwrap();
    assert_eq!(dt.len() + 1, members.len());
    let mut time = row["time0"].as_i64().unwrap();
    for (k, member) in members.iter().enumerate() {
        if k > 0 {
            time += dt[k - 1].as_i64().unwrap();
        }
        let chunk = match tag {
            "text-chunks" => json!({"type": "text-delta", "index": d["index"], "text": member}),
            "reasoning-chunks" => {
                json!({"type": "reasoning-delta", "index": d["index"], "text": member})
            }
            _ => {
                let mut c = json!({"type": "tool-call-delta", "index": d["index"], "id": d["id"], "argumentsDelta": member});
                if let Some(name) = d.get("name") {
                    c["name"] = name.clone();
                }
                c
            }
        };
        out.push(SessionEvent {
            kind: "assistant/chunk".into(),
            seq: row["seq0"].as_u64().unwrap() + k as u64,
            time,
            data: json!({"turn": d["turn"], "step": d["step"], "chunk": chunk}),
            surface_op: None,
            source_event_seqs: None,
            ignorable: None,
        });
    }
}
