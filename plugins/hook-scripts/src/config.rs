//! Hook files as Claude Code and Codex write them: a settings file whose `hooks` key holds the
//! event map, or the bare event map (`hooks.json`). Each event lists matcher groups, each group
//! its command hooks. What the format does not support is skipped (an unknown event, a hook
//! that is not a command, a Codex `async` hook), with a note for the host log; a matcher that
//! does not compile refuses the whole file, so a file never runs only part of what it meant.
//!
//! Where the files are, and when they are read again, is the `files` module's.

use std::collections::BTreeMap;

use dsh_doc_limits::{LimitError, Limits};
use dsh_plugin_api::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::matcher::{Matcher, MatcherError};

/// Whose hook files a row reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "kebab-case")]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub enum Format {
    ClaudeCode,
    Codex,
}

impl Format {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// The plugin name the reference stamps on the context it adds.
    pub(crate) fn source_name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "hooks-claude-code",
            Self::Codex => "hooks-codex",
        }
    }

    /// Where the tool itself looks: the user's file first, then the project's.
    pub(crate) fn default_files(self) -> Vec<String> {
        let files: &[&str] = match self {
            Self::ClaudeCode => &[
                "~/.claude/settings.json",
                ".claude/settings.json",
                ".claude/settings.local.json",
            ],
            Self::Codex => &["~/.codex/hooks.json", ".codex/hooks.json"],
        };
        files.iter().map(|file| (*file).to_owned()).collect()
    }

    fn points(self) -> &'static [Point] {
        match self {
            Self::ClaudeCode => &[
                Point::SessionStart,
                Point::UserPromptSubmit,
                Point::PreToolUse,
                Point::PostToolUse,
                Point::Stop,
                Point::SubagentStart,
                Point::SubagentStop,
            ],
            Self::Codex => &[
                Point::SessionStart,
                Point::UserPromptSubmit,
                Point::PreToolUse,
                Point::PostToolUse,
                Point::Stop,
            ],
        }
    }
}

/// A hook event, by its name in the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Point {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    SubagentStart,
    SubagentStop,
}

impl Point {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::Stop => "Stop",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
        }
    }

    /// Prompts and stops have nothing to match, so both tools ignore their matchers (a broken
    /// one there refuses nothing).
    fn has_subject(self) -> bool {
        !matches!(self, Self::UserPromptSubmit | Self::Stop)
    }
}

/// One command hook.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommandHook {
    pub(crate) command: String,
    /// Its own limit (the files give seconds).
    pub(crate) timeout_ms: Option<u64>,
}

/// A matcher group.
#[derive(Debug)]
pub(crate) struct Group {
    /// The pattern as written (logged with each run), absent for "everything".
    pub(crate) pattern: Option<String>,
    pub(crate) matcher: Matcher,
    pub(crate) hooks: Vec<CommandHook>,
}

/// The runnable hooks of one file, by event, in file order.
#[derive(Debug, Default)]
pub(crate) struct HookTable {
    pub(crate) groups: Vec<(Point, Group)>,
    /// What was skipped, for the host log.
    pub(crate) skipped: Vec<String>,
}

/// Why a file's hooks do not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("{path}: {error}")]
    Read { path: String, error: std::io::Error },
    /// Over the size or nesting of a config document, found before parsing.
    #[error(transparent)]
    Limit(#[from] LimitError),
    #[error("{path}: not JSON: {error}")]
    Json {
        path: String,
        error: serde_json::Error,
    },
    #[error("{path}: {error} on event {event:?}; none of this file's hooks run")]
    Matcher {
        path: String,
        event: &'static str,
        error: MatcherError,
    },
}

/// A field of the wrong type reads as absent, as both tools treat it.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

#[derive(Deserialize)]
struct Wrapped {
    hooks: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct RawGroup {
    #[serde(default, deserialize_with = "lenient")]
    matcher: Option<String>,
    hooks: Vec<Value>,
}

#[derive(Deserialize)]
struct RawHook {
    #[serde(default, rename = "type", deserialize_with = "lenient")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    command: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    timeout: Option<f64>,
    /// Codex's alias of `timeout`.
    #[serde(default, rename = "timeoutSec", deserialize_with = "lenient")]
    timeout_sec: Option<f64>,
    #[serde(default, rename = "async", deserialize_with = "lenient")]
    run_async: Option<bool>,
}

/// Parses one file's text (`path` names it in errors).
pub(crate) fn parse(format: Format, path: &str, text: &str) -> Result<HookTable, ConfigError> {
    // A project's hook file is anyone's: its nesting is bounded before the parser sees it.
    dsh_doc_limits::check_json(text, path, Limits::DOCUMENT)?;
    let root: Value = serde_json::from_str(text).map_err(|error| ConfigError::Json {
        path: path.to_owned(),
        error,
    })?;
    let events: BTreeMap<String, Value> = match serde_json::from_value::<Wrapped>(root.clone()) {
        Ok(wrapped) => wrapped.hooks,
        Err(_) => serde_json::from_value(root).unwrap_or_default(),
    };
    let mut table = HookTable::default();
    for point in format.points() {
        let Some(Value::Array(groups)) = events.get(point.name()) else {
            continue;
        };
        for group in groups {
            let Ok(group) = serde_json::from_value::<RawGroup>(group.clone()) else {
                continue;
            };
            let hooks = commands(format, *point, &group.hooks, &mut table.skipped);
            if hooks.is_empty() {
                continue;
            }
            let pattern = group.matcher.filter(|_| point.has_subject());
            let matcher = Matcher::compile(pattern.as_deref(), format).map_err(|error| {
                ConfigError::Matcher {
                    path: path.to_owned(),
                    event: point.name(),
                    error,
                }
            })?;
            table.groups.push((
                *point,
                Group {
                    pattern,
                    matcher,
                    hooks,
                },
            ));
        }
    }
    Ok(table)
}

fn commands(
    format: Format,
    point: Point,
    raw: &[Value],
    skipped: &mut Vec<String>,
) -> Vec<CommandHook> {
    let mut hooks = Vec::new();
    for hook in raw {
        let Ok(hook) = serde_json::from_value::<RawHook>(hook.clone()) else {
            continue;
        };
        let kind = hook.kind.as_deref().unwrap_or("command");
        if kind != "command" {
            skipped.push(format!(
                "a {kind:?} hook on {} (only command hooks run)",
                point.name()
            ));
            continue;
        }
        if format == Format::Codex && hook.run_async == Some(true) {
            skipped.push(format!(
                "an async hook on {} (only synchronous hooks run)",
                point.name()
            ));
            continue;
        }
        let Some(command) = hook.command else {
            continue;
        };
        let seconds = match format {
            Format::ClaudeCode => hook.timeout,
            Format::Codex => hook.timeout.or(hook.timeout_sec),
        };
        hooks.push(CommandHook {
            command,
            timeout_ms: seconds
                .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
                .map(|seconds| (seconds * 1000.0).round() as u64),
        });
    }
    hooks
}

#[cfg(test)]
mod tests {
    use super::*;

    const CC: &str = r#"{"permissions": {}, "hooks": {
        "PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "exit 2", "timeout": 5}]}],
        "UserPromptSubmit": [{"matcher": "[", "hooks": [{"command": "echo hi"}, {"type": "prompt", "prompt": "x"}]}],
        "Notification": [{"hooks": [{"command": "never"}]}]
    }}"#;

    #[test]
    fn a_settings_file_gives_its_command_hooks_by_event() {
        let table = parse(Format::ClaudeCode, "settings.json", CC).unwrap();
        let points: Vec<Point> = table.groups.iter().map(|(point, _)| *point).collect();
        assert_eq!(points, [Point::UserPromptSubmit, Point::PreToolUse]);
        let (_, pre) = &table.groups[1];
        assert_eq!(pre.pattern.as_deref(), Some("bash"));
        assert_eq!(pre.hooks[0].timeout_ms, Some(5_000));
        // The prompt hook's matcher is ignored (nothing to match), its prompt hook skipped.
        assert_eq!(table.groups[0].1.pattern, None);
        assert_eq!(table.skipped.len(), 1);
    }

    #[test]
    fn a_file_nested_past_the_limit_is_refused_before_parsing() {
        let text = format!("{{\"hooks\": {}", "[".repeat(100_000));
        let error = parse(Format::ClaudeCode, ".claude/settings.json", &text).unwrap_err();
        assert_eq!(
            error.to_string(),
            ".claude/settings.json:1: nested deeper than 64 levels, the limit for a JSON document"
        );
    }

    #[test]
    fn a_bad_matcher_refuses_the_file_and_names_pattern_and_event() {
        let text = r#"{"hooks": {"Stop": [{"hooks": [{"command": "true"}]}],
            "PreToolUse": [{"matcher": "[", "hooks": [{"command": "exit 2"}]}]}}"#;
        let error = parse(Format::Codex, "codex-hooks.json", text).unwrap_err();
        let shown = error.to_string();
        assert!(
            shown.contains("codex-hooks.json")
                && shown.contains("\"[\"")
                && shown.contains("\"PreToolUse\""),
            "{shown}"
        );
    }

    #[test]
    fn codex_takes_the_bare_map_the_timeout_alias_and_skips_async_hooks() {
        let text = r#"{"Stop": [{"hooks": [{"command": "a", "timeoutSec": 2}, {"command": "b", "async": true}]}],
            "SubagentStop": [{"hooks": [{"command": "c"}]}]}"#;
        let table = parse(Format::Codex, "hooks.json", text).unwrap();
        assert_eq!(table.groups.len(), 1);
        assert_eq!(
            table.groups[0].1.hooks,
            [CommandHook {
                command: "a".into(),
                timeout_ms: Some(2_000)
            }]
        );
        assert_eq!(table.skipped.len(), 1);
    }
}
