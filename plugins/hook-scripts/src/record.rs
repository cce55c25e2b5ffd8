//! The log's record of each hook run inside a turn, as the reference writes it: `hook/invoked`
//! before the command starts, `hook/result` after, paired by `handlerId`. Both are log-only;
//! the decision recorded is the one the output spelled, else `stop` for `continue: false`, else
//! `pass`.

use dsh_protocol::EventData;
use dsh_protocol::kinds;
use serde::{Deserialize, Serialize};

use crate::output::HookOutput;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HookInvokedEvent {
    pub(crate) turn: u64,
    pub(crate) point: String,
    pub(crate) dialect: String,
    pub(crate) handler_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) matcher: Option<String>,
}

impl EventData for HookInvokedEvent {
    const KIND: &'static str = kinds::HOOK_INVOKED;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HookResultEvent {
    pub(crate) turn: u64,
    pub(crate) point: String,
    pub(crate) handler_id: String,
    pub(crate) decision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stderr_summary: Option<String>,
    pub(crate) duration_ms: f64,
}

impl EventData for HookResultEvent {
    const KIND: &'static str = kinds::HOOK_RESULT;
}

impl HookResultEvent {
    pub(crate) fn of(
        (turn, point, handler_id): (u64, &str, &str),
        output: &HookOutput,
        max_chars: usize,
        duration_ms: f64,
    ) -> Self {
        let decision = match (output.decision, output.continue_run) {
            (Some(decision), _) => decision.as_str(),
            (None, Some(false)) => "stop",
            (None, _) => "pass",
        };
        Self {
            turn,
            point: point.to_owned(),
            handler_id: handler_id.to_owned(),
            decision: decision.to_owned(),
            exit_code: output.exit_code,
            stderr_summary: summary(&output.stderr, max_chars),
            duration_ms,
        }
    }
}

/// `stderr` trimmed, cut at `max_chars` characters with an ellipsis; none when blank.
pub(crate) fn summary(stderr: &str, max_chars: usize) -> Option<String> {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        return None;
    }
    match trimmed.char_indices().nth(max_chars) {
        Some((cut, _)) => Some(format!("{}…", &trimmed[..cut])),
        None => Some(trimmed.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::decode;

    #[test]
    fn a_blocked_run_is_recorded_as_the_reference_writes_it() {
        let output = decode(Some(2), "", "bash is disabled\n", "PreToolUse");
        let event = HookResultEvent::of(
            (1, "PreToolUse", "claude-code:PreToolUse:1"),
            &output,
            500,
            3.5,
        );
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"turn":1,"point":"PreToolUse","handlerId":"claude-code:PreToolUse:1","decision":"block","exitCode":2,"stderrSummary":"bash is disabled","durationMs":3.5}"#
        );
    }

    #[test]
    fn a_long_stderr_is_cut_by_characters() {
        assert_eq!(summary("ééééé", 3).as_deref(), Some("ééé…"));
        assert_eq!(summary("  \n", 3), None);
    }
}
