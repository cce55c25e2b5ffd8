//! How a tool call looks in an editor: its kind (the client's icon), a title a person reads,
//! the files it touches (for the client to follow), the model's arguments as raw input, and,
//! once it ended, what it produced: the output text, or a diff for each change `write` and
//! `edit` made (from the result's `meta`) or `str_replace_editor` was asked to make (from its
//! arguments: like the reference's, it records no hunks).

use std::path::Path;

use dsh_protocol::{AskedChange, ContentBlock, ToolResultEvent, text_of};
use serde::Deserialize;

use crate::updates::{
    Content, Location, RawOutput, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolKind,
};

/// The arguments the mapping reads, from whichever tool sent them; the rest is ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Arguments {
    command: Option<String>,
    description: Option<String>,
    file_path: Option<String>,
    path: Option<String>,
    pattern: Option<String>,
    offset: Option<u64>,
    url: Option<String>,
    name: Option<String>,
    insert_line: Option<u64>,
    view_range: Option<Vec<i64>>,
}

/// The `meta` of a `write` or `edit` result: one hunk per change.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ChangeMeta {
    diffs: Vec<Hunk>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Hunk {
    path: String,
    #[serde(default)]
    old_text: Option<String>,
    new_text: String,
}

/// `path` as an absolute path: relative ones are under the session's working directory.
fn absolute(cwd: &str, path: &str) -> String {
    match Path::new(path).is_absolute() {
        true => path.to_owned(),
        false => Path::new(cwd).join(path).display().to_string(),
    }
}

/// The first line of `text`, cut to 80 characters.
fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// The `tool_call` announcing call `call_id` of tool `name` with the model's `arguments`.
pub(crate) fn announce(cwd: &str, call_id: &str, name: &str, arguments: &str) -> ToolCall {
    let args: Arguments = serde_json::from_str(arguments).unwrap_or_default();
    let file = args.file_path.as_deref().map(|path| absolute(cwd, path));
    let located = |line: Option<u64>| {
        file.iter()
            .map(|path| Location {
                path: path.clone(),
                line,
            })
            .collect::<Vec<_>>()
    };
    let (kind, title, locations) = match name {
        "bash" => (
            ToolKind::Execute,
            args.description
                .as_deref()
                .filter(|text| !text.trim().is_empty())
                .or(args.command.as_deref())
                .map(short)
                .unwrap_or_else(|| "Run a command".to_owned()),
            Vec::new(),
        ),
        "read" => (
            ToolKind::Read,
            format!("Read {}", args.file_path.as_deref().unwrap_or("a file")),
            located(args.offset),
        ),
        "write" => (
            ToolKind::Edit,
            format!("Write {}", args.file_path.as_deref().unwrap_or("a file")),
            located(None),
        ),
        "edit" => (
            ToolKind::Edit,
            format!("Edit {}", args.file_path.as_deref().unwrap_or("a file")),
            located(None),
        ),
        "glob" | "grep" => (
            ToolKind::Search,
            format!(
                "{} `{}`{}",
                if name == "glob" { "Find" } else { "Search" },
                args.pattern.as_deref().unwrap_or_default(),
                args.path
                    .as_deref()
                    .map(|path| format!(" in {path}"))
                    .unwrap_or_default()
            ),
            args.path
                .iter()
                .map(|path| Location {
                    path: absolute(cwd, path),
                    line: None,
                })
                .collect(),
        ),
        "str_replace_editor" => editor_call(cwd, &args),
        "todo_write" => (ToolKind::Think, "Update the plan".to_owned(), Vec::new()),
        "web_fetch" => (
            ToolKind::Fetch,
            format!("Fetch {}", args.url.as_deref().unwrap_or_default()),
            Vec::new(),
        ),
        "skill" => (
            ToolKind::Read,
            format!("Skill {}", args.name.as_deref().unwrap_or_default()),
            Vec::new(),
        ),
        other => (ToolKind::Other, title_of(other, &args), Vec::new()),
    };
    ToolCall {
        tool_call_id: call_id.to_owned(),
        title,
        kind,
        status: ToolCallStatus::Pending,
        locations,
        raw_input: serde_json::from_str(arguments).ok(),
    }
}

/// A `str_replace_editor` call: a view reads, every other command edits; the file, at the
/// line a view starts or an insert goes.
fn editor_call(cwd: &str, args: &Arguments) -> (ToolKind, String, Vec<Location>) {
    let path = args.path.as_deref().unwrap_or("a file");
    let (kind, verb, line) = match args.command.as_deref() {
        Some("view") => (
            ToolKind::Read,
            "View",
            args.view_range
                .as_ref()
                .and_then(|range| range.first())
                .and_then(|first| u64::try_from(*first).ok()),
        ),
        Some("create") => (ToolKind::Edit, "Create", None),
        Some("insert") => (
            ToolKind::Edit,
            "Insert into",
            args.insert_line.map(|at| at + 1),
        ),
        Some("undo_edit") => (ToolKind::Edit, "Undo the last edit of", None),
        _ => (ToolKind::Edit, "Edit", None),
    };
    let locations = args
        .path
        .iter()
        .map(|path| Location {
            path: absolute(cwd, path),
            line,
        })
        .collect();
    (kind, format!("{verb} {path}"), locations)
}

/// The change call `name` was asked to make, shown when its result records none: a
/// `str_replace_editor` file created, string replaced or lines inserted (see
/// [`AskedChange`]). Empty for any other call.
pub(crate) fn asked_changes(cwd: &str, name: &str, arguments: &str) -> Vec<ToolCallContent> {
    if name != "str_replace_editor" {
        return Vec::new();
    }
    AskedChange::of_editor_call(arguments)
        .map(|change| ToolCallContent::Diff {
            path: absolute(cwd, &change.path),
            old_text: change.before,
            new_text: change.after,
        })
        .into_iter()
        .collect()
}

/// An MCP tool reads `server: tool`; any other its name and what it says it does.
fn title_of(name: &str, args: &Arguments) -> String {
    if let Some(rest) = name.strip_prefix("mcp__")
        && let Some((server, tool)) = rest.split_once("__")
    {
        return format!("{server}: {tool}");
    }
    match args
        .description
        .as_deref()
        .filter(|text| !text.trim().is_empty())
    {
        Some(description) => format!("{name}: {}", short(description)),
        None => name.to_owned(),
    }
}

/// The update closing a call: its status and what it produced; `asked` gives the changes a
/// call was asked to make (see [`asked_changes`]), shown when its result records none.
pub(crate) fn finished(
    cwd: &str,
    result: &ToolResultEvent,
    asked: impl FnOnce(&str) -> Vec<ToolCallContent>,
) -> Option<ToolCallUpdate> {
    let (call_id, content, is_error) =
        result
            .message
            .content
            .iter()
            .find_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                } => Some((tool_call_id.clone(), content, is_error.unwrap_or(false))),
                _ => None,
            })?;
    let is_error = is_error || result.error.is_some();
    let output = text_of(content);
    let diffs: Vec<ToolCallContent> = result
        .meta
        .clone()
        .and_then(|meta| serde_json::from_value::<ChangeMeta>(meta).ok())
        .unwrap_or_default()
        .diffs
        .into_iter()
        .map(|hunk| ToolCallContent::Diff {
            path: absolute(cwd, &hunk.path),
            old_text: hunk.old_text,
            new_text: hunk.new_text,
        })
        .collect();
    let diffs = match diffs.is_empty() {
        true => asked(&call_id),
        false => diffs,
    };
    let shown = match (diffs.is_empty() || is_error, output.is_empty()) {
        (false, _) => diffs,
        (true, true) => Vec::new(),
        (true, false) => vec![ToolCallContent::Content {
            content: Content::text(output.clone()),
        }],
    };
    Some(ToolCallUpdate {
        tool_call_id: call_id,
        status: Some(match is_error {
            true => ToolCallStatus::Failed,
            false => ToolCallStatus::Completed,
        }),
        content: Some(shown),
        raw_output: Some(RawOutput { output, is_error }),
        ..ToolCallUpdate::default()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn calls_get_a_kind_a_title_and_their_files() {
        let bash = announce("/w", "c1", "bash", r#"{"command":"cargo test\nmore"}"#);
        assert_eq!(bash.kind, ToolKind::Execute);
        assert_eq!(bash.title, "cargo test");
        let read = announce("/w", "c2", "read", r#"{"file_path":"src/a.rs","offset":3}"#);
        assert_eq!(read.kind, ToolKind::Read);
        assert_eq!(
            read.locations,
            vec![Location {
                path: "/w/src/a.rs".to_owned(),
                line: Some(3)
            }]
        );
        let mcp = announce("/w", "c3", "mcp__fs__list", "not json");
        assert_eq!(
            (mcp.kind, mcp.title.as_str()),
            (ToolKind::Other, "fs: list")
        );
        assert!(mcp.raw_input.is_none());
    }

    #[test]
    fn a_change_shows_as_a_diff_and_output_as_text() {
        let result: ToolResultEvent = serde_json::from_str(
            r#"{"turn":1,"step":1,"message":{"id":"m","role":"user","source":{"kind":"tool","callId":"c1"},
            "content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}]}]},
            "meta":{"diffs":[{"path":"a.txt","oldText":"x\n","newText":"y\n","oldStart":1,"newStart":1}]}}"#,
        )
        .unwrap();
        let update = finished("/w", &result, |_| Vec::new()).unwrap();
        assert_eq!(update.status, Some(ToolCallStatus::Completed));
        let shown = serde_json::to_string(&update.content).unwrap();
        assert_eq!(
            shown,
            r#"[{"type":"diff","path":"/w/a.txt","oldText":"x\n","newText":"y\n"}]"#
        );
    }

    #[test]
    fn an_editor_change_shows_what_it_was_asked_to_make() {
        let asked = r#"{"command":"str_replace","path":"a.txt","old_str":"x","new_str":"y"}"#;
        let call = announce("/w", "c1", "str_replace_editor", asked);
        assert_eq!(
            (call.kind, call.title.as_str()),
            (ToolKind::Edit, "Edit a.txt")
        );
        let changes = asked_changes("/w", "str_replace_editor", asked);
        let result: ToolResultEvent = serde_json::from_str(
            r#"{"turn":1,"step":1,"message":{"id":"m","role":"user","source":{"kind":"tool","callId":"c1"},
            "content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"The file a.txt has been edited successfully."}]}]}}"#,
        )
        .unwrap();
        let update = finished("/w", &result, |id| {
            assert_eq!(id, "c1");
            changes.clone()
        })
        .unwrap();
        assert_eq!(
            serde_json::to_string(&update.content).unwrap(),
            r#"[{"type":"diff","path":"/w/a.txt","oldText":"x","newText":"y"}]"#
        );
        let view = announce(
            "/w",
            "c2",
            "str_replace_editor",
            r#"{"command":"view","path":"/w/b.txt","view_range":[3,9]}"#,
        );
        assert_eq!(view.kind, ToolKind::Read);
        assert_eq!(view.locations[0].line, Some(3));
        let create = r#"{"command":"create","path":"/w/c.txt","file_text":"new"}"#;
        assert!(matches!(
            asked_changes("/w", "str_replace_editor", create).as_slice(),
            [ToolCallContent::Diff { old_text: None, new_text, .. }] if new_text == "new"
        ));
        assert!(asked_changes("/w", "edit", asked).is_empty());
        assert!(
            asked_changes(
                "/w",
                "str_replace_editor",
                r#"{"command":"view","path":"x"}"#
            )
            .is_empty()
        );
    }
}
