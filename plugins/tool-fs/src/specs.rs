//! The model-facing declarations of the file and search tools (REFERENCE §3 parameters).

use serde_json::{Value, json};

use crate::Kind;

pub(crate) fn name(kind: Kind) -> &'static str {
    match kind {
        Kind::Read => "read",
        Kind::Write => "write",
        Kind::Edit => "edit",
        Kind::Glob => "glob",
        Kind::Grep => "grep",
        Kind::TodoWrite => "todo_write",
    }
}

fn description(kind: Kind) -> &'static str {
    match kind {
        Kind::Read => {
            "Read a text file with line numbers. `offset` is the 1-based first line, `limit` the number of lines (default 2000). Long lines are cut at 2000 characters and a window stops at 50 KiB. Read a file before you write over it or edit it."
        }
        Kind::Write => {
            "Create a file or replace its whole content. An existing file must have been read first, and not changed since."
        }
        Kind::Edit => {
            "Replace literal text in a file you have read. `old_string` must match exactly once unless `replace_all` is true."
        }
        Kind::Glob => {
            "Find files by glob pattern (for example `src/**/*.rs`) under `path` or the working directory; at most 100 paths are listed."
        }
        Kind::Grep => {
            "Search file contents with a regular expression (ripgrep syntax) under `path` or the working directory, optionally only in files matching the `include` glob; at most 250 matches are listed."
        }
        Kind::TodoWrite => {
            "Replace the task list of this session with `todos` (each with `content` and a `status` of pending, in_progress or completed)."
        }
    }
}

fn parameters(kind: Kind) -> Value {
    let string = |text: &str| json!({"type": "string", "description": text});
    let number = |text: &str| json!({"type": "number", "description": text});
    let (properties, required) = match kind {
        Kind::Read => (
            json!({
                "file_path": string("The file to read, relative to the working directory or absolute."),
                "offset": number("1-based line to start at."),
                "limit": number("How many lines to read (default 2000)."),
            }),
            vec!["file_path"],
        ),
        Kind::Write => (
            json!({
                "file_path": string("The file to write."),
                "content": string("The complete new content."),
            }),
            vec!["file_path", "content"],
        ),
        Kind::Edit => (
            json!({
                "file_path": string("The file to edit."),
                "old_string": string("The exact text to replace."),
                "new_string": string("The replacement text."),
                "replace_all": {"type": "boolean", "description": "Replace every match instead of exactly one."},
            }),
            vec!["file_path", "old_string", "new_string"],
        ),
        Kind::Glob => (
            json!({
                "pattern": string("The glob pattern."),
                "path": string("Directory to search in (default: the working directory)."),
            }),
            vec!["pattern"],
        ),
        Kind::Grep => (
            json!({
                "pattern": string("The regular expression."),
                "path": string("File or directory to search in (default: the working directory)."),
                "include": string("Only search files matching this glob."),
            }),
            vec!["pattern"],
        ),
        Kind::TodoWrite => (
            json!({
                "todos": {
                    "type": "array",
                    "description": "The complete task list.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false,
                    },
                },
            }),
            vec!["todos"],
        ),
    };
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The `tools` spec JSON of `kind`. Reads and searches may overlap; mutations run alone.
pub(crate) fn spec(kind: Kind) -> String {
    let concurrency = match kind {
        Kind::Read | Kind::Glob | Kind::Grep => "parallel",
        Kind::Write | Kind::Edit | Kind::TodoWrite => "exclusive",
    };
    json!({
        "name": name(kind),
        "description": description(kind),
        "parameters": parameters(kind),
        "concurrency": concurrency,
    })
    .to_string()
}
