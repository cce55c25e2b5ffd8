//! Crash repair: the deterministic closers for a log that ends inside an open turn.
//!
//! Nothing is truncated: a long turn may hold a lot of real, already durable work. Instead the
//! interrupted execution is balanced: every tool call the model asked for gets an error result
//! (providers reject an assistant call without a result), then the open step and the turn close,
//! with `turn/end {reason: {kind: interrupted}}`, the one reason the loop itself never writes.
//! `compaction/*` brackets are never closed here: the end-seed marks them stale instead.

use serde_json::{Value, json};

use crate::log::{NewEvent, SessionLog};
use dsh_protocol::{SessionEvent, SurfaceOp};

/// Error code of a synthetic result for a call the model requested but the harness never
/// recorded as started (no `tool/call`): it did not run.
pub const TOOL_NOT_STARTED: &str = "TOOL_NOT_STARTED";
/// Error code of a synthetic result for a call recorded as started (`tool/call` logged) whose
/// result was never recorded: it may or may not have taken effect.
pub const TOOL_OUTCOME_UNKNOWN: &str = "TOOL_OUTCOME_UNKNOWN";

/// Model-visible text for an unknown outcome. Kept byte-identical to the reference because it is
/// recorded in the conformance corpus
/// (`headless/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl`).
pub const OUTCOME_UNKNOWN_TEXT: &str = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";

/// Model-visible text for a call that never started (no recorded reference text to match).
pub const NOT_STARTED_TEXT: &str = "The tool call was interrupted before it started, so it never ran. Retry it if it is still needed.";

#[derive(Debug)]
struct PendingCall {
    call_id: String,
    step: Value,
    call_seq: Option<u64>,
}

/// The closers for `log`, to append in order; empty when no turn is open.
pub fn interrupted_turn_closers(log: &SessionLog) -> Vec<NewEvent> {
    closers_for(log.events())
}

/// [`interrupted_turn_closers`] over plain events (e.g. a file being repaired before load).
pub fn closers_for<E: AsRef<SessionEvent>>(events: &[E]) -> Vec<NewEvent> {
    let mut open_turn: Option<Value> = None;
    let mut open_step: Option<Value> = None;
    // In transcript order; reset at every step and turn boundary so calls of an earlier, closed
    // step can never leak into the tail repair.
    let mut pending: Vec<PendingCall> = Vec::new();
    for event in events.iter().map(AsRef::as_ref) {
        let field = |k: &str| event.data.get(k).cloned().unwrap_or(Value::Null);
        match event.kind.as_str() {
            "turn/start" => {
                open_turn = Some(field("turn"));
                open_step = None;
                pending.clear();
            }
            "turn/end" => {
                open_turn = None;
                open_step = None;
                pending.clear();
            }
            "step/start" => open_step = Some(field("step")),
            "step/end" => {
                open_step = None;
                pending.clear();
            }
            "assistant/message" => {
                let blocks = event
                    .data
                    .pointer("/message/content")
                    .and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) != Some("tool-call") {
                        continue;
                    }
                    let Some(id) = block.get("id").and_then(Value::as_str) else {
                        continue;
                    };
                    // A repeated id keeps its first position (insertion order) but starts over.
                    match pending.iter_mut().find(|p| p.call_id == id) {
                        Some(p) => {
                            p.step = field("step");
                            p.call_seq = None;
                        }
                        None => pending.push(PendingCall {
                            call_id: id.to_owned(),
                            step: field("step"),
                            call_seq: None,
                        }),
                    }
                }
            }
            "tool/call" => {
                let id = event.data.get("callId").and_then(Value::as_str);
                if let Some(p) = pending.iter_mut().find(|p| Some(p.call_id.as_str()) == id) {
                    p.call_seq = Some(event.seq);
                }
            }
            "tool/result" => {
                let id = event
                    .data
                    .pointer("/message/source/callId")
                    .and_then(Value::as_str);
                pending.retain(|p| Some(p.call_id.as_str()) != id);
            }
            _ => {}
        }
    }
    let (Some(turn), Some(last)) = (open_turn, events.last().map(AsRef::as_ref)) else {
        return Vec::new();
    };
    // Closers continue the seqs and reuse the last real time: deterministic, and never a time
    // that did not happen.
    let time = last.time;
    let mut seq = last.seq + 1;
    let mut out = Vec::new();
    for call in pending {
        out.push(tool_result_closer(&turn, call, seq, time));
        seq += 1;
    }
    if let Some(step) = open_step {
        out.push(NewEvent::new("step/end", json!({"turn": turn, "step": step}), time).at_seq(seq));
        seq += 1;
    }
    out.push(
        NewEvent::new(
            "turn/end",
            json!({"turn": turn, "reason": {"kind": "interrupted"}}),
            time,
        )
        .at_seq(seq),
    );
    out
}

fn tool_result_closer(turn: &Value, call: PendingCall, seq: u64, time: i64) -> NewEvent {
    let started = call.call_seq.is_some();
    let (text, name, code) = if started {
        (
            OUTCOME_UNKNOWN_TEXT,
            "ToolOutcomeUnknownError",
            TOOL_OUTCOME_UNKNOWN,
        )
    } else {
        (NOT_STARTED_TEXT, "ToolNotStartedError", TOOL_NOT_STARTED)
    };
    let data = json!({
        "turn": turn,
        "step": call.step,
        "message": {
            "id": format!("interrupted-tool-result-{}-{seq}", call.call_id),
            "role": "user",
            "source": {"kind": "tool", "callId": call.call_id},
            "content": [{
                "type": "tool-result",
                "toolCallId": call.call_id,
                "isError": true,
                "content": [{"type": "text", "text": text}],
            }],
        },
        "error": {"name": name, "code": code},
    });
    let event = NewEvent::surface("tool/result", data, SurfaceOp::append(), time).at_seq(seq);
    match call.call_seq {
        Some(call_seq) => event.with_sources(vec![call_seq]),
        None => event,
    }
}

impl SessionLog {
    /// Appends the closers of an interrupted tail turn (cold sessions, on load). Returns the
    /// committed closers; none when no turn is open.
    pub fn repair_interrupted(
        &mut self,
    ) -> Result<Vec<std::sync::Arc<SessionEvent>>, crate::AppendError> {
        interrupted_turn_closers(self)
            .into_iter()
            .map(|e| self.append(e))
            .collect()
    }

    /// The open turn at the end of the log: `(turn number, seq of its turn/start)`.
    pub fn open_turn(&self) -> Option<(Value, u64)> {
        open_turn_in(self.events())
    }
}

/// The turn left open at the end of `events`: `(turn number, seq of its turn/start)`. Only the
/// last turn boundary matters, so this scans backwards.
pub(crate) fn open_turn_in<E: AsRef<SessionEvent>>(events: &[E]) -> Option<(Value, u64)> {
    let last = events
        .iter()
        .map(AsRef::as_ref)
        .rev()
        .find(|e| e.kind == "turn/start" || e.kind == "turn/end")?;
    (last.kind == "turn/start").then(|| {
        (
            last.data.get("turn").cloned().unwrap_or(Value::Null),
            last.seq,
        )
    })
}
