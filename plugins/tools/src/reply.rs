//! Tool replies as they cross the seam (JSON) and the outcomes the pipeline works with.
//!
//! A reply is `{"ok":{"value","content","meta"?,"concludesTurn"?}}` or
//! `{"error":{"message","name"?,"code"?,"content"?}}`; anything else is the tool's bug and
//! becomes an `INVALID_TOOL_OUTPUT` failure naming the tool, never a pipeline error.

use dsh_llm_api::ContentBlock;
use dsh_tools_core::{ToolErrorInfo, ToolFailure, ToolOutcome};
use serde_json::{Value, json};

/// The outcome a tool's reply stands for.
pub(crate) fn outcome_from_reply(tool: &str, reply: &str) -> ToolOutcome {
    match parse(tool, reply) {
        Ok(outcome) => outcome,
        Err(problem) => ToolOutcome::failure(ToolFailure::invalid_output(tool, &[problem])),
    }
}

fn parse(tool: &str, reply: &str) -> Result<ToolOutcome, String> {
    let value: Value =
        serde_json::from_str(reply).map_err(|error| format!("reply is not JSON: {error}"))?;
    if let Some(ok) = value.get("ok") {
        let content = content_of(ok.get("content"))?;
        let mut outcome =
            ToolOutcome::success(ok.get("value").cloned().unwrap_or(Value::Null), content);
        if let Some(meta) = ok.get("meta") {
            outcome = outcome.with_meta(meta.clone());
        }
        if ok.get("concludesTurn") == Some(&Value::Bool(true)) {
            outcome = outcome.concluding_turn();
        }
        return Ok(outcome);
    }
    if let Some(error) = value.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .ok_or("\"error.message\" must be a string")?;
        let info = match (
            error.get("name").and_then(Value::as_str),
            error.get("code").and_then(Value::as_str),
        ) {
            (Some(name), Some(code)) => Some(ToolErrorInfo::new(name, code)),
            (None, Some(code)) => Some(ToolErrorInfo::new("Error", code)),
            _ => None,
        };
        let failure = ToolFailure::tool(message, info);
        let outcome = match error.get("content") {
            Some(content) => ToolOutcome::failure_with_content(failure, content_of(Some(content))?),
            None => ToolOutcome::failure(failure),
        };
        return Ok(outcome);
    }
    Err(format!(
        "the reply of `{tool}` must have an \"ok\" or an \"error\" member"
    ))
}

fn content_of(content: Option<&Value>) -> Result<Vec<ContentBlock>, String> {
    match content {
        None => Ok(Vec::new()),
        Some(content) => serde_json::from_value(content.clone())
            .map_err(|error| format!("\"content\" is not a list of content blocks: {error}")),
    }
}

/// A reply standing for `outcome` (the value is kept, so a wrapper that passes it on loses
/// nothing).
pub(crate) fn reply_from_outcome(outcome: &ToolOutcome) -> String {
    let content = serde_json::to_value(outcome.content()).unwrap_or(Value::Null);
    let reply = match outcome.as_failure() {
        Some(failure) => {
            let mut error = json!({ "message": failure.message(), "content": content });
            if let Some(info) = failure.info() {
                error["name"] = json!(info.name);
                error["code"] = json!(info.code);
            }
            json!({ "error": error })
        }
        None => {
            let mut ok = json!({
                "value": outcome.value().cloned().unwrap_or(Value::Null),
                "content": content,
            });
            if let Some(meta) = outcome.meta() {
                ok["meta"] = meta.clone();
            }
            if outcome.concludes_turn() {
                ok["concludesTurn"] = json!(true);
            }
            json!({ "ok": ok })
        }
    };
    reply.to_string()
}

/// What post-execute listeners and finalizers see: `{"isError","content","code"?}`.
pub(crate) fn outcome_summary(outcome: &ToolOutcome) -> String {
    let mut summary = json!({
        "isError": outcome.is_error(),
        "content": serde_json::to_value(outcome.content()).unwrap_or(Value::Null),
    });
    if let Some(info) = outcome.error_info() {
        summary["code"] = json!(info.code);
    }
    summary.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_success_reply_round_trips() {
        let reply = r#"{"ok":{"value":{"n":1},"content":[{"type":"text","text":"done"}],"meta":{"m":true}}}"#;
        let outcome = outcome_from_reply("t", reply);
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
            r#"{"error":{"message":"no such file","name":"FsError","code":"FS_NOT_FOUND"}}"#,
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
        let outcome = outcome_from_reply("broken", r#"{"fine":true}"#);
        assert_eq!(
            outcome.error_info().map(|info| info.code.as_str()),
            Some("INVALID_TOOL_OUTPUT")
        );
        let text = serde_json::to_string(outcome.content()).unwrap();
        assert!(text.contains("broken"), "{text}");
    }
}
