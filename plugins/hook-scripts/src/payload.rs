//! What a hook reads on stdin: the common fields (`session_id`, `transcript_path`, `cwd`,
//! `hook_event_name`), then the event's own. Claude Code's input carries the tool's arguments
//! as the model wrote them; Codex's adds `model`, `permission_mode` and `turn_id`, gives the
//! tool input as `{command}` and has `null` where a value is unknown.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::config::Format;

/// The transcript path is not offered by the session store: Claude Code's hooks get an empty
/// string and Codex's `null`, as the reference sends when it has none.
#[derive(Serialize)]
pub(crate) struct Payload<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) transcript_path: Option<&'static str>,
    pub(crate) cwd: &'a str,
    pub(crate) hook_event_name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) permission_mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) turn_id: Option<String>,
    #[serde(flatten)]
    pub(crate) event: EventFields<'a>,
}

/// The fields of one event.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum EventFields<'a> {
    SessionStart {
        source: &'a str,
    },
    Prompt {
        prompt: String,
    },
    Tool {
        tool_name: &'a str,
        tool_input: ToolInput,
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_response: Option<String>,
    },
    /// Claude Code's SubagentStart and SubagentStop: the child's id and kind (ours have none:
    /// Claude Code's default kind), and for a stop whether a hook continued it.
    Subagent {
        agent_id: &'a str,
        agent_type: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop_hook_active: Option<bool>,
    },
    Stop {
        stop_hook_active: bool,
        /// Codex sends `null`; Claude Code leaves it out.
        #[serde(skip_serializing_if = "Option::is_none")]
        last_assistant_message: Option<Option<String>>,
    },
}

/// A tool's input as a format shows it.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum ToolInput {
    /// The model's arguments, as they were written.
    Raw(Box<RawValue>),
    /// Arguments that are not JSON, as text.
    Text(String),
    /// Codex's shell shape.
    Command { command: String },
}

#[derive(serde::Deserialize)]
struct CommandArgument {
    #[serde(default)]
    command: Option<serde_json::Value>,
}

impl ToolInput {
    pub(crate) fn of(format: Format, arguments: &str) -> Self {
        match format {
            Format::ClaudeCode => match serde_json::from_str::<Box<RawValue>>(arguments) {
                Ok(raw) => Self::Raw(raw),
                Err(_) => Self::Text(arguments.to_owned()),
            },
            Format::Codex => {
                let command = serde_json::from_str::<CommandArgument>(arguments)
                    .ok()
                    .and_then(|arguments| arguments.command)
                    .and_then(|command| command.as_str().map(str::to_owned))
                    .unwrap_or_default();
                Self::Command { command }
            }
        }
    }
}

impl<'a> Payload<'a> {
    /// The common fields of `format` for an event of `session` in `cwd`; `turn` for Codex's
    /// turn-scoped events.
    pub(crate) fn new(
        format: Format,
        (session, cwd): (&'a str, &'a str),
        event: &'static str,
        model: &'a str,
        turn: Option<u64>,
        fields: EventFields<'a>,
    ) -> Self {
        let codex = format == Format::Codex;
        Self {
            session_id: session,
            transcript_path: (!codex).then_some(""),
            cwd,
            hook_event_name: event,
            model: codex.then_some(model),
            permission_mode: codex.then_some("default"),
            turn_id: turn.filter(|_| codex).map(|turn| turn.to_string()),
            event: fields,
        }
    }

    /// The stdin bytes: Claude Code's end with a newline, Codex's do not.
    pub(crate) fn encode(&self, format: Format) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        if format == Format::ClaudeCode {
            bytes.push(b'\n');
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(format: Format) -> String {
        let payload = Payload::new(
            format,
            ("s1", "/w"),
            "PreToolUse",
            "m",
            Some(3),
            EventFields::Tool {
                tool_name: "bash",
                tool_input: ToolInput::of(format, r#"{"command": "ls", "description": "x"}"#),
                tool_use_id: "c1",
                tool_response: None,
            },
        );
        String::from_utf8(payload.encode(format)).unwrap()
    }

    #[test]
    fn claude_code_gets_the_arguments_as_written_and_a_newline() {
        assert_eq!(
            tool(Format::ClaudeCode),
            "{\"session_id\":\"s1\",\"transcript_path\":\"\",\"cwd\":\"/w\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"bash\",\"tool_input\":{\"command\": \"ls\", \"description\": \"x\"},\"tool_use_id\":\"c1\"}\n"
        );
    }

    #[test]
    fn codex_gets_its_shell_shape_model_and_turn() {
        assert_eq!(
            tool(Format::Codex),
            "{\"session_id\":\"s1\",\"transcript_path\":null,\"cwd\":\"/w\",\"hook_event_name\":\"PreToolUse\",\"model\":\"m\",\"permission_mode\":\"default\",\"turn_id\":\"3\",\"tool_name\":\"bash\",\"tool_input\":{\"command\":\"ls\"},\"tool_use_id\":\"c1\"}"
        );
    }
}
