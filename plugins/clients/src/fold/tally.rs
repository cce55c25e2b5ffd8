//! The cost of a session, tallied from its events' commit times as the fold reads them: per
//! turn (duration, time to the first token, streaming speed) and for the session (turns, steps,
//! model and tool time, tokens). Reference sessions recorded with zeroed times tally zeros.

use std::collections::HashMap;

use dsh_client_protocol::{SessionStats, TurnStats};
use dsh_protocol::{AssistantMessageEvent, ToolCallEvent, ToolResultEvent, kinds};
use dsh_sessions_seam::EventRecord;

#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    pub(crate) session: SessionStats,
    turn_started: Option<i64>,
    step_started: Option<i64>,
    /// The current step's first token, and the turn's.
    step_first_token: Option<i64>,
    turn_first_token: Option<i64>,
    turn_output: u64,
    turn_streaming_ms: i64,
    calls_started: HashMap<String, i64>,
}

fn millis(span: i64) -> u64 {
    u64::try_from(span.max(0)).unwrap_or(0)
}

impl Tally {
    /// Reads one event that needs no decoding (a model message, a tool call and a tool result
    /// come decoded, through [`Tally::message`], [`Tally::call`] and [`Tally::result`]: the fold
    /// decodes each once for both); `Some` when it changed the session's tally (sent to the
    /// page then, not on every chunk).
    pub(crate) fn observe(&mut self, record: &EventRecord) -> Option<SessionStats> {
        let time = record.time;
        match record.kind.as_str() {
            kinds::TURN_START => {
                self.turn_started = Some(time);
                self.turn_first_token = None;
                self.turn_output = 0;
                self.turn_streaming_ms = 0;
                None
            }
            kinds::STEP_START => {
                self.step_started = Some(time);
                self.step_first_token = None;
                self.session.steps += 1;
                Some(self.session.clone())
            }
            kinds::ASSISTANT_CHUNK => {
                // Any chunk after the request carries the first token's time well enough: the
                // adapters emit nothing before the provider answers.
                if self.step_first_token.is_none() {
                    self.step_first_token = Some(time);
                }
                if self.turn_first_token.is_none() {
                    self.turn_first_token = Some(time);
                }
                None
            }
            kinds::TURN_END => {
                self.session.turns += 1;
                Some(self.session.clone())
            }
            _ => None,
        }
    }

    /// A model message committed at `time`.
    pub(crate) fn message(
        &mut self,
        time: i64,
        message: &AssistantMessageEvent,
    ) -> Option<SessionStats> {
        if let Some(started) = self.step_started.take() {
            self.session.model_ms += millis(time - started);
        }
        if let Some(first) = self.step_first_token.take() {
            self.turn_streaming_ms += time - first;
        }
        if let Some(usage) = &message.usage {
            self.session.input_tokens += usage.input_tokens;
            self.session.output_tokens += usage.output_tokens;
            self.session.cache_read_tokens += usage.cache_read_tokens.unwrap_or(0);
            self.turn_output += usage.output_tokens;
        }
        Some(self.session.clone())
    }

    /// A tool call committed at `time`: its duration runs until its result.
    pub(crate) fn call(&mut self, time: i64, call: &ToolCallEvent) {
        self.calls_started.insert(call.call_id.clone(), time);
    }

    /// A tool result committed at `time`.
    pub(crate) fn result(&mut self, time: i64, result: &ToolResultEvent) -> Option<SessionStats> {
        let ids = result
            .message
            .content
            .iter()
            .filter_map(|block| match block {
                dsh_protocol::ContentBlock::ToolResult { tool_call_id, .. } => Some(tool_call_id),
                _ => None,
            });
        for id in ids {
            if let Some(started) = self.calls_started.remove(id) {
                self.session.tool_ms += millis(time - started);
            }
        }
        Some(self.session.clone())
    }

    /// The turn that just ended (after [`Tally::observe`] read its `turn/end` at `time`).
    pub(crate) fn turn_stats(&mut self, time: i64) -> Option<TurnStats> {
        let started = self.turn_started.take()?;
        let tokens_per_second = (self.turn_streaming_ms > 0 && self.turn_output > 0)
            .then(|| self.turn_output as f64 * 1000.0 / self.turn_streaming_ms as f64);
        Some(TurnStats {
            duration_ms: millis(time - started),
            ttft_ms: self.turn_first_token.map(|first| millis(first - started)),
            output_tokens: self.turn_output,
            tokens_per_second,
        })
    }
}
