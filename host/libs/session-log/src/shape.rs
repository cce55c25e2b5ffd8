//! The payload shape of the three message events. Checked when an event enters (append or load)
//! so projection never meets a message it cannot read: a derived history is either right or the
//! event was refused.

use dsh_protocol::kinds;
use serde::Deserialize;

use crate::error::Violation;
use crate::probe::{List, Member, Obj};
use dsh_protocol::SessionEvent;

/// The members of a logged message the check reads, borrowed from the event.
#[derive(Debug, Default, Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    id: Member<'a>,
    #[serde(default, borrow)]
    role: Member<'a>,
    #[serde(default, borrow)]
    source: Obj<Source<'a>>,
    #[serde(default, borrow)]
    content: List<Obj<Block<'a>>>,
}

/// `assistant/message` and `tool/result` data: the message sits in `message`.
#[derive(Debug, Default, Deserialize)]
struct Wrapped<'a> {
    #[serde(default, borrow)]
    message: Obj<Message<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct Source<'a> {
    #[serde(default, borrow)]
    kind: Member<'a>,
    #[serde(default, borrow)]
    provider: Member<'a>,
    #[serde(default, borrow)]
    model: Member<'a>,
    #[serde(rename = "callId", default, borrow)]
    call_id: Member<'a>,
}

/// A content block, as far as the tool-result rule looks into it.
#[derive(Debug, Default, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Member<'a>,
    #[serde(rename = "toolCallId", default, borrow)]
    tool_call_id: Member<'a>,
    #[serde(default, borrow)]
    content: Member<'a>,
}

fn shape(path: impl Into<String>, problem: &'static str) -> Violation {
    Violation::MessageShape {
        path: path.into(),
        problem,
    }
}

/// Where the message sits inside `data`, per type, read: `user/message` data *is* the message;
/// the other two wrap it as `data.message`. `None` for non-message types.
fn message_of(event: &SessionEvent) -> Option<(&'static str, Obj<Message<'_>>)> {
    // Reading cannot fail on any JSON (see `probe`); a failure reads as "not a message".
    let read = match event.kind.as_str() {
        kinds::USER_MESSAGE => ("$.data", Obj::deserialize(&event.data)),
        kinds::ASSISTANT_MESSAGE | kinds::TOOL_RESULT => (
            "$.data.message",
            Obj::<Wrapped<'_>>::deserialize(&event.data).map(|data| match data {
                Obj::Found(data) => data.message,
                _ => Obj::Absent,
            }),
        ),
        _ => return None,
    };
    Some((read.0, read.1.unwrap_or(Obj::Other)))
}

pub(crate) fn check_message_event(event: &SessionEvent) -> Result<(), Violation> {
    let Some((path, message)) = message_of(event) else {
        return Ok(());
    };
    let Obj::Found(message) = message else {
        return Err(shape(path, "must be a message object"));
    };
    if !message.id.is_non_empty_str() {
        return Err(shape(format!("{path}.id"), "must be a non-empty string"));
    }
    let role = if event.kind == kinds::ASSISTANT_MESSAGE {
        "assistant"
    } else {
        "user"
    };
    if message.role.as_str() != Some(role) {
        return Err(shape(
            format!("{path}.role"),
            if role == "user" {
                "must be \"user\""
            } else {
                "must be \"assistant\""
            },
        ));
    }
    let Some(source) = message.source.found().filter(|s| s.kind.is_non_empty_str()) else {
        return Err(shape(
            format!("{path}.source"),
            "must be an object with a non-empty kind",
        ));
    };
    let Some(content) = message.content.found() else {
        return Err(shape(format!("{path}.content"), "must be an array"));
    };
    match event.kind.as_str() {
        kinds::ASSISTANT_MESSAGE => {
            let model_source = source.kind.as_str() == Some("model")
                && source.provider.is_non_empty_str()
                && source.model.is_non_empty_str();
            if !model_source {
                return Err(shape(
                    format!("{path}.source"),
                    "must be a model source with provider and model",
                ));
            }
        }
        kinds::TOOL_RESULT => {
            let call_id = source
                .call_id
                .as_str()
                .filter(|id| !id.is_empty() && source.kind.as_str() == Some("tool"));
            let Some(call_id) = call_id else {
                return Err(shape(
                    format!("{path}.source"),
                    "must be a tool source with a callId",
                ));
            };
            let block = match content {
                [Obj::Found(block)] if block.kind.as_str() == Some("tool-result") => block,
                _ => {
                    return Err(shape(
                        format!("{path}.content"),
                        "must hold exactly one tool-result block",
                    ));
                }
            };
            if !block.content.is_array() {
                return Err(shape(
                    format!("{path}.content[0].content"),
                    "must be an array",
                ));
            }
            if block.tool_call_id != Member::Str(call_id) {
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
    use serde_json::{Value, json};

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
