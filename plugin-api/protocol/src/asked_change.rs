//! The file change a `str_replace_editor` call asks for, read from its arguments. Its `create`,
//! `str_replace` and `insert` record no hunks in their results (as the reference's editor does
//! not), so whoever shows such a call (the client protocol's tool cards, the ACP agent) shows
//! what it asked: one reading, here, for all of them.

use serde::Deserialize;

/// What a `str_replace_editor` call asks to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedChange {
    /// The file, as the call names it.
    pub path: String,
    /// The text replaced (empty for an insert); `None` for a file created whole.
    pub before: Option<String>,
    /// The text that goes in.
    pub after: String,
    /// The 1-based line an insert's text starts at.
    pub line: Option<u64>,
}

/// The arguments a change is read from; a missing text reads as empty, as the card of a call
/// the tool refused still shows what it was asked.
#[derive(Deserialize)]
struct EditorArguments {
    command: String,
    path: String,
    #[serde(default)]
    file_text: String,
    #[serde(default)]
    old_str: String,
    #[serde(default)]
    new_str: String,
    #[serde(default)]
    insert_line: Option<u64>,
}

impl AskedChange {
    /// The change a `str_replace_editor` call with `arguments` (JSON, as the model wrote them)
    /// asks for; `None` for `view`, `undo_edit`, an insert without its line and arguments of
    /// another shape.
    pub fn of_editor_call(arguments: &str) -> Option<Self> {
        let args: EditorArguments = serde_json::from_str(arguments).ok()?;
        let (before, after, line) = match args.command.as_str() {
            "create" => (None, args.file_text, None),
            "str_replace" => (Some(args.old_str), args.new_str, None),
            "insert" => (
                Some(String::new()),
                args.new_str,
                Some(args.insert_line? + 1),
            ),
            _ => return None,
        };
        Some(Self {
            path: args.path,
            before,
            after,
            line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_changing_command_reads_as_what_it_asks() {
        let created =
            AskedChange::of_editor_call(r#"{"command":"create","path":"/w/a","file_text":"one"}"#);
        assert_eq!(
            created.map(|change| (change.before, change.after, change.line)),
            Some((None, "one".to_owned(), None))
        );
        let replaced = AskedChange::of_editor_call(
            r#"{"command":"str_replace","path":"/w/a","old_str":"x","new_str":"y"}"#,
        );
        assert_eq!(
            replaced.map(|change| (change.before, change.after)),
            Some((Some("x".to_owned()), "y".to_owned()))
        );
        let inserted = AskedChange::of_editor_call(
            r#"{"command":"insert","path":"/w/a","insert_line":4,"new_str":"five"}"#,
        );
        assert_eq!(inserted.and_then(|change| change.line), Some(5));
        for other in [
            r#"{"command":"view","path":"/w/a"}"#,
            r#"{"command":"insert","path":"/w/a","new_str":"no line"}"#,
            r#"{"path":"/w/a"}"#,
        ] {
            assert_eq!(AskedChange::of_editor_call(other), None, "{other}");
        }
    }
}
