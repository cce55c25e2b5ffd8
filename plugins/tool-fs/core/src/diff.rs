//! Result-time contextual diffs for `write`/`edit` `meta`.
//!
//! The reference computes them with jsdiff's `structuredPatch` (line tokens that keep their
//! newline, Myers' algorithm with jsdiff's diagonal pruning and tie-breaking, three context
//! lines) and turns every hunk into one `{path, oldText, newText}`. Which lines land in a hunk
//! depends on those tie-breaks, so this is a faithful re-implementation of that algorithm, not a
//! generic diff.

use std::rc::Rc;

use serde::Serialize;

/// Context lines on each side of a hunk.
pub const DIFF_CONTEXT: usize = 3;

/// Token comparisons the search may spend before giving up on minimal hunks (about a second).
const DIFF_WORK_BUDGET: u64 = 200_000_000;

/// One applied hunk, as recorded in `meta.diffs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// The path as the model supplied it (`file_path`).
    pub path: String,
    /// The hunk's old side, or `None` for a pure insertion.
    #[serde(rename = "oldText")]
    pub old_text: Option<String>,
    /// The hunk's new side.
    #[serde(rename = "newText")]
    pub new_text: String,
    /// The line of the file before the change where the hunk starts (1-based). Not in the
    /// reference's records (readers treat it as optional): it lets a page number the lines.
    #[serde(rename = "oldStart")]
    pub old_start: usize,
    /// The same in the file after the change.
    #[serde(rename = "newStart")]
    pub new_start: usize,
}

/// One hunk per applied change region between `before` and `after` (both LF-normalized),
/// each with [`DIFF_CONTEXT`] context lines; empty when the texts are equal.
pub fn compute_hunk_diffs(path: &str, before: &str, after: &str) -> Vec<FileDiff> {
    let old_tokens = tokenize(before);
    let new_tokens = tokenize(after);
    let changes = diff_tokens(&old_tokens, &new_tokens);
    hunks(&changes, &old_tokens, &new_tokens, DIFF_CONTEXT)
        .into_iter()
        .map(|(old_start, new_start, lines)| {
            let mut old_lines = Vec::new();
            let mut new_lines = Vec::new();
            for (kind, text) in lines {
                match kind {
                    LineKind::Removed => old_lines.push(text),
                    LineKind::Added => new_lines.push(text),
                    LineKind::Context => {
                        old_lines.push(text);
                        new_lines.push(text);
                    }
                }
            }
            FileDiff {
                path: path.to_owned(),
                old_text: if old_lines.is_empty() {
                    None
                } else {
                    Some(old_lines.join("\n"))
                },
                new_text: new_lines.join("\n"),
                old_start: old_start + 1,
                new_start: new_start + 1,
            }
        })
        .collect()
}

/// jsdiff's line tokenizer: split on `\n`/`\r\n`, keep each separator on its line, drop a
/// final empty token.
fn tokenize(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut start = 0;
    for (index, _) in text.match_indices('\n') {
        tokens.push(&text[start..=index]);
        start = index + 1;
    }
    if start < text.len() {
        tokens.push(&text[start..]);
    }
    tokens
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChangeKind {
    Common,
    Added,
    Removed,
}

/// A change component: `count` consecutive tokens of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Change {
    kind: ChangeKind,
    count: usize,
}

/// A node of the reversed component list the search keeps per diagonal.
struct Component {
    change: Change,
    previous: Option<Rc<Component>>,
}

impl Drop for Component {
    // Long chains would otherwise drop recursively and can exhaust the stack.
    fn drop(&mut self) {
        let mut next = self.previous.take();
        while let Some(node) = next {
            match Rc::try_unwrap(node) {
                Ok(mut owned) => next = owned.previous.take(),
                Err(_) => break,
            }
        }
    }
}

#[derive(Clone)]
struct Path {
    old_pos: isize,
    last: Option<Rc<Component>>,
}

fn add_to_path(path: &Path, kind: ChangeKind, old_inc: isize) -> Path {
    let last = match &path.last {
        Some(last) if last.change.kind == kind => Rc::new(Component {
            change: Change {
                kind,
                count: last.change.count + 1,
            },
            previous: last.previous.clone(),
        }),
        other => Rc::new(Component {
            change: Change { kind, count: 1 },
            previous: other.clone(),
        }),
    };
    Path {
        old_pos: path.old_pos + old_inc,
        last: Some(last),
    }
}

/// Advance along the diagonal while tokens are equal; returns the new-side position.
fn extract_common(path: &mut Path, new: &[&str], old: &[&str], diagonal: isize) -> isize {
    let (new_len, old_len) = (new.len() as isize, old.len() as isize);
    let mut old_pos = path.old_pos;
    let mut new_pos = old_pos - diagonal;
    let mut common = 0;
    while new_pos + 1 < new_len
        && old_pos + 1 < old_len
        && old[(old_pos + 1) as usize] == new[(new_pos + 1) as usize]
    {
        new_pos += 1;
        old_pos += 1;
        common += 1;
    }
    if common > 0 {
        let previous = path.last.take();
        path.last = Some(Rc::new(Component {
            change: Change {
                kind: ChangeKind::Common,
                count: common,
            },
            previous,
        }));
    }
    path.old_pos = old_pos;
    new_pos
}

fn build(last: Option<Rc<Component>>) -> Vec<Change> {
    let mut out = Vec::new();
    let mut next = last;
    while let Some(node) = next {
        out.push(node.change);
        next = node.previous.clone();
    }
    out.reverse();
    out
}

/// jsdiff's `Diff.diff` over tokens (no timeout, no edit-length cap).
fn diff_tokens(old: &[&str], new: &[&str]) -> Vec<Change> {
    let (new_len, old_len) = (new.len() as isize, old.len() as isize);
    let max_edit = new_len + old_len;
    let offset = max_edit + 1;
    let mut best: Vec<Option<Path>> = vec![None; (2 * max_edit + 3) as usize];
    let slot = |d: isize| (d + offset) as usize;

    let mut seed = Path {
        old_pos: -1,
        last: None,
    };
    let new_pos = extract_common(&mut seed, new, old, 0);
    if seed.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return build(seed.last);
    }
    best[slot(0)] = Some(seed);

    let (mut min_diagonal, mut max_diagonal) = (isize::MIN, isize::MAX);
    let mut edit_length: isize = 1;
    // Each edit length costs up to N + M steps; past the budget the exact hunks are not worth
    // minutes of a blocking thread (jsdiff would grind on), so the whole file becomes one hunk.
    let mut work: u64 = 0;
    while edit_length <= max_edit {
        work += (new_len + old_len) as u64;
        if work > DIFF_WORK_BUDGET {
            break;
        }
        let mut diagonal = min_diagonal.max(-edit_length);
        while diagonal <= max_diagonal.min(edit_length) {
            let remove_path = best[slot(diagonal - 1)].take();
            let add_path = best[slot(diagonal + 1)].clone();
            let can_add = add_path.as_ref().is_some_and(|p| {
                let add_new_pos = p.old_pos - diagonal;
                0 <= add_new_pos && add_new_pos < new_len
            });
            let can_remove = remove_path
                .as_ref()
                .is_some_and(|p| p.old_pos + 1 < old_len);
            if !can_add && !can_remove {
                best[slot(diagonal)] = None;
                diagonal += 2;
                continue;
            }
            // jsdiff prefers the path that is farther along the old side, adding on a tie.
            let take_add = !can_remove
                || (can_add
                    && remove_path.as_ref().map(|p| p.old_pos)
                        < add_path.as_ref().map(|p| p.old_pos));
            let base = if take_add {
                add_path
                    .as_ref()
                    .map(|p| add_to_path(p, ChangeKind::Added, 0))
            } else {
                remove_path
                    .as_ref()
                    .map(|p| add_to_path(p, ChangeKind::Removed, 1))
            };
            let Some(mut base) = base else {
                diagonal += 2;
                continue;
            };
            let new_pos = extract_common(&mut base, new, old, diagonal);
            if base.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return build(base.last);
            }
            if base.old_pos + 1 >= old_len {
                max_diagonal = max_diagonal.min(diagonal - 1);
            }
            if new_pos + 1 >= new_len {
                min_diagonal = min_diagonal.max(diagonal + 1);
            }
            best[slot(diagonal)] = Some(base);
            diagonal += 2;
        }
        edit_length += 1;
    }
    // Over budget (D = N + M itself always reaches the end): report a full replacement.
    vec![
        Change {
            kind: ChangeKind::Removed,
            count: old.len(),
        },
        Change {
            kind: ChangeKind::Added,
            count: new.len(),
        },
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    Context,
    Added,
    Removed,
}

/// jsdiff's `structuredPatch` hunk grouping. Each change's lines are its tokens; a hunk line
/// drops its trailing `\n` (the "No newline at end of file" marker is never produced, because
/// the reference skips it).
/// A hunk's lines with where it starts in the old and the new text (0-based lines).
type StartedHunk<'a> = (usize, usize, Vec<(LineKind, &'a str)>);

fn hunks<'a>(
    changes: &[Change],
    old: &[&'a str],
    new: &[&'a str],
    context: usize,
) -> Vec<StartedHunk<'a>> {
    // Materialize each component's tokens, as jsdiff's buildValues does, with where it starts
    // in the old and the new text.
    let mut components: Vec<(ChangeKind, &[&'a str])> = Vec::with_capacity(changes.len() + 1);
    let mut starts: Vec<(usize, usize)> = Vec::with_capacity(changes.len() + 1);
    let (mut old_pos, mut new_pos) = (0usize, 0usize);
    for change in changes {
        starts.push((old_pos, new_pos));
        match change.kind {
            ChangeKind::Removed => {
                components.push((change.kind, &old[old_pos..old_pos + change.count]));
                old_pos += change.count;
            }
            ChangeKind::Added => {
                components.push((change.kind, &new[new_pos..new_pos + change.count]));
                new_pos += change.count;
            }
            ChangeKind::Common => {
                components.push((change.kind, &new[new_pos..new_pos + change.count]));
                new_pos += change.count;
                old_pos += change.count;
            }
        }
    }
    // The trailing empty component closes the last open hunk.
    components.push((ChangeKind::Common, &[]));
    starts.push((old_pos, new_pos));

    let strip = |line: &'a str| line.strip_suffix('\n').unwrap_or(line);
    let mut out = Vec::new();
    let mut open = false;
    let mut current: Vec<(LineKind, &'a str)> = Vec::new();
    let mut current_start = (0, 0);
    let count = components.len();
    for (index, &(kind, lines)) in components.iter().enumerate() {
        if kind != ChangeKind::Common {
            if !open {
                open = true;
                current_start = starts[index];
                if index > 0 {
                    let previous = components[index - 1].1;
                    let keep = previous.len().min(context);
                    current_start = (current_start.0 - keep, current_start.1 - keep);
                    current = previous[previous.len() - keep..]
                        .iter()
                        .map(|l| (LineKind::Context, strip(l)))
                        .collect();
                }
            }
            let line_kind = if kind == ChangeKind::Added {
                LineKind::Added
            } else {
                LineKind::Removed
            };
            current.extend(lines.iter().map(|l| (line_kind, strip(l))));
        } else if open {
            if lines.len() <= context * 2 && index + 2 < count {
                // Short common run between two changes: the hunks merge.
                current.extend(lines.iter().map(|l| (LineKind::Context, strip(l))));
            } else {
                let keep = lines.len().min(context);
                current.extend(lines[..keep].iter().map(|l| (LineKind::Context, strip(l))));
                out.push((
                    current_start.0,
                    current_start.1,
                    std::mem::take(&mut current),
                ));
                open = false;
            }
        }
    }
    out
}
