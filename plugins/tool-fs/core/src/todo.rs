//! `todo_write`: validate a whole-list replacement and produce the result text and the
//! `todo/write` event data. Appending the event to the calling agent's session (and refusing a
//! caller without one) is the wrapper's job.

use dsh_protocol::TodoWriteEvent;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// A todo's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Finished.
    Completed,
}

/// One todo as the model sends it (unknown keys are rejected, as the reference's schema does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What the task is.
    pub content: String,
    /// Its status.
    pub status: TodoStatus,
}

/// `todo_write` arguments: the complete list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TodoWriteArgs {
    /// The complete list, replacing any previous one.
    pub todos: Vec<TodoItem>,
}

/// Counts per status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TodoCounts {
    /// `pending` items.
    pub pending: usize,
    /// `in_progress` items.
    pub in_progress: usize,
    /// `completed` items.
    pub completed: usize,
}

/// A validated `todo_write`.
#[derive(Debug, Clone, PartialEq)]
pub struct TodoOutput {
    /// The canonical list (contents trimmed).
    pub todos: Vec<TodoItem>,
    /// Counts per status.
    pub counts: TodoCounts,
    /// The model-facing text.
    pub text: String,
    /// The `todo/write` event.
    pub event: TodoWriteEvent,
}

/// Validate and canonicalize: contents are trimmed, must be non-empty and unique, and at most
/// one item may be `in_progress` unless the deployment allows parallel work.
pub fn todo_write(
    args: &TodoWriteArgs,
    allow_parallel_in_progress: bool,
) -> Result<TodoOutput, ToolError> {
    let mut todos: Vec<TodoItem> = Vec::with_capacity(args.todos.len());
    let mut counts = TodoCounts::default();
    for item in &args.todos {
        let content = item.content.trim();
        if content.is_empty() {
            return Err(ToolError::plain(
                "invalid todo: `content` must be a non-empty string",
            ));
        }
        if todos.iter().any(|seen| seen.content == content) {
            let quoted =
                serde_json::to_string(content).unwrap_or_else(|_| format!("\"{content}\""));
            return Err(ToolError::plain(format!(
                "invalid todos: duplicate content {quoted}"
            )));
        }
        match item.status {
            TodoStatus::Pending => counts.pending += 1,
            TodoStatus::InProgress => counts.in_progress += 1,
            TodoStatus::Completed => counts.completed += 1,
        }
        todos.push(TodoItem {
            content: content.to_owned(),
            status: item.status,
        });
    }
    if !allow_parallel_in_progress && counts.in_progress > 1 {
        return Err(ToolError::plain(format!(
            "invalid todos: at most one task may be in_progress (got {})",
            counts.in_progress
        )));
    }
    let text = format!(
        "Updated todo list: {} pending, {} in progress, {} completed.",
        counts.pending, counts.in_progress, counts.completed
    );
    let event = TodoWriteEvent {
        todos: todos
            .iter()
            .map(|item| dsh_protocol::TodoItem {
                content: item.content.clone(),
                status: match item.status {
                    TodoStatus::Pending => dsh_protocol::TodoStatus::Pending,
                    TodoStatus::InProgress => dsh_protocol::TodoStatus::InProgress,
                    TodoStatus::Completed => dsh_protocol::TodoStatus::Completed,
                },
            })
            .collect(),
    };
    Ok(TodoOutput {
        todos,
        counts,
        text,
        event,
    })
}
