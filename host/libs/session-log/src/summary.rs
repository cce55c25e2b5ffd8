//! `session show`: what a log holds, at a glance.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::log::SessionLog;
use dsh_protocol::{
    AssistantChunkEvent, AssistantMessageEvent, RequestContextEvent, SessionEvent, StepStartEvent,
    TokenUsage, TurnEndEvent, TurnEndReason, TurnStartEvent,
};

/// One turn: where it starts and ends, how many steps it ran, why it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSummary {
    pub turn: u64,
    pub start_seq: u64,
    /// `None` while the turn is open.
    pub end_seq: Option<u64>,
    pub steps: u64,
    /// The logged `turn/end` reason, e.g. `{"kind":"aborted","reason":{"kind":"user"}}`.
    pub reason: Option<TurnEndReason>,
}

impl TurnSummary {
    /// `reason.kind` (`completed`, `aborted`, `blocked`, `error`, `max-tokens`, `interrupted`).
    pub fn reason_kind(&self) -> Option<&str> {
        self.reason.as_ref().map(TurnEndReason::kind)
    }
}

/// What the token meter reads of an `assistant/chunk`: a usage chunk's figures; any other
/// chunk is skipped unread (text deltas are most of a log).
#[derive(Deserialize)]
struct ChunkUsage {
    turn: u64,
    step: u64,
    chunk: UsageChunk,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum UsageChunk {
    Usage {
        usage: TokenUsage,
    },
    #[serde(other)]
    Other,
}

/// What the token meter reads of an `assistant/message`: its step and usage, not its content.
#[derive(Deserialize)]
struct MessageUsage {
    turn: u64,
    step: u64,
    #[serde(default)]
    usage: Option<TokenUsage>,
}

/// Counts, turns and usage of a log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogSummary {
    pub events: usize,
    pub by_type: BTreeMap<String, usize>,
    pub turns: Vec<TurnSummary>,
    /// How many turns ended with each `reason.kind`.
    pub end_reasons: BTreeMap<String, usize>,
    pub usage: TokenUsage,
    /// The token meter: the provider's input and output tokens of the latest answered request.
    pub last_request_tokens: Option<u64>,
    /// The model's window, from the latest `request/context` that named one.
    pub context_window: Option<u64>,
}

/// Summarizes `events`.
///
/// Token accounting follows the reference's token meter: each step's usage is sampled from its
/// `assistant/chunk {type: usage}` and from `assistant/message.usage`; a sample for the same
/// turn/step as the previous sample replaces it (the message repeats the chunk's figures, and
/// counting both would double the step), while a step whose request failed keeps the usage chunk
/// it got, as the only record that those tokens were spent.
pub fn summarize<E: AsRef<SessionEvent>>(events: &[E]) -> LogSummary {
    let mut by_type: BTreeMap<String, usize> = BTreeMap::new();
    let mut turns: Vec<TurnSummary> = Vec::new();
    let mut open: Option<usize> = None;
    let mut usage = TokenUsage::default();
    let mut last_sample: Option<((u64, u64), TokenUsage)> = None;
    let mut context_window = None;
    for event in events.iter().map(AsRef::as_ref) {
        *by_type.entry(event.kind.clone()).or_default() += 1;
        let mut sample = None;
        if let Some(context) = event.read::<RequestContextEvent>() {
            context_window = context.context_window.or(context_window);
        } else if let Some(started) = event.read::<TurnStartEvent>() {
            turns.push(TurnSummary {
                turn: started.turn,
                start_seq: event.seq,
                end_seq: None,
                steps: 0,
                reason: None,
            });
            open = Some(turns.len() - 1);
        } else if event.is::<StepStartEvent>() {
            if let Some(t) = open.and_then(|i| turns.get_mut(i)) {
                t.steps += 1;
            }
        } else if let Some(ended) = event.read::<TurnEndEvent>() {
            if let Some(t) = open.take().and_then(|i| turns.get_mut(i)) {
                t.end_seq = Some(event.seq);
                t.reason = Some(ended.reason);
            }
        } else if event.is::<AssistantChunkEvent>() {
            if let Ok(chunk) = ChunkUsage::deserialize(&event.data)
                && let UsageChunk::Usage { usage } = chunk.chunk
            {
                sample = Some(((chunk.turn, chunk.step), usage));
            }
        } else if event.is::<AssistantMessageEvent>()
            && let Ok(message) = MessageUsage::deserialize(&event.data)
            && let Some(usage) = message.usage
        {
            sample = Some(((message.turn, message.step), usage));
        }
        if let Some((key, sample)) = sample {
            let previous = last_sample
                .as_ref()
                .filter(|(k, _)| *k == key)
                .map(|(_, u)| *u);
            usage = usage
                .saturating_add(sample)
                .saturating_sub(previous.unwrap_or_default());
            last_sample = Some((key, sample));
        }
    }
    let mut end_reasons = BTreeMap::new();
    for kind in turns.iter().filter_map(TurnSummary::reason_kind) {
        *end_reasons.entry(kind.to_owned()).or_default() += 1;
    }
    LogSummary {
        events: events.len(),
        by_type,
        turns,
        end_reasons,
        usage,
        last_request_tokens: last_sample
            .map(|(_, sample)| sample.input_tokens + sample.output_tokens),
        context_window,
    }
}

impl SessionLog {
    /// [`summarize`] over this log's events.
    pub fn summary(&self) -> LogSummary {
        summarize(self.events())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ev(seq: u64, kind: &str, data: Value) -> SessionEvent {
        SessionEvent {
            kind: kind.into(),
            seq,
            time: 0,
            data,
            surface_op: None,
            source_event_seqs: None,
            ignorable: None,
        }
    }

    #[test]
    fn usage_chunk_and_message_for_one_step_count_once_and_failed_steps_keep_their_chunk() {
        let usage =
            |i: u64, o: u64| json!({"inputTokens": i, "outputTokens": o, "cacheReadTokens": 1});
        let events = vec![
            ev(0, "turn/start", json!({"turn": 1})),
            ev(1, "step/start", json!({"turn": 1, "step": 1})),
            ev(
                2,
                "assistant/chunk",
                json!({"turn":1,"step":1,"chunk":{"type":"usage","usage":usage(10,5)}}),
            ),
            ev(
                3,
                "assistant/message",
                json!({"turn":1,"step":1,"message":{},"usage":usage(10,5)}),
            ),
            ev(4, "step/end", json!({"turn": 1, "step": 1})),
            // Step 2's request failed: no message, the chunk is all there is.
            ev(5, "step/start", json!({"turn": 1, "step": 2})),
            ev(
                6,
                "assistant/chunk",
                json!({"turn":1,"step":2,"chunk":{"type":"usage","usage":usage(7,0)}}),
            ),
            ev(7, "step/end", json!({"turn": 1, "step": 2})),
            ev(
                8,
                "turn/end",
                json!({"turn": 1, "reason": {"kind": "error", "error": {"message": "x", "code": "UNKNOWN"}}}),
            ),
            ev(9, "turn/start", json!({"turn": 2})),
            // Message usage without a chunk is the fallback.
            ev(
                10,
                "assistant/message",
                json!({"turn":2,"step":1,"message":{},"usage":usage(1,1)}),
            ),
        ];
        let s = summarize(&events);
        assert_eq!(s.usage.input_tokens, 18);
        assert_eq!(s.usage.output_tokens, 6);
        assert_eq!(s.usage.cache_read_tokens, Some(3));
        assert_eq!(s.events, 11);
        assert_eq!(s.by_type["assistant/chunk"], 2);
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.turns[0].steps, 2);
        assert_eq!(s.turns[0].reason_kind(), Some("error"));
        assert_eq!(s.turns[1].end_seq, None);
        assert_eq!(s.end_reasons, BTreeMap::from([("error".to_owned(), 1)]));
    }
}
