//! The model-facing declarations of the file and search tools (REFERENCE §3 parameters). What
//! `glob` says of its cap follows the row's config, so the model is told what it will get.

use dsh_protocol::{Concurrency, Guidance, ToolDecl};
use serde_json::{Value, json};

use crate::{GlobCaps, Kind};

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

/// The description of `kind` (`glob`'s states its caps).
fn description(kind: Kind, glob: GlobCaps) -> String {
    let fixed = match kind {
        Kind::Read => {
            "Read a text file with line numbers. `offset` is the 1-based first line, `limit` the number of lines (default 2000). Long lines are cut at 2000 characters and a window stops at 50 KiB. Read a file before you write over it or edit it."
        }
        Kind::Write => {
            "Create a file or replace its whole content. An existing file must have been read first, and not changed since."
        }
        Kind::Edit => {
            "Replace literal text in a file you have read. `old_string` must match exactly once unless `replace_all` is true."
        }
        Kind::Glob => return glob_texts(glob).0,
        Kind::Grep => {
            "Search file contents with a regular expression (ripgrep syntax) under `path` or the working directory, optionally only in files matching the `include` glob; at most 250 matches are listed."
        }
        Kind::TodoWrite => {
            "Replace the task list of this session with `todos` (each with `content` and a `status` of pending, in_progress or completed)."
        }
    };
    fixed.to_owned()
}

/// The system-prompt guidance of `kind`: (order, text), in the tool band (100-199).
fn guidance(kind: Kind, glob: GlobCaps) -> (i64, String) {
    let (order, fixed) = match kind {
        Kind::Read => (
            100,
            "To look at a text file, use the read tool rather than cat, head or tail in bash: its lines are numbered, and a long file is read a window at a time with offset and limit.",
        ),
        Kind::Write => (
            101,
            "Use write to create a file or replace all of it. Read an existing file first; to change part of a file, prefer edit.",
        ),
        Kind::Edit => (
            102,
            "Use edit for changes to part of a file you have read: old_string must match exactly once (include surrounding lines to make it unique) unless replace_all is set.",
        ),
        Kind::Glob => return (103, glob_texts(glob).1),
        Kind::Grep => (
            104,
            "To search file contents, use grep rather than grep or rg in bash; narrow it with path or include when there are many matches.",
        ),
        Kind::TodoWrite => (
            107,
            "For work of several steps, keep a task list with todo_write: send the whole list each time, with exactly one task in_progress while you work on it.",
        ),
    };
    (order, fixed.to_owned())
}

/// The one-shot escalation parameter of `write` and `edit`.
fn escalation() -> Value {
    json!({
        "type": "string",
        "enum": ["read-only", "workspace-write", "danger-full-access"],
        "description": "Make this one change in a wider sandbox mode than the session's (the narrowest that suffices); the user is asked first.",
    })
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
                "sandbox_permissions": escalation(),
                "justification": string("Why the write needs the wider mode, for the person asked to approve it."),
            }),
            vec!["file_path", "content"],
        ),
        Kind::Edit => (
            json!({
                "file_path": string("The file to edit."),
                "old_string": string("The exact text to replace."),
                "new_string": string("The replacement text."),
                "replace_all": {"type": "boolean", "description": "Replace every match instead of exactly one."},
                "sandbox_permissions": escalation(),
                "justification": string("Why the edit needs the wider mode, for the person asked to approve it."),
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

/// `glob`'s description and guidance under `caps` (by default 100 paths, the head).
fn glob_texts(caps: GlobCaps) -> (String, String) {
    let max = caps.max_results;
    let (listed, cut) = match caps.sample {
        false => (
            format!("at most {max} paths are listed"),
            "so narrow the pattern when a listing is cut",
        ),
        true => (
            format!(
                "at most {max} paths are listed, a longer result sampled in turn from each top-level entry of the search root"
            ),
            "and a longer result is a sample across the top-level entries: narrow the pattern or path to see a subtree whole",
        ),
    };
    (
        format!(
            "Find files by glob pattern (for example `src/**/*.rs`) under `path` or the working directory; {listed}."
        ),
        format!(
            "To find files by name, use glob rather than find or ls in bash; it lists at most {max} paths, newest first, {cut}."
        ),
    )
}

/// The declaration of `kind`. Reads and searches may overlap; mutations run alone.
pub(crate) fn spec(kind: Kind, glob: GlobCaps) -> ToolDecl {
    let mut decl = ToolDecl::new(name(kind), description(kind, glob), parameters(kind));
    decl.concurrency = match kind {
        Kind::Read | Kind::Glob | Kind::Grep => Concurrency::Parallel,
        Kind::Write | Kind::Edit | Kind::TodoWrite => Concurrency::Exclusive,
    };
    let (order, text) = guidance(kind, glob);
    decl.guidance = Some(Guidance { order, text });
    decl
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_glob_texts_state_the_configured_cap_and_keep_the_default_words() {
        let (description, guidance) = glob_texts(GlobCaps {
            max_results: 100,
            sample: false,
        });
        assert_eq!(
            description,
            "Find files by glob pattern (for example `src/**/*.rs`) under `path` or the working directory; at most 100 paths are listed."
        );
        assert_eq!(
            guidance,
            "To find files by name, use glob rather than find or ls in bash; it lists at most 100 paths, newest first, so narrow the pattern when a listing is cut."
        );
        let (description, guidance) = glob_texts(GlobCaps {
            max_results: 4,
            sample: true,
        });
        assert!(description.contains("at most 4 paths") && description.contains("sampled"));
        assert!(guidance.contains("at most 4 paths") && guidance.contains("sample"));
    }
}
