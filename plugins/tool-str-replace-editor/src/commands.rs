//! The five commands of `str_replace_editor`, on `dsh-tool-fs-core`'s bodies: `view` is its
//! `read` (which records the observation read-before-write needs), `create` its `write`,
//! `str_replace` its `edit`, and `insert` and `undo_edit` compute the new text and publish it
//! through `write`, so the same observation and policy checks stop them. What they answer is
//! the reference's wording (`New file created successfully at: ...`, `The file ... has been
//! edited successfully.`, a `create` over an existing file refused), so a model tuned on it
//! reads ours the same, and like the reference's their results record no `meta` (a client
//! shows their change from the call's arguments); `undo_edit` is ours and records the hunks it
//! reverted in `meta.diffs`, as `write` and `edit` do, since its arguments name no text.

use std::path::Path;

use dsh_fs_local::{WalkRequest, Walked, read_all};
use dsh_plugin_api::{Deserialize, lock};
use dsh_protocol::{ContentBlock, ToolError as ToolFailureReply, ToolReply, ToolSuccess};
use dsh_tool_fs_core::{
    EditArgs, ErrorCode, Observations, ReadArgs, ToolError, Workspace, WriteArgs, edit, read, write,
};
use serde_json::{Value, json};

pub(crate) const DESCRIPTION: &str = "View, create and edit files. \
`view` shows a file's numbered lines (optionally `view_range` [start, end], end -1 for the last line) or lists a directory two levels deep, without hidden entries. \
`create` writes `file_text` to a new file (an existing file must be viewed first). \
`str_replace` replaces `old_str`, which must occur exactly once, with `new_str`. \
`insert` inserts `new_str` after line `insert_line` (0: at the top). \
`undo_edit` reverts this tool's last change to `path`. \
A file must be viewed before it is changed, and is refused if it changed since. Paths are absolute.";

pub(crate) fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"], "description": "The command to run."},
            "path": {"type": "string", "description": "Absolute path of the file or directory."},
            "file_text": {"type": "string", "description": "`create`: the content of the new file."},
            "old_str": {"type": "string", "description": "`str_replace`: the exact text to replace (it must occur once)."},
            "new_str": {"type": "string", "description": "`str_replace`: the replacement; `insert`: the text to insert."},
            "insert_line": {"type": "integer", "description": "`insert`: the line after which `new_str` goes (0: before the first line)."},
            "view_range": {"type": "array", "items": {"type": "integer"}, "description": "`view`: [start, end] lines, 1-based, end -1 for the last line."}
        },
        "required": ["command", "path"],
        "additionalProperties": false
    })
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
struct Arguments {
    command: String,
    path: String,
    #[serde(default)]
    file_text: Option<String>,
    #[serde(default)]
    old_str: Option<String>,
    #[serde(default)]
    new_str: Option<String>,
    #[serde(default)]
    insert_line: Option<i64>,
    #[serde(default)]
    view_range: Option<Vec<i64>>,
}

/// Each file's contents before this tool's changes to it, newest last (`None`: it did not
/// exist).
#[derive(Default)]
pub(crate) struct History {
    before: std::sync::Mutex<std::collections::HashMap<String, Vec<Option<String>>>>,
}

/// Entries listed at most by a directory `view`.
const LISTED: usize = 1_000;

fn fail(message: impl Into<String>) -> ToolReply {
    ToolReply::error(message.into())
}

fn core_error(error: &ToolError) -> ToolReply {
    let info = error.info();
    let message = match error.detail() {
        Some(detail) => format!("{} {detail}", error.message()),
        None => error.message().to_owned(),
    };
    ToolReply::Error(ToolFailureReply {
        message,
        name: info.as_ref().map(|info| info.name.clone()),
        code: info.map(|info| info.code),
        content: None,
        meta: None,
    })
}

/// The lines (from 1) where `needle` starts in `content`, comma-separated.
fn lines_of(content: &str, needle: &str) -> String {
    let starts = content.match_indices(needle).map(|(at, _)| {
        let line = content[..at].matches('\n').count() + 1;
        line.to_string()
    });
    starts.collect::<Vec<_>>().join(", ")
}

/// What `str_replace` and `insert` answer (the reference's words).
fn edited(display: &str) -> String {
    format!("The file {display} has been edited successfully.")
}

fn done(text: String, meta: Option<Value>) -> ToolReply {
    ToolReply::Ok(ToolSuccess {
        value: json!({"text": text}),
        content: vec![ContentBlock::text(text)],
        meta,
        concludes_turn: false,
    })
}

pub(crate) fn run(
    arguments: &str,
    workspace: &Workspace,
    observations: &Observations,
    history: &History,
) -> ToolReply {
    let arguments: Arguments = match serde_json::from_str(arguments) {
        Ok(arguments) => arguments,
        Err(error) => return fail(format!("arguments are not valid: {error}")),
    };
    if !Path::new(&arguments.path).is_absolute() {
        return fail(format!(
            "The path {0} is not an absolute path, it should start with `/`. Maybe you meant /{0}? (The workspace is {1}.)",
            arguments.path,
            workspace.root().display()
        ));
    }
    let result = match arguments.command.as_str() {
        "view" => view(&arguments, workspace, observations),
        "create" => create(&arguments, workspace, observations, history),
        "str_replace" => replace(&arguments, workspace, observations, history),
        "insert" => insert(&arguments, workspace, observations, history),
        "undo_edit" => undo(&arguments, workspace, observations, history),
        other => {
            return fail(format!(
                "unknown command `{other}` (expected view, create, str_replace, insert or undo_edit)"
            ));
        }
    };
    match result {
        Ok(reply) => reply,
        Err(error) => core_error(&error),
    }
}

fn required<'a>(
    value: &'a Option<String>,
    name: &str,
    command: &str,
) -> Result<&'a str, ToolError> {
    value.as_deref().ok_or_else(|| {
        ToolError::plain(format!(
            "Parameter `{name}` is required for command: {command}"
        ))
    })
}

/// The file's current text, as the workspace lets this session read it (`None`: absent).
fn current(workspace: &Workspace, path: &str) -> Result<Option<String>, ToolError> {
    let target = workspace.resolve(path)?;
    workspace.check_path_readable(&target.key)?;
    match workspace.fs().stat(&target.key) {
        Ok(None) => return Ok(None),
        Ok(Some(_)) => {}
        Err(error) => return Err(ToolError::plain(format!("cannot read \"{path}\": {error}"))),
    }
    let bytes = read_all(workspace.fs(), &target.key)
        .map_err(|error| ToolError::plain(format!("cannot read \"{path}\": {error}")))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| ToolError::plain(format!("\"{path}\" is not UTF-8 text")))
}

fn view(
    arguments: &Arguments,
    workspace: &Workspace,
    observations: &Observations,
) -> Result<ToolReply, ToolError> {
    let target = workspace.resolve(&arguments.path)?;
    let is_dir = workspace
        .fs()
        .stat(&target.key)
        .ok()
        .flatten()
        .is_some_and(|stat| stat.is_dir());
    if is_dir {
        return list(workspace, &target.key, &target.display);
    }
    // The core's read checks the read policy and records the observation read-before-write
    // needs; what the model sees is the whole text, rendered as the reference renders it.
    let probe = ReadArgs {
        file_path: arguments.path.clone(),
        offset: None,
        limit: Some(1.0),
    };
    read(&probe, workspace, Some(observations))?;
    let Some(content) = current(workspace, &arguments.path)? else {
        return Err(ToolError::plain(format!(
            "The path {} does not exist. Please provide a valid path.",
            arguments.path
        )));
    };
    let text = crate::view::render(&target.display, &content, arguments.view_range.as_deref())?;
    Ok(done(text, None))
}

fn list(workspace: &Workspace, root: &Path, display: &str) -> Result<ToolReply, ToolError> {
    workspace.check_path_readable(root)?;
    let mut lines = Vec::new();
    let mut more = false;
    let request = WalkRequest {
        root,
        standard_filters: true,
        ignore_files: &[],
        globs: &[],
        glob_base: root,
        mtimes: false,
    };
    let walked = workspace.fs().walk(&request, &mut |walked| {
        if let Walked::Entry(entry) = walked
            && (1..=2).contains(&entry.depth)
        {
            if lines.len() == LISTED {
                more = true;
                return false;
            }
            let slash = if entry.is_file { "" } else { "/" };
            lines.push(format!("{}{slash}", entry.path.display()));
        }
        true
    });
    walked.map_err(|error| ToolError::plain(format!("cannot list \"{display}\": {error}")))?;
    let mut text = format!(
        "Here are the files and directories up to 2 levels deep in {display}, excluding hidden items:\n{display}/\n{}",
        lines.join("\n")
    );
    if more {
        text.push_str(&format!("\n[listing stopped at {LISTED} entries]"));
    }
    Ok(done(text, None))
}

/// Publishes `content` at `path` through the core's `write` (policy, read-before-write),
/// remembering `before` for `undo_edit` once it is written.
fn publish(
    path: &str,
    content: String,
    before: Option<String>,
    workspace: &Workspace,
    observations: &Observations,
    history: Option<&History>,
) -> Result<dsh_tool_fs_core::MutationOutput, ToolError> {
    let args = WriteArgs {
        file_path: path.to_owned(),
        content,
    };
    let output = write(&args, workspace, Some(observations))?;
    if let Some(history) = history {
        lock(&history.before)
            .entry(output.target.display.clone())
            .or_default()
            .push(before);
    }
    Ok(output)
}

fn create(
    arguments: &Arguments,
    workspace: &Workspace,
    observations: &Observations,
    history: &History,
) -> Result<ToolReply, ToolError> {
    let text = required(&arguments.file_text, "file_text", "create")?;
    let before = current(workspace, &arguments.path)?;
    if before.is_some() {
        return Err(ToolError::plain(format!(
            "File already exists at: {}. Cannot overwrite files using command `create`.",
            arguments.path
        )));
    }
    let output = publish(
        &arguments.path,
        text.to_owned(),
        before,
        workspace,
        observations,
        Some(history),
    )?;
    Ok(done(
        format!(
            "New file created successfully at: {}",
            output.target.display
        ),
        None,
    ))
}

fn replace(
    arguments: &Arguments,
    workspace: &Workspace,
    observations: &Observations,
    history: &History,
) -> Result<ToolReply, ToolError> {
    let old = required(&arguments.old_str, "old_str", "str_replace")?;
    let before = current(workspace, &arguments.path)?;
    let args = EditArgs {
        file_path: arguments.path.clone(),
        old_string: old.to_owned(),
        new_string: arguments.new_str.clone().unwrap_or_default(),
        replace_all: Some(false),
    };
    let output = edit(&args, workspace, Some(observations)).map_err(|error| {
        let path = &arguments.path;
        // The reference's words where its checks are the same; otherwise the core's, with
        // this tool's parameter names.
        let message = match (error.code(), &before) {
            (ErrorCode::FsEditNotFound, _) if !old.is_empty() => format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            ),
            (ErrorCode::FsAmbiguousEdit, Some(content)) => format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines [{}]. Please ensure it is unique",
                lines_of(content, old)
            ),
            _ => error
                .message()
                .replace("old_string", "old_str")
                .replace("new_string", "new_str"),
        };
        ToolError::new(error.code(), message)
    })?;
    lock(&history.before)
        .entry(output.target.display.clone())
        .or_default()
        .push(before);
    Ok(done(edited(&output.target.display), None))
}

fn insert(
    arguments: &Arguments,
    workspace: &Workspace,
    observations: &Observations,
    history: &History,
) -> Result<ToolReply, ToolError> {
    let new = required(&arguments.new_str, "new_str", "insert")?;
    let Some(line) = arguments.insert_line else {
        return Err(ToolError::plain("`insert` needs `insert_line`"));
    };
    let Some(before) = current(workspace, &arguments.path)? else {
        return Err(ToolError::plain(format!(
            "\"{}\" does not exist; use `create`",
            arguments.path
        )));
    };
    let lines: Vec<&str> = before.split_inclusive('\n').collect();
    let at = usize::try_from(line)
        .ok()
        .filter(|at| *at <= lines.len())
        .ok_or_else(|| {
            ToolError::plain(format!(
                "Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {}]",
                lines.len()
            ))
        })?;
    let text = inserted(&lines, at, new);
    let output = publish(
        &arguments.path,
        text,
        Some(before),
        workspace,
        observations,
        Some(history),
    )?;
    Ok(done(edited(&output.target.display), None))
}

fn undo(
    arguments: &Arguments,
    workspace: &Workspace,
    observations: &Observations,
    history: &History,
) -> Result<ToolReply, ToolError> {
    let target = workspace.resolve(&arguments.path)?;
    let last = lock(&history.before)
        .get_mut(&target.display)
        .and_then(Vec::pop);
    let Some(before) = last else {
        return Err(ToolError::plain(format!(
            "no edit of \"{}\" to undo",
            target.display
        )));
    };
    let Some(before) = before else {
        // Put back, so a later undo of it is refused the same way.
        lock(&history.before)
            .entry(target.display.clone())
            .or_default()
            .push(None);
        return Err(ToolError::plain(format!(
            "the last change created \"{}\"; undo_edit does not delete files",
            target.display
        )));
    };
    let output = match publish(
        &arguments.path,
        before.clone(),
        None,
        workspace,
        observations,
        None,
    ) {
        Ok(output) => output,
        Err(error) => {
            // Still undoable once whatever stopped it is settled (a view of a changed file).
            lock(&history.before)
                .entry(target.display.clone())
                .or_default()
                .push(Some(before));
            return Err(error);
        }
    };
    Ok(done(
        format!(
            "Last edit to {} undone successfully.",
            output.target.display
        ),
        Some(output.meta),
    ))
}

/// `lines` (each with its line ending) with `new` as whole lines after the first `at`.
fn inserted(lines: &[&str], at: usize, new: &str) -> String {
    let mut text: String = lines[..at].concat();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(new);
    if !new.ends_with('\n') && at < lines.len() {
        text.push('\n');
    }
    text.push_str(&lines[at..].concat());
    text
}

#[cfg(test)]
mod tests {
    use super::inserted;

    fn insert(before: &str, at: usize, new: &str) -> String {
        let lines: Vec<&str> = before.split_inclusive('\n').collect();
        inserted(&lines, at, new)
    }

    #[test]
    fn text_goes_in_as_whole_lines() {
        assert_eq!(insert("a\nb\n", 0, "top"), "top\na\nb\n");
        assert_eq!(insert("a\nb\n", 1, "mid\n"), "a\nmid\nb\n");
        assert_eq!(insert("a\nb\n", 2, "end\n"), "a\nb\nend\n");
        // A last line without its newline gets one before the insertion.
        assert_eq!(insert("a\nb", 2, "end"), "a\nb\nend");
        assert_eq!(insert("", 0, "only"), "only");
    }
}
