//! How a tool card shows its call: a view computed by the host from the arguments and the
//! result (a terminal, a diff, a read, a search, the todo list, a delegation), which the tools
//! produce and every client (the page, an editor over ACP, the terminal UI) draws.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::TodoItem;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ToolStatus {
    Running,
    Ok,
    Error,
}

/// How a tool card shows its call, computed from the arguments and the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum ToolView {
    /// A shell command: the command, its output, its exit code once known.
    Terminal {
        command: String,
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// A file written or edited: the change as unified hunks, and how many lines it added and
    /// removed.
    Diff {
        path: String,
        hunks: Vec<crate::DiffHunk>,
        added: u64,
        removed: u64,
    },
    /// A file read: its lines, numbered from `first_line`.
    Read {
        path: String,
        first_line: u64,
        text: String,
    },
    /// A search (glob, grep): what was looked for and the lines found.
    Search { pattern: String, results: String },
    /// The todo list as written.
    Todo { items: Vec<TodoItem> },
    /// A delegation (`subagent`, `subagent_fork`): the task, the child's session once it
    /// started (its conversation is read with `session.history`), and its result.
    Subagent {
        label: String,
        prompt: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        child: Option<String>,
        result: String,
    },
    /// Any other tool: its result as text (its arguments are the call's own, which every item
    /// and event of a call carries beside its view; a view repeating them doubled what a page
    /// of such calls weighs).
    Generic { result: String },
}
