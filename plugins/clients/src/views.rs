//! Tool cards: how a call of each built-in tool is shown, from its arguments (as the model
//! wrote them) and its result text. A tool this module does not know, or arguments that do not
//! parse, get the generic card: nothing is hidden because a view could not be made.

use dsh_protocol::{AskedChange, DiffHunk, DiffLineKind, TodoItem, ToolView};
use dsh_web_core::{DiffSide, hunks, inserted};
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Arguments {
    command: String,
    file_path: String,
    content: String,
    old_string: String,
    new_string: String,
    offset: Option<u64>,
    pattern: String,
    todos: Vec<TodoItem>,
    description: String,
    prompt: String,
}

/// The file's lines of a `read` result, without the envelope the model reads them in (`<path>`,
/// `<content>`, each line's `N: ` and the closing note): the page numbers them itself. `None`
/// for a result of another shape (an error), shown as it is.
fn read_window(result: &str) -> Option<(u64, String)> {
    let body = result
        .split_once("<content>\n")?
        .1
        .rsplit_once("\n</content>")?
        .0;
    // The lines, then a blank line and the note on where the window ends.
    let lines = body.rsplit_once("\n\n").map_or("", |(lines, _)| lines);
    let mut first = None;
    let mut text = Vec::new();
    for line in lines.split('\n') {
        let (number, rest) = line.split_once(": ")?;
        let number: u64 = number.parse().ok()?;
        first.get_or_insert(number);
        text.push(rest);
    }
    Some((first?, text.join("\n")))
}

/// The card of a call to `name` with `arguments`, and `result` once it came.
pub(crate) fn view(name: &str, arguments: &str, result: Option<&str>) -> ToolView {
    if name == "str_replace_editor"
        && let Some(card) = editor_view(arguments)
    {
        return card;
    }
    let parsed = serde_json::from_str::<Arguments>(arguments).ok();
    let result_text = result.unwrap_or_default();
    match (name, parsed) {
        ("bash", Some(args)) if !args.command.is_empty() => {
            let (output, exit_code) = split_exit_code(result_text);
            ToolView::Terminal {
                command: args.command,
                output: output.to_owned(),
                exit_code: result.map(|_| exit_code.unwrap_or(0)),
            }
        }
        // Until the result says where the change landed, a write shows its whole text (the new
        // file's lines, numbered) and an edit its two strings (unnumbered).
        ("write", Some(args)) if !args.file_path.is_empty() => {
            diff_view(args.file_path, vec![inserted(&args.content)])
        }
        ("edit", Some(args)) if !args.file_path.is_empty() => {
            let old = DiffSide {
                text: &args.old_string,
                start: None,
            };
            let new = DiffSide {
                text: &args.new_string,
                start: None,
            };
            diff_view(args.file_path.clone(), hunks([(old, new)]))
        }
        ("read", Some(args)) if !args.file_path.is_empty() => {
            let asked = args.offset.unwrap_or(1).max(1);
            let (first_line, text) =
                read_window(result_text).unwrap_or_else(|| (asked, result_text.to_owned()));
            ToolView::Read {
                path: args.file_path,
                first_line,
                text,
            }
        }
        ("glob" | "grep", Some(args)) if !args.pattern.is_empty() => ToolView::Search {
            pattern: args.pattern,
            results: result_text.to_owned(),
        },
        ("todo_write", Some(args)) => ToolView::Todo { items: args.todos },
        // `subagent`, `subagent_fork`, and the product children (`subagent_codex`, ...): a
        // delegated task with its answer.
        (name, Some(args))
            if (name == "subagent" || name.starts_with("subagent_")) && !args.prompt.is_empty() =>
        {
            ToolView::Subagent {
                label: args.description,
                prompt: args.prompt,
                child: None,
                result: result_text.to_owned(),
            }
        }
        _ => ToolView::Generic {
            result: result_text.to_owned(),
        },
    }
}

/// The card of a `str_replace_editor` change, from what it asked (see [`AskedChange`]): the
/// text written, the two strings (unnumbered) or the lines inserted, numbered from where they
/// go.
fn editor_view(arguments: &str) -> Option<ToolView> {
    let change = AskedChange::of_editor_call(arguments)?;
    let hunks = match &change.before {
        None => vec![inserted(&change.after)],
        Some(before) => hunks([(
            DiffSide {
                text: before,
                start: change.line,
            },
            DiffSide {
                text: &change.after,
                start: change.line,
            },
        )]),
    };
    Some(diff_view(change.path, hunks))
}

/// A change's card, with how many lines it added and removed.
fn diff_view(path: String, hunks: Vec<DiffHunk>) -> ToolView {
    let count = |kind| {
        let lines = hunks.iter().flat_map(|hunk| &hunk.lines);
        lines.filter(|line| line.kind == kind).count() as u64
    };
    ToolView::Diff {
        added: count(DiffLineKind::Added),
        removed: count(DiffLineKind::Removed),
        path,
        hunks,
    }
}

/// One hunk as `write` and `edit` record it in their result's `meta.diffs`; the starts are
/// ours (the reference's records have none).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordedHunk {
    old_text: Option<String>,
    new_text: String,
    old_start: Option<u64>,
    new_start: Option<u64>,
}

#[derive(Deserialize)]
struct RecordedMeta {
    diffs: Vec<RecordedHunk>,
}

/// A diff card made from what the tool recorded (its hunks with their context and place),
/// when it recorded any: the change as applied, not as asked.
pub(crate) fn with_recorded_hunks(card: ToolView, meta: Option<&serde_json::Value>) -> ToolView {
    let ToolView::Diff { path, .. } = &card else {
        return card;
    };
    let recorded = meta
        .and_then(|meta| RecordedMeta::deserialize(meta).ok())
        .filter(|meta| !meta.diffs.is_empty());
    let Some(recorded) = recorded else {
        return card;
    };
    let sides = recorded.diffs.iter().map(|hunk| {
        let old = DiffSide {
            text: hunk.old_text.as_deref().unwrap_or_default(),
            start: hunk.old_start,
        };
        let new = DiffSide {
            text: &hunk.new_text,
            start: hunk.new_start,
        };
        (old, new)
    });
    diff_view(path.clone(), hunks(sides))
}

/// A shell result without its `[exit code: N]` trailer, and N.
fn split_exit_code(text: &str) -> (&str, Option<i32>) {
    let trimmed = text.trim_end();
    if let Some(start) = trimmed.rfind("[exit code: ")
        && let Some(code) = trimmed[start + "[exit code: ".len()..].strip_suffix(']')
        && let Ok(code) = code.trim().parse()
    {
        return (trimmed[..start].trim_end(), Some(code));
    }
    (text, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_recorded_hunk_numbers_the_lines_where_the_change_landed() {
        let edit = json!({"file_path": "a.rs", "old_string": "b", "new_string": "B"}).to_string();
        let meta = json!({"diffs": [{"path": "a.rs", "oldText": "a\nb\nc", "newText": "a\nB\nc", "oldStart": 7, "newStart": 7}]});
        let card = with_recorded_hunks(view("edit", &edit, Some("ok")), Some(&meta));
        let ToolView::Diff {
            hunks,
            added,
            removed,
            ..
        } = card
        else {
            panic!("not a diff: {card:?}");
        };
        assert_eq!((added, removed), (1, 1));
        let numbers: Vec<_> = hunks[0]
            .lines
            .iter()
            .map(|line| (line.old, line.new))
            .collect();
        assert_eq!(
            numbers,
            [
                (Some(7), Some(7)),
                (Some(8), None),
                (None, Some(8)),
                (Some(9), Some(9))
            ]
        );
        // A reference record (no starts) keeps the context, unnumbered.
        let meta = json!({"diffs": [{"path": "a.rs", "oldText": "a\nb", "newText": "a\nB"}]});
        let card = with_recorded_hunks(view("edit", &edit, Some("ok")), Some(&meta));
        assert!(
            matches!(card, ToolView::Diff { ref hunks, .. } if hunks[0].lines.len() == 3 && hunks[0].lines[0].old.is_none())
        );
    }

    #[test]
    fn a_product_child_is_shown_as_a_delegated_task() {
        let arguments = json!({"description": "review", "prompt": "Review it."}).to_string();
        assert_eq!(
            view("subagent_codex", &arguments, Some("looks fine")),
            ToolView::Subagent {
                label: "review".into(),
                prompt: "Review it.".into(),
                child: None,
                result: "looks fine".into()
            }
        );
    }

    #[test]
    fn a_shell_call_shows_its_command_output_and_exit_code() {
        let arguments = json!({"command": "false", "description": "fail"}).to_string();
        assert_eq!(
            view("bash", &arguments, Some("nope\n[exit code: 1]")),
            ToolView::Terminal {
                command: "false".into(),
                output: "nope".into(),
                exit_code: Some(1)
            }
        );
        assert!(matches!(
            view("bash", &arguments, None),
            ToolView::Terminal {
                exit_code: None,
                ..
            }
        ));
        assert!(matches!(
            view("bash", &arguments, Some("42\n")),
            ToolView::Terminal {
                exit_code: Some(0),
                ..
            }
        ));
    }

    #[test]
    fn a_read_shows_the_files_lines_without_the_models_envelope() {
        let read = json!({"file_path": "a.rs", "offset": 3}).to_string();
        let result = "<path>a.rs</path>\n<type>file</type>\n<content>\n3: fn main() {\n4:     let x: u8 = 1;\n5: }\n\n(End of file - total 5 lines)\n</content>";
        assert_eq!(
            view("read", &read, Some(result)),
            ToolView::Read {
                path: "a.rs".into(),
                first_line: 3,
                text: "fn main() {\n    let x: u8 = 1;\n}".into(),
            }
        );
        let refused = "Error: no such file";
        assert!(matches!(
            view("read", &read, Some(refused)),
            ToolView::Read { first_line: 3, ref text, .. } if text == refused
        ));
    }

    #[test]
    fn the_editors_changes_are_diffs_of_what_it_was_asked() {
        let asked = |arguments: serde_json::Value| {
            view("str_replace_editor", &arguments.to_string(), Some("ok"))
        };
        let replaced = asked(
            json!({"command": "str_replace", "path": "/w/a.rs", "old_str": "x", "new_str": "y"}),
        );
        assert!(matches!(
            replaced,
            ToolView::Diff { ref path, added: 1, removed: 1, ref hunks } if path == "/w/a.rs" && hunks[0].lines[1].text == "y"
        ));
        let created =
            asked(json!({"command": "create", "path": "/w/b.rs", "file_text": "one\ntwo"}));
        assert!(matches!(
            created,
            ToolView::Diff {
                added: 2,
                removed: 0,
                ..
            }
        ));
        let ToolView::Diff {
            hunks, added: 1, ..
        } = asked(
            json!({"command": "insert", "path": "/w/a.rs", "insert_line": 4, "new_str": "five"}),
        )
        else {
            panic!("an insert is a diff");
        };
        assert_eq!(hunks[0].lines[0].new, Some(5));
        assert!(matches!(
            asked(json!({"command": "view", "path": "/w/a.rs"})),
            ToolView::Generic { .. }
        ));
        assert!(matches!(
            asked(json!({"command": "insert", "path": "/w/a.rs", "new_str": "no line"})),
            ToolView::Generic { .. }
        ));
    }

    #[test]
    fn edits_are_diffs_reads_are_numbered_and_the_unknown_is_generic() {
        let edit = json!({"file_path": "a.rs", "old_string": "x", "new_string": "y"}).to_string();
        assert!(matches!(
            view("edit", &edit, Some("ok")),
            ToolView::Diff { path, added: 1, removed: 1, hunks } if path == "a.rs" && hunks[0].lines[1].text == "y"
        ));
        let read = json!({"file_path": "a.rs", "offset": 10}).to_string();
        assert!(matches!(
            view("read", &read, Some("...")),
            ToolView::Read { first_line: 10, .. }
        ));
        assert!(matches!(
            view("bash", "{not json", Some("x")),
            ToolView::Generic { .. }
        ));
        assert!(matches!(
            view("web_fetch", "{}", None),
            ToolView::Generic { .. }
        ));
    }
}
