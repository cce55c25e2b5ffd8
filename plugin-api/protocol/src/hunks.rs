//! A file change as a page shows it: unified hunks of context, removed and added lines, each
//! numbered in the file before and after where the tool recorded where the hunk starts, with
//! the changed words of a replaced line marked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One region of a change with its context lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffHunk {
    /// The line of the file before the change where the hunk starts (1-based), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_start: Option<u64>,
    /// The same in the file after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_start: Option<u64>,
    pub lines: Vec<DiffLine>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DiffLineKind {
    Context,
    Removed,
    Added,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffLine {
    pub kind: DiffLineKind,
    /// Its number in the file before (context and removed lines), when the hunk's start is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<u64>,
    /// Its number in the file after (context and added lines), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<u64>,
    pub text: String,
    /// The line as runs of unchanged and changed text, when part of a replaced line changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<DiffSpan>,
}

/// A run of a replaced line: changed or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiffSpan {
    pub text: String,
    pub changed: bool,
}

/// Cuts `hunks` to at most `limit` bytes of line text (whole lines); whether any was cut.
pub fn cut_hunks(hunks: &mut Vec<DiffHunk>, limit: usize) -> bool {
    let mut budget = limit;
    let mut cut_at = None;
    'find: for (hunk_index, hunk) in hunks.iter().enumerate() {
        for (line_index, line) in hunk.lines.iter().enumerate() {
            if line.text.len() > budget {
                cut_at = Some((hunk_index, line_index));
                break 'find;
            }
            budget -= line.text.len();
        }
    }
    let Some((hunk_index, line_index)) = cut_at else {
        return false;
    };
    hunks[hunk_index].lines.truncate(line_index);
    let keep = match line_index {
        0 => hunk_index,
        _ => hunk_index + 1,
    };
    hunks.truncate(keep);
    true
}
