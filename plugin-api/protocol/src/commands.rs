//! Human commands: a message that is a single text starting with `/` runs a command instead of
//! reaching the model. Their vocabulary: what a command declares, one invocation, its outcome,
//! and the two events every run logs (never model input: neither is a surface event).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::{EventData, event_data};

/// What a command declares, for `/help` and the page's `/` menu.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandSpec {
    /// Without the slash (`compact`).
    pub name: String,
    pub description: String,
    /// The arguments it takes, as a person types them (`[focus]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
}

/// One run of a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandInvocation {
    pub command_id: String,
    pub session: String,
    pub name: String,
    /// The text after the name, trimmed (empty when none).
    pub args: String,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CommandKind {
    Success,
    Error,
}

/// A command's answer, shown to the person who ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandOutcome {
    pub kind: CommandKind,
    pub text: String,
}

impl CommandOutcome {
    pub fn success(text: impl Into<String>) -> Self {
        Self {
            kind: CommandKind::Success,
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self {
            kind: CommandKind::Error,
            text: text.into(),
        }
    }
}

/// `command/run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandRunEvent {
    pub command_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    /// Who ran it (`user`).
    pub source: String,
}
event_data!(CommandRunEvent, crate::kinds::COMMAND_RUN);

/// `command/done`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandDoneEvent {
    pub command_id: String,
    pub kind: CommandKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}
event_data!(CommandDoneEvent, crate::kinds::COMMAND_DONE);

/// `/name args` as a command line: `None` when `text` is not one (no leading slash, or a
/// path like `/usr/bin`, whose first word holds another slash).
pub fn command_line(text: &str) -> Option<(String, String)> {
    let rest = text.trim().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then(|| (name.to_owned(), args.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::command_line;

    #[test]
    fn a_command_line_is_a_slash_and_a_plain_name() {
        assert_eq!(
            command_line("/compact keep the API"),
            Some(("compact".into(), "keep the API".into()))
        );
        assert_eq!(
            command_line("  /help "),
            Some(("help".into(), String::new()))
        );
        assert_eq!(command_line("/usr/bin/env is a path"), None);
        assert_eq!(command_line("not a command"), None);
        assert_eq!(command_line("/"), None);
    }
}
