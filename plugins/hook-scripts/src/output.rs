//! What a hook's process said, as both formats read it: exit 2 blocks with stderr as the
//! reason; exit 0 may print a JSON object (`continue`, `stopReason`, `systemMessage`, the
//! legacy `decision: approve|block` with its `reason`, and `hookSpecificOutput` with
//! `permissionDecision: allow|deny|ask`, `permissionDecisionReason` and `additionalContext`);
//! any other end is an error that blocks nothing. The event-specific part counts only when its
//! `hookEventName` names the event that ran, so a hook written for one event cannot decide
//! another. The outputs of every hook that ran for one point fold into the most restrictive.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A hook's decision, as its output spelled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Approve,
    Block,
    Allow,
    Deny,
    Ask,
}

impl Decision {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Block => "block",
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }

    /// deny > ask > allow: block and deny are one rank, approve and allow another.
    fn rank(self) -> u8 {
        match self {
            Self::Deny | Self::Block => 3,
            Self::Ask => 2,
            Self::Approve | Self::Allow => 1,
        }
    }
}

/// One hook's decoded outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HookOutput {
    /// `None`: it did not exit by itself (it could not start, timed out, or was killed).
    pub(crate) exit_code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) decision: Option<Decision>,
    pub(crate) reason: Option<String>,
    pub(crate) continue_run: Option<bool>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) system_message: Option<String>,
    pub(crate) additional_context: Option<String>,
    pub(crate) updated_input: bool,
}

fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Printed {
    #[serde(default, rename = "continue", deserialize_with = "lenient")]
    continue_run: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    stop_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    system_message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    decision: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    hook_specific_output: Option<Specific>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Specific {
    #[serde(default, deserialize_with = "lenient")]
    hook_event_name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    permission_decision: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    permission_decision_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    additional_context: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    updated_input: Option<serde_json::Map<String, Value>>,
}

/// Decodes a run of a hook for event `point`.
pub(crate) fn decode(
    exit_code: Option<i32>,
    stdout: &str,
    stderr: &str,
    point: &str,
) -> HookOutput {
    let mut output = HookOutput {
        exit_code,
        stdout: stdout.trim().to_owned(),
        stderr: stderr.trim().to_owned(),
        ..HookOutput::default()
    };
    match exit_code {
        Some(2) => {
            output.decision = Some(Decision::Block);
            output.reason = Some(output.stderr.clone()).filter(|reason| !reason.is_empty());
        }
        // Other stdout is plain text, for the format to use or not; malformed JSON is too.
        Some(0) if output.stdout.starts_with('{') => {
            if let Ok(printed) = serde_json::from_str::<Printed>(&output.stdout) {
                apply(&mut output, printed, point);
            }
        }
        _ => {}
    }
    output
}

fn apply(output: &mut HookOutput, printed: Printed, point: &str) {
    output.continue_run = printed.continue_run;
    output.stop_reason = printed.stop_reason;
    output.system_message = printed.system_message;
    // Top level, only the legacy pair is a decision; allow/deny/ask there mean nothing.
    output.decision = match printed.decision.as_deref() {
        Some("approve") => Some(Decision::Approve),
        Some("block") => Some(Decision::Block),
        _ => None,
    };
    if printed.reason.is_some() {
        output.reason = printed.reason;
    }
    let Some(specific) = printed.hook_specific_output else {
        return;
    };
    if specific.hook_event_name.as_deref() != Some(point) {
        return;
    }
    let permission = match specific.permission_decision.as_deref() {
        Some("allow") => Some(Decision::Allow),
        Some("deny") => Some(Decision::Deny),
        Some("ask") => Some(Decision::Ask),
        _ => None,
    };
    if permission.is_some() {
        output.decision = permission;
    }
    if specific.permission_decision_reason.is_some() {
        output.reason = specific.permission_decision_reason;
    }
    output.additional_context = specific.additional_context;
    output.updated_input = specific.updated_input.is_some();
}

/// What every hook that ran for one point came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Merged {
    /// The strictest decision (`None`: nobody decided).
    pub(crate) decision: Option<Merge>,
    /// The reasons given with that decision, joined by blank lines.
    pub(crate) reason: Option<String>,
    /// Some hook asked to stop (`continue: false`); the first one's reason.
    pub(crate) stop: Option<Option<String>>,
    pub(crate) contexts: Vec<String>,
}

/// A folded decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Merge {
    Allow,
    Ask,
    Deny,
}

pub(crate) fn merge(outputs: &[HookOutput]) -> Merged {
    let top = outputs
        .iter()
        .filter_map(|output| output.decision.map(Decision::rank))
        .max()
        .unwrap_or(0);
    let reasons: Vec<&str> = outputs
        .iter()
        .filter(|output| top >= 2 && output.decision.map(Decision::rank) == Some(top))
        .filter_map(|output| output.reason.as_deref())
        .filter(|reason| !reason.is_empty())
        .collect();
    Merged {
        decision: match top {
            3 => Some(Merge::Deny),
            2 => Some(Merge::Ask),
            1 => Some(Merge::Allow),
            _ => None,
        },
        reason: (!reasons.is_empty()).then(|| reasons.join("\n\n")),
        stop: outputs
            .iter()
            .find(|output| output.continue_run == Some(false))
            .map(|output| output.stop_reason.clone()),
        contexts: outputs
            .iter()
            .filter_map(|output| output.additional_context.clone())
            .filter(|context| !context.is_empty())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_two_blocks_with_stderr_and_other_failures_block_nothing() {
        let blocked = decode(Some(2), "", " no bash here \n", "PreToolUse");
        assert_eq!(blocked.decision, Some(Decision::Block));
        assert_eq!(blocked.reason.as_deref(), Some("no bash here"));
        let failed = decode(Some(1), "{\"decision\":\"block\"}", "oops", "PreToolUse");
        assert_eq!(failed.decision, None);
        assert_eq!(decode(None, "", "timed out", "Stop").decision, None);
    }

    #[test]
    fn the_specific_decision_counts_only_for_its_own_event() {
        let text = r#"{"decision":"approve","hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check","additionalContext":"ctx"}}"#;
        let asked = decode(Some(0), text, "", "PreToolUse");
        assert_eq!(asked.decision, Some(Decision::Ask));
        assert_eq!(asked.reason.as_deref(), Some("check"));
        assert_eq!(asked.additional_context.as_deref(), Some("ctx"));
        let elsewhere = decode(Some(0), text, "", "PostToolUse");
        assert_eq!(elsewhere.decision, Some(Decision::Approve));
        assert_eq!(elsewhere.additional_context, None);
        // A top-level deny is no decision at all.
        let bogus = decode(Some(0), r#"{"decision":"deny"}"#, "", "Stop");
        assert_eq!(bogus.decision, None);
    }

    #[test]
    fn the_strictest_decision_wins_with_its_own_reasons() {
        let outputs = [
            decode(
                Some(0),
                r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"maybe"}}"#,
                "",
                "PreToolUse",
            ),
            decode(Some(2), "", "first", "PreToolUse"),
            decode(Some(2), "", "second", "PreToolUse"),
            decode(
                Some(0),
                r#"{"continue":false,"stopReason":"halt","hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"note"}}"#,
                "",
                "PreToolUse",
            ),
        ];
        let merged = merge(&outputs);
        assert_eq!(merged.decision, Some(Merge::Deny));
        assert_eq!(merged.reason.as_deref(), Some("first\n\nsecond"));
        assert_eq!(merged.stop, Some(Some("halt".into())));
        assert_eq!(merged.contexts, ["note"]);
        assert_eq!(merge(&[]), Merged::default());
    }
}
