//! Tool replies as they cross the seam and the outcomes the pipeline works with.
//!
//! A reply that does not read as a [`ToolReply`] is the tool's bug and becomes an
//! `INVALID_TOOL_OUTPUT` failure naming the tool, never a pipeline error.

use dsh_plugin_api::Json;
use dsh_protocol::{OutcomeSummary, ToolError, ToolErrorInfo, ToolReply, ToolSuccess};
use dsh_tools_core::{ToolFailure, ToolOutcome};

/// The outcome a tool's reply stands for.
pub(crate) fn outcome_from_reply(tool: &str, reply: &Json<ToolReply>) -> ToolOutcome {
    match reply.decode() {
        Ok(ToolReply::Ok(success)) => {
            let mut outcome = ToolOutcome::success(success.value, success.content);
            if let Some(meta) = success.meta {
                outcome = outcome.with_meta(meta);
            }
            if success.concludes_turn {
                outcome = outcome.concluding_turn();
            }
            outcome
        }
        Ok(ToolReply::Error(error)) => {
            let info = match (error.name, error.code) {
                (Some(name), Some(code)) => Some(ToolErrorInfo::new(name, code)),
                (None, Some(code)) => Some(ToolErrorInfo::new("Error", code)),
                _ => None,
            };
            let failure = ToolFailure::tool(error.message, info);
            let outcome = match error.content {
                Some(content) => ToolOutcome::failure_with_content(failure, content),
                None => ToolOutcome::failure(failure),
            };
            match error.meta {
                Some(meta) => outcome.with_meta(meta),
                None => outcome,
            }
        }
        Err(problem) => ToolOutcome::failure(ToolFailure::invalid_output(
            tool,
            &[format!(
                "the reply of `{tool}` is not a tool reply: {problem}"
            )],
        )),
    }
}

/// A reply standing for `outcome` (the value is kept, so a wrapper that passes it on loses
/// nothing).
pub(crate) fn reply_from_outcome(outcome: &ToolOutcome) -> Json<ToolReply> {
    let content = outcome.content().to_vec();
    let reply = match outcome.as_failure() {
        Some(failure) => ToolReply::Error(ToolError {
            message: failure.message().to_owned(),
            name: failure.info().map(|info| info.name.clone()),
            code: failure.info().map(|info| info.code.clone()),
            content: Some(content),
            meta: outcome.meta().cloned(),
        }),
        None => ToolReply::Ok(ToolSuccess {
            value: outcome.value().cloned().unwrap_or_default(),
            content,
            meta: outcome.meta().cloned(),
            concludes_turn: outcome.concludes_turn(),
        }),
    };
    Json::encode(&reply)
}

/// What post-execute listeners and finalizers see.
pub(crate) fn outcome_summary(outcome: &ToolOutcome) -> Json<OutcomeSummary> {
    Json::encode(&OutcomeSummary {
        is_error: outcome.is_error(),
        content: outcome.content().to_vec(),
        code: outcome.error_info().map(|info| info.code.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_success_reply_round_trips() {
        let reply = Json::from_text(
            r#"{"ok":{"value":{"n":1},"content":[{"type":"text","text":"done"}],"meta":{"m":true}}}"#,
        );
        let outcome = outcome_from_reply("t", &reply);
        assert!(!outcome.is_error());
        assert_eq!(outcome.value(), Some(&json!({"n": 1})));
        assert_eq!(outcome.meta(), Some(&json!({"m": true})));
        let again = outcome_from_reply("t", &reply_from_outcome(&outcome));
        assert_eq!(again, outcome);
    }

    #[test]
    fn an_error_reply_keeps_its_code() {
        let outcome = outcome_from_reply(
            "read",
            &Json::from_text(
                r#"{"error":{"message":"no such file","name":"FsError","code":"FS_NOT_FOUND"}}"#,
            ),
        );
        assert!(outcome.is_error());
        assert_eq!(
            outcome.error_info().map(|info| info.code.as_str()),
            Some("FS_NOT_FOUND")
        );
        assert_eq!(
            serde_json::to_value(outcome.content()).unwrap(),
            json!([{"type":"text","text":"Error: no such file"}])
        );
    }

    #[test]
    fn a_malformed_reply_is_the_tools_invalid_output() {
        let outcome = outcome_from_reply("broken", &Json::from_text(r#"{"fine":true}"#));
        assert_eq!(
            outcome.error_info().map(|info| info.code.as_str()),
            Some("INVALID_TOOL_OUTPUT")
        );
        let text = serde_json::to_string(outcome.content()).unwrap();
        assert!(text.contains("broken"), "{text}");
    }
}
