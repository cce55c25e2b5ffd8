//! What the parent's model reads about its children: a one-shot child's tool result and a
//! background child's settled notice, worded as the reference words them.

use dsh_protocol::{ContentBlock, ToolReply, TurnEndReason, TurnOutcome};

/// The tool result of a one-shot child's run.
pub(crate) fn one_shot_reply(outcome: Option<&TurnOutcome>) -> ToolReply {
    let Some(outcome) = outcome else {
        return ToolReply::error("subagent run failed: the child ran no turn");
    };
    let partial = |head: String| match outcome.output.is_empty() {
        true => head,
        false => format!(
            "{head}\nPartial output before the run ended:\n{}",
            outcome.output
        ),
    };
    match &outcome.reason {
        TurnEndReason::Completed => ToolReply::text(outcome.output.clone()),
        TurnEndReason::MaxTokens => ToolReply::error(partial(
            "subagent run hit its token limit before finishing".to_owned(),
        )),
        TurnEndReason::Error { error } => {
            ToolReply::error(partial(format!("subagent run failed: {}", error.message)))
        }
        TurnEndReason::Aborted { .. } => ToolReply::error(partial(
            "subagent run was cancelled before it finished".to_owned(),
        )),
        TurnEndReason::Blocked { reason } => ToolReply::error(partial(format!(
            "subagent run was blocked: {}",
            reason.as_deref().unwrap_or("a hook refused its step")
        ))),
        other => ToolReply::error(partial(format!(
            "subagent run ended `{}` before finishing",
            other.kind()
        ))),
    }
}

/// A settled background child's notice: its summary line and the message's content.
pub(crate) fn settled_notice(
    child: &str,
    outcome: Option<&TurnOutcome>,
) -> (String, Vec<ContentBlock>) {
    let summary = match outcome.map(|outcome| &outcome.reason) {
        Some(TurnEndReason::Completed) | None => format!(
            "Background subagent {child} finished and will do no further work unless you send it more."
        ),
        Some(TurnEndReason::Error { .. }) => {
            format!("Background subagent {child} failed before it finished.")
        }
        Some(TurnEndReason::MaxTokens) => {
            format!("Background subagent {child} hit its token limit before it finished.")
        }
        Some(TurnEndReason::Aborted { .. }) => {
            format!("Background subagent {child} was interrupted before it finished.")
        }
        Some(other) => format!(
            "Background subagent {child} stopped (`{}`) before it finished.",
            other.kind()
        ),
    };
    let mut content = vec![ContentBlock::text(summary.clone())];
    if let Some(output) = outcome
        .map(|outcome| outcome.output.as_str())
        .filter(|output| !output.is_empty())
    {
        content.push(ContentBlock::text("Its closing message:"));
        content.push(ContentBlock::text(output));
    }
    (summary, content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{LlmFailure, ToolReply};

    fn outcome(reason: TurnEndReason, output: &str) -> TurnOutcome {
        TurnOutcome {
            reason,
            output: output.to_owned(),
            ..TurnOutcome::unopened("c", TurnEndReason::Completed)
        }
    }

    fn error_text(reply: ToolReply) -> String {
        match reply {
            ToolReply::Error(error) => error.message,
            ToolReply::Ok(_) => panic!("not an error"),
        }
    }

    #[test]
    fn a_cut_off_child_reports_its_partial_output() {
        let reply = one_shot_reply(Some(&outcome(TurnEndReason::MaxTokens, "partial one")));
        assert_eq!(
            error_text(reply),
            "subagent run hit its token limit before finishing\nPartial output before the run ended:\npartial one"
        );
    }

    #[test]
    fn a_failed_background_child_says_so_with_its_last_words() {
        let failed = TurnEndReason::Error {
            error: LlmFailure::new(dsh_protocol::FailureCode::parse("UNKNOWN"), "disk full"),
        };
        let (summary, content) = settled_notice("c1", Some(&outcome(failed, "SECOND_OK")));
        assert_eq!(summary, "Background subagent c1 failed before it finished.");
        assert_eq!(content.len(), 3);
        assert_eq!(content[2], ContentBlock::text("SECOND_OK"));
    }
}
