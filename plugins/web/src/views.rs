//! Tool cards: how a call of each built-in tool is shown, from its arguments (as the model
//! wrote them) and its result text. A tool this module does not know, or arguments that do not
//! parse, get the generic card: nothing is hidden because a view could not be made.

use dsh_protocol::{TodoItem, ToolView};
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

/// The card of a call to `name` with `arguments`, and `result` once it came.
pub(crate) fn view(name: &str, arguments: &str, result: Option<&str>) -> ToolView {
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
        ("write", Some(args)) if !args.file_path.is_empty() => ToolView::Diff {
            path: args.file_path,
            before: String::new(),
            after: args.content,
        },
        ("edit", Some(args)) if !args.file_path.is_empty() => ToolView::Diff {
            path: args.file_path,
            before: args.old_string,
            after: args.new_string,
        },
        ("read", Some(args)) if !args.file_path.is_empty() => ToolView::Read {
            path: args.file_path,
            first_line: args.offset.unwrap_or(1).max(1),
            text: result_text.to_owned(),
        },
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
            arguments: arguments.to_owned(),
            result: result_text.to_owned(),
        },
    }
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
    fn edits_are_diffs_reads_are_numbered_and_the_unknown_is_generic() {
        let edit = json!({"file_path": "a.rs", "old_string": "x", "new_string": "y"}).to_string();
        assert_eq!(
            view("edit", &edit, Some("ok")),
            ToolView::Diff {
                path: "a.rs".into(),
                before: "x".into(),
                after: "y".into()
            }
        );
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
