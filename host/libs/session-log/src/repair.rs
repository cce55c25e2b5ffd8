//! Crash repair: the deterministic closers for a log that ends inside an open turn.
//!
//! Nothing is truncated: a long turn may hold a lot of real, already durable work. Instead the
//! interrupted execution is balanced: every tool call the model asked for gets an error result
//! (providers reject an assistant call without a result), then the open step and the turn close,
//! with `turn/end {reason: {kind: interrupted}}`, the one reason the loop itself never writes.
//! `compaction/*` brackets are never closed here: the end-seed marks them stale instead.

use dsh_protocol::{
    AssistantMessageEvent, ContentBlock, EventData, Message, MessageSource, SessionEvent,
    StepEndEvent, StepStartEvent, SurfaceOp, ToolCallEvent, ToolErrorInfo, ToolResultEvent,
    TurnEndEvent, TurnEndReason, TurnStartEvent,
};

use crate::log::{NewEvent, SessionLog};

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
    step: u64,
    call_seq: Option<u64>,
}

/// The closers for `log`, to append in order; empty when no turn is open.
pub fn interrupted_turn_closers(log: &SessionLog) -> Vec<NewEvent> {
    closers_for(log.events())
}

/// [`interrupted_turn_closers`] over plain events (e.g. a file being repaired before load).
/// Only the open turn's own events matter (every turn boundary starts the bookkeeping over),
/// so it finds that turn's start from the end and reads from there.
pub fn closers_for<E: AsRef<SessionEvent>>(events: &[E]) -> Vec<NewEvent> {
    let Some((turn, start)) = open_turn_in(events) else {
        return Vec::new();
    };
    let Some(last) = events.last().map(AsRef::as_ref) else {
        return Vec::new();
    };
    let tail = events
        .iter()
        .map(AsRef::as_ref)
        .skip_while(|event| event.seq < start);
    let mut open_step: Option<u64> = None;
    // In transcript order; reset at every step boundary so calls of an earlier, closed step can
    // never leak into the tail repair.
    let mut pending: Vec<PendingCall> = Vec::new();
    for event in tail {
        if let Some(started) = event.read::<StepStartEvent>() {
            open_step = Some(started.step);
        } else if event.is::<StepEndEvent>() {
            open_step = None;
            pending.clear();
        } else if let Some(message) = event.read::<AssistantMessageEvent>() {
            for block in &message.message.content {
                let ContentBlock::ToolCall { id, .. } = block else {
                    continue;
                };
                // A repeated id keeps its first position (insertion order) but starts over.
                match pending.iter_mut().find(|p| &p.call_id == id) {
                    Some(p) => {
                        p.step = message.step;
                        p.call_seq = None;
                    }
                    None => pending.push(PendingCall {
                        call_id: id.clone(),
                        step: message.step,
                        call_seq: None,
                    }),
                }
            }
        } else if let Some(call) = event.read::<ToolCallEvent>() {
            if let Some(p) = pending.iter_mut().find(|p| p.call_id == call.call_id) {
                p.call_seq = Some(event.seq);
            }
        } else if let Some(result) = event.read::<ToolResultEvent>()
            && let MessageSource::Tool { call_id, .. } = &result.message.source
        {
            pending.retain(|p| &p.call_id != call_id);
        }
    }
    // Closers continue the seqs and reuse the last real time: deterministic, and never a time
    // that did not happen.
    let time = last.time;
    let mut seq = last.seq + 1;
    let mut out = Vec::new();
    for call in pending {
        out.push(tool_result_closer(turn, call, seq, time));
        seq += 1;
    }
    if let Some(step) = open_step {
        out.push(typed(&StepEndEvent { turn, step }, time).at_seq(seq));
        seq += 1;
    }
    let end = TurnEndEvent {
        turn,
        reason: TurnEndReason::Interrupted,
    };
    out.push(typed(&end, time).at_seq(seq));
    out
}

/// A non-surface event of typed data.
fn typed<T: EventData>(data: &T, time: i64) -> NewEvent {
    NewEvent::new(T::KIND, to_value(data), time)
}

/// Typed event data as the log's value. The core event types serialize to JSON objects
/// without fail (no maps with non-string keys, no failing serializers).
fn to_value<T: EventData>(data: &T) -> serde_json::Value {
    serde_json::to_value(data).unwrap_or(serde_json::Value::Null)
}

fn tool_result_closer(turn: u64, call: PendingCall, seq: u64, time: i64) -> NewEvent {
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
    let result = ToolResultEvent {
        turn,
        step: call.step,
        message: Message::user(
            format!("interrupted-tool-result-{}-{seq}", call.call_id),
            vec![ContentBlock::ToolResult {
                tool_call_id: call.call_id.clone(),
                content: vec![ContentBlock::text(text)],
                is_error: Some(true),
            }],
            MessageSource::tool(call.call_id),
        ),
        error: Some(ToolErrorInfo::new(name, code)),
        meta: None,
    };
    let event = NewEvent::surface(
        ToolResultEvent::KIND,
        to_value(&result),
        SurfaceOp::append(),
        time,
    )
    .at_seq(seq);
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
    pub fn open_turn(&self) -> Option<(u64, u64)> {
        open_turn_in(self.events())
    }
}

/// The turn left open at the end of `events`: `(turn number, seq of its turn/start)`. Only the
/// last turn boundary matters, so this scans backwards.
pub(crate) fn open_turn_in<E: AsRef<SessionEvent>>(events: &[E]) -> Option<(u64, u64)> {
    let last = events
        .iter()
        .map(AsRef::as_ref)
        .rev()
        .find(|e| e.is::<TurnStartEvent>() || e.is::<TurnEndEvent>())?;
    let started = last.read::<TurnStartEvent>()?;
    Some((started.turn, last.seq))
}
