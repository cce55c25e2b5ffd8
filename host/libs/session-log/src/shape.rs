//! The payload shape of the three message events. Checked when an event enters (append or load)
//! so projection never meets a message it cannot read: a derived history is either right or the
//! event was refused.

use dsh_protocol::kinds;
use serde_json::Value;

use crate::error::Violation;
use dsh_protocol::SessionEvent;

/// Where the message sits inside `data`, per type: `user/message` data *is* the message; the other
/// two wrap it as `data.message`. `None` for non-message types.
fn message_of<'a>(kind: &str, data: &'a Value) -> Option<(&'static str, Option<&'a Value>)> {
    match kind {
        kinds::USER_MESSAGE => Some(("$.data", Some(data))),
        kinds::ASSISTANT_MESSAGE | kinds::TOOL_RESULT => {
            Some(("$.data.message", data.get("message")))
        }
        _ => None,
    }
}

fn shape(path: impl Into<String>, problem: &'static str) -> Violation {
    Violation::MessageShape {
        path: path.into(),
        problem,
    }
}

fn non_empty_str(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

pub(crate) fn check_message_event(event: &SessionEvent) -> Result<(), Violation> {
    let Some((path, message)) = message_of(&event.kind, &event.data) else {
        return Ok(());
    };
    let Some(message) = message.filter(|m| m.is_object()) else {
        return Err(shape(path, "must be a message object"));
    };
    if !non_empty_str(message.get("id")) {
        return Err(shape(format!("{path}.id"), "must be a non-empty string"));
    }
    let role = if event.kind == kinds::ASSISTANT_MESSAGE {
        "assistant"
    } else {
        "user"
    };
    if message.get("role").and_then(Value::as_str) != Some(role) {
        return Err(shape(
            format!("{path}.role"),
            if role == "user" {
                "must be \"user\""
            } else {
                "must be \"assistant\""
            },
        ));
    }
    let source = message.get("source").filter(|s| s.is_object());
    let Some(source) = source.filter(|s| non_empty_str(s.get("kind"))) else {
        return Err(shape(
            format!("{path}.source"),
            "must be an object with a non-empty kind",
        ));
    };
    let Some(content) = message.get("content").and_then(Value::as_array) else {
        return Err(shape(format!("{path}.content"), "must be an array"));
    };
    match event.kind.as_str() {
        kinds::ASSISTANT_MESSAGE => {
            let model_source = source.get("kind").and_then(Value::as_str) == Some("model")
                && non_empty_str(source.get("provider"))
                && non_empty_str(source.get("model"));
            if !model_source {
                return Err(shape(
                    format!("{path}.source"),
                    "must be a model source with provider and model",
                ));
            }
        }
        kinds::TOOL_RESULT => {
            let call_id = source
                .get("callId")
                .filter(|_| source.get("kind").and_then(Value::as_str) == Some("tool"));
            if !non_empty_str(call_id) {
                return Err(shape(
                    format!("{path}.source"),
                    "must be a tool source with a callId",
                ));
            }
            let block = match content.as_slice() {
                [block] if block.get("type").and_then(Value::as_str) == Some("tool-result") => {
                    block
                }
                _ => {
                    return Err(shape(
                        format!("{path}.content"),
                        "must hold exactly one tool-result block",
                    ));
                }
            };
            if !block.get("content").is_some_and(Value::is_array) {
                return Err(shape(
                    format!("{path}.content[0].content"),
                    "must be an array",
                ));
            }
            if block.get("toolCallId") != call_id {
                return Err(shape(
                    format!("{path}.content[0].toolCallId"),
                    "must equal the source callId",
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(kind: &str, data: Value) -> SessionEvent {
        SessionEvent {
            kind: kind.into(),
            seq: 0,
            time: 0,
            data,
            surface_op: None,
            source_event_seqs: None,
            ignorable: None,
        }
    }

    fn problem(kind: &str, data: Value) -> String {
        match check_message_event(&ev(kind, data)) {
            Err(Violation::MessageShape { path, .. }) => path,
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    #[test]
    fn valid_messages_pass_and_other_types_are_not_checked() {
        let user = json!({"id":"u","role":"user","source":{"kind":"user"},"content":[]});
        assert!(check_message_event(&ev("user/message", user)).is_ok());
        let asst = json!({"turn":1,"step":1,"message":{"id":"a","role":"assistant",
            "source":{"kind":"model","provider":"p","model":"m"},"content":[]}});
        assert!(check_message_event(&ev("assistant/message", asst)).is_ok());
        assert!(check_message_event(&ev("turn/start", json!(null))).is_ok());
    }

    #[test]
    fn shape_errors_name_the_path() {
        assert_eq!(problem("user/message", json!([])), "$.data");
        assert_eq!(
            problem(
                "user/message",
                json!({"id":"","role":"user","source":{"kind":"u"},"content":[]})
            ),
            "$.data.id"
        );
        assert_eq!(
            problem(
                "user/message",
                json!({"id":"x","role":"assistant","source":{"kind":"u"},"content":[]})
            ),
            "$.data.role"
        );
        assert_eq!(
            problem(
                "assistant/message",
                json!({"message":{"id":"x","role":"assistant",
                "source":{"kind":"model","provider":"p"},"content":[]}})
            ),
            "$.data.message.source"
        );
        let tr = |content: Value| {
            json!({"message":{"id":"x","role":"user",
            "source":{"kind":"tool","callId":"c"},"content":content}})
        };
        assert_eq!(
            problem("tool/result", tr(json!([]))),
            "$.data.message.content"
        );
        assert_eq!(
            problem(
                "tool/result",
                tr(json!([{"type":"tool-result","toolCallId":"c","content":"x"}]))
            ),
            "$.data.message.content[0].content"
        );
        assert_eq!(
            problem(
                "tool/result",
                tr(json!([{"type":"tool-result","toolCallId":"d","content":[]}]))
            ),
            "$.data.message.content[0].toolCallId"
        );
        assert!(
            check_message_event(&ev(
                "tool/result",
                tr(json!([{"type":"tool-result","toolCallId":"c","content":[]}]))
            ))
            .is_ok()
        );
    }
}
