//! `session.trajectory`: the session's log read as a timeline of turns, steps and calls (the
//! page's Trajectory view). One pass over the events with their commit times; a turn or step
//! still open has no duration yet.

use std::collections::HashMap;

use dsh_client_protocol::{SessionRef, Trajectory, TrajectoryCall, TrajectoryStep, TrajectoryTurn};
use dsh_protocol::{
    AssistantMessageEvent, ContentBlock, MessageSource, StepStartEvent, ToolCallEvent,
    ToolResultEvent, ToolView, TurnEndEvent, TurnEndReason, TurnStartEvent, UserMessageEvent,
    kinds, text_of,
};
use dsh_sessions_seam::EventRecord;

use crate::api::{Api, Failure};
use crate::views::view;

/// Characters of a prompt kept in its turn's line.
const PROMPT_SHOWN: usize = 200;

fn span(from: i64, to: i64) -> Option<u64> {
    u64::try_from(to - from).ok()
}

/// What a call is about, on one line.
fn summary(name: &str, arguments: &str) -> String {
    let line = |text: &str| {
        text.lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(160)
            .collect()
    };
    match view(name, arguments, None) {
        ToolView::Terminal { command, .. } => line(&command),
        ToolView::Diff { path, .. } | ToolView::Read { path, .. } => path,
        ToolView::Search { pattern, .. } => pattern,
        ToolView::Subagent { label, prompt, .. } if label.is_empty() => line(&prompt),
        ToolView::Subagent { label, .. } => label,
        ToolView::Todo { items } => format!("{} items", items.len()),
        ToolView::Generic { .. } => line(arguments),
    }
}

/// The timeline of `records`.
pub(crate) fn trajectory(
    session_id: &str,
    records: &[abi_stable::std_types::RArc<EventRecord>],
) -> Trajectory {
    let mut turns: Vec<TrajectoryTurn> = Vec::new();
    let mut calls: HashMap<String, (usize, usize, usize, i64)> = HashMap::new();
    for record in records.iter() {
        let time = record.time;
        match record.kind.as_str() {
            kinds::USER_MESSAGE => {
                if let Some(Ok(UserMessageEvent(message))) = record.decode::<UserMessageEvent>()
                    && matches!(message.source, MessageSource::User { .. })
                {
                    let said: String = text_of(&message.content)
                        .chars()
                        .take(PROMPT_SHOWN)
                        .collect();
                    // A prompt is logged inside the turn it opens (a later one steers it).
                    if let Some(turn) = turns.last_mut()
                        && turn.prompt.is_empty()
                        && turn.outcome.is_none()
                    {
                        turn.prompt = said;
                    }
                }
            }
            kinds::TURN_START => {
                if let Some(Ok(start)) = record.decode::<TurnStartEvent>() {
                    turns.push(TrajectoryTurn {
                        turn: start.turn,
                        started_at: time,
                        ..TrajectoryTurn::default()
                    });
                }
            }
            kinds::STEP_START => {
                if let (Some(Ok(start)), Some(turn)) =
                    (record.decode::<StepStartEvent>(), turns.last_mut())
                {
                    turn.steps.push(TrajectoryStep {
                        step: start.step,
                        started_at: time,
                        ..TrajectoryStep::default()
                    });
                }
            }
            kinds::ASSISTANT_CHUNK => {
                if let Some(step) = turns.last_mut().and_then(|turn| turn.steps.last_mut())
                    && step.ttft_ms.is_none()
                    && step.duration_ms.is_none()
                {
                    step.ttft_ms = span(step.started_at, time);
                }
            }
            kinds::LLM_RETRY => {
                if let Some(step) = turns.last_mut().and_then(|turn| turn.steps.last_mut()) {
                    step.retries += 1;
                }
            }
            kinds::ASSISTANT_MESSAGE => {
                let Some(Ok(message)) = record.decode::<AssistantMessageEvent>() else {
                    continue;
                };
                let Some(step) = turns.last_mut().and_then(|turn| turn.steps.last_mut()) else {
                    continue;
                };
                step.duration_ms = span(step.started_at, time);
                if let Some(usage) = message.usage {
                    step.input_tokens += usage.input_tokens;
                    step.output_tokens += usage.output_tokens;
                    step.cache_read_tokens += usage.cache_read_tokens.unwrap_or(0);
                }
                for block in &message.message.content {
                    match block {
                        ContentBlock::Text { text } => {
                            step.text_chars += text.chars().count() as u64
                        }
                        ContentBlock::Reasoning { text } => {
                            step.reasoning_chars += text.chars().count() as u64;
                        }
                        _ => {}
                    }
                }
            }
            kinds::TOOL_CALL => {
                let Some(Ok(call)) = record.decode::<ToolCallEvent>() else {
                    continue;
                };
                let turn_at = turns.len().wrapping_sub(1);
                let Some(turn) = turns.last_mut() else {
                    continue;
                };
                let step_at = turn.steps.len().wrapping_sub(1);
                let Some(step) = turn.steps.last_mut() else {
                    continue;
                };
                calls.insert(
                    call.call_id.clone(),
                    (turn_at, step_at, step.calls.len(), time),
                );
                step.calls.push(TrajectoryCall {
                    summary: summary(&call.name, &call.arguments),
                    call_id: call.call_id,
                    name: call.name,
                    ok: None,
                    duration_ms: None,
                });
            }
            kinds::TOOL_RESULT => {
                let Some(Ok(result)) = record.decode::<ToolResultEvent>() else {
                    continue;
                };
                for block in &result.message.content {
                    let ContentBlock::ToolResult {
                        tool_call_id,
                        is_error,
                        ..
                    } = block
                    else {
                        continue;
                    };
                    let Some(&(turn, step, call, called)) = calls.get(tool_call_id) else {
                        continue;
                    };
                    if let Some(slot) = turns
                        .get_mut(turn)
                        .and_then(|turn| turn.steps.get_mut(step))
                        .and_then(|step| step.calls.get_mut(call))
                    {
                        slot.ok = Some(!is_error.unwrap_or(false) && result.error.is_none());
                        slot.duration_ms = span(called, time);
                    }
                }
            }
            kinds::TURN_END => {
                if let (Some(Ok(end)), Some(turn)) =
                    (record.decode::<TurnEndEvent>(), turns.last_mut())
                {
                    turn.duration_ms = span(turn.started_at, time);
                    turn.outcome = Some(outcome(&end.reason));
                }
            }
            _ => {}
        }
    }
    Trajectory {
        session_id: session_id.to_owned(),
        turns,
    }
}

fn outcome(reason: &TurnEndReason) -> String {
    match reason {
        TurnEndReason::Completed => "completed",
        TurnEndReason::Aborted { .. } => "aborted",
        TurnEndReason::Blocked { .. } => "blocked",
        TurnEndReason::Error { .. } => "error",
        TurnEndReason::MaxTokens => "max-tokens",
        TurnEndReason::Interrupted => "interrupted",
        TurnEndReason::Other(_) => "other",
    }
    .to_owned()
}

impl Api {
    /// `session.trajectory`: the session as a timeline.
    pub(crate) async fn trajectory(&self, request: SessionRef) -> Result<Trajectory, Failure> {
        let session = self.open_session(&request.session_id).await?;
        let records = session.events(0, session.event_count());
        Ok(trajectory(&request.session_id, &records))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use abi_stable::std_types::RArc;

    use super::trajectory;

    #[test]
    fn the_demo_reads_as_one_turn_of_two_steps_with_its_shell_call() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../demo/session.jsonl");
        let records: Vec<_> = crate::test_support::records(path)
            .into_iter()
            .map(RArc::new)
            .collect();
        let timeline = trajectory("s", &records);
        assert_eq!(timeline.turns.len(), 1, "{timeline:?}");
        let turn = &timeline.turns[0];
        assert!(!turn.prompt.is_empty());
        assert_eq!(turn.outcome.as_deref(), Some("completed"));
        assert_eq!(turn.steps.len(), 2, "{turn:?}");
        let call = &turn.steps[0].calls[0];
        assert_eq!(call.name, "bash");
        assert_eq!(call.ok, Some(true));
        assert!(!call.summary.is_empty());
        assert!(turn.steps.iter().all(|step| step.duration_ms.is_some()));
    }
}
