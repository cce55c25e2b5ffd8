//! A file change as unified hunks for the page, from what the tools recorded: each hunk's old
//! and new text (with its context lines) and, where the tool said, the line it starts at. The
//! lines inside a hunk are matched by `similar`, and a line replaced by another has its changed
//! words marked.

use std::time::{Duration, Instant};

use dsh_protocol::{DiffHunk, DiffLine, DiffLineKind, DiffSpan};
use similar::{ChangeTag, TextDiff};

/// Past this, a hunk's lines are matched without looking for the words that changed: a page
/// gains nothing from word marks in a thousand-line rewrite.
const INLINE_LIMIT: usize = 64 * 1024;

/// How long matching one hunk may take before `similar` settles for a coarser answer.
const MATCH_TIME: Duration = Duration::from_millis(100);

/// One side of a recorded hunk: its text and the line it starts at, when recorded.
#[derive(Debug, Clone, Copy)]
pub struct DiffSide<'a> {
    pub text: &'a str,
    pub start: Option<u64>,
}

/// Lines of `old` and `new` as one hunk.
fn hunk(old: DiffSide<'_>, new: DiffSide<'_>) -> DiffHunk {
    let diff = TextDiff::configure()
        .timeout(MATCH_TIME)
        .diff_lines(old.text, new.text);
    let mut lines = Vec::new();
    let numbered =
        |start: Option<u64>, index: Option<usize>| Some(start? + u64::try_from(index?).ok()?);
    let inline = old.text.len() + new.text.len() <= INLINE_LIMIT;
    let deadline = Instant::now() + MATCH_TIME;
    for op in diff.ops() {
        for change in diff.iter_inline_changes_deadline(op, Some(deadline)) {
            let kind = match change.tag() {
                ChangeTag::Equal => DiffLineKind::Context,
                ChangeTag::Delete => DiffLineKind::Removed,
                ChangeTag::Insert => DiffLineKind::Added,
            };
            let parts: Vec<(bool, String)> = change
                .iter_strings_lossy()
                .map(|(changed, text)| (changed, text.into_owned()))
                .collect();
            let text: String = parts.iter().map(|(_, text)| text.as_str()).collect();
            let text = text.strip_suffix('\n').unwrap_or(&text).to_owned();
            let marked = inline
                && kind != DiffLineKind::Context
                && parts.iter().any(|(changed, _)| *changed)
                && parts.iter().any(|(changed, _)| !*changed);
            let spans = match marked {
                true => spans_of(parts),
                false => Vec::new(),
            };
            lines.push(DiffLine {
                kind,
                old: numbered(old.start, change.old_index()),
                new: numbered(new.start, change.new_index()),
                text,
                spans,
            });
        }
    }
    DiffHunk {
        old_start: old.start,
        new_start: new.start,
        lines,
    }
}

/// The runs of a replaced line, neighbours of one kind merged, without its newline.
fn spans_of(parts: Vec<(bool, String)>) -> Vec<DiffSpan> {
    let mut spans: Vec<DiffSpan> = Vec::new();
    for (changed, text) in parts {
        let text = text.strip_suffix('\n').map(str::to_owned).unwrap_or(text);
        if text.is_empty() {
            continue;
        }
        match spans.last_mut() {
            Some(last) if last.changed == changed => last.text.push_str(&text),
            _ => spans.push(DiffSpan { text, changed }),
        }
    }
    spans
}

/// The page's hunks of recorded `(old, new)` pairs.
pub fn hunks<'a>(
    recorded: impl IntoIterator<Item = (DiffSide<'a>, DiffSide<'a>)>,
) -> Vec<DiffHunk> {
    recorded
        .into_iter()
        .map(|(old, new)| hunk(old, new))
        .collect()
}

/// A file written whole where there was none: every line added, numbered from 1.
pub fn inserted(text: &str) -> DiffHunk {
    let lines = text
        .split('\n')
        .enumerate()
        .map(|(index, line)| DiffLine {
            kind: DiffLineKind::Added,
            old: None,
            new: u64::try_from(index + 1).ok(),
            text: line.to_owned(),
            spans: Vec::new(),
        })
        .collect();
    DiffHunk {
        old_start: None,
        new_start: Some(1),
        lines,
    }
}

/// The kind of a line, re-exported for readers that count.
pub use dsh_protocol::DiffLineKind as LineKind;

#[cfg(test)]
mod tests {
    use super::*;

    fn side(text: &str, start: Option<u64>) -> DiffSide<'_> {
        DiffSide { text, start }
    }

    #[test]
    fn a_replaced_line_is_numbered_in_both_files_and_its_changed_word_marked() {
        let found = hunks([(
            side("a\nb\nlet x = 1;\nc", Some(10)),
            side("a\nb\nlet x = 2;\nc", Some(10)),
        )]);
        let lines = &found[0].lines;
        let kinds: Vec<_> = lines.iter().map(|line| line.kind).collect();
        assert_eq!(
            kinds,
            [
                LineKind::Context,
                LineKind::Context,
                LineKind::Removed,
                LineKind::Added,
                LineKind::Context
            ]
        );
        assert_eq!((lines[0].old, lines[0].new), (Some(10), Some(10)));
        assert_eq!((lines[2].old, lines[2].new), (Some(12), None));
        assert_eq!((lines[3].old, lines[3].new), (None, Some(12)));
        assert_eq!(lines[4].old, Some(13));
        assert_eq!(lines[3].text, "let x = 2;");
        let changed: Vec<_> = lines[3]
            .spans
            .iter()
            .filter(|span| span.changed)
            .map(|span| span.text.as_str())
            .collect();
        assert_eq!(changed, ["2;"]);
    }

    #[test]
    fn without_a_recorded_start_lines_are_not_numbered() {
        let found = hunks([(side("x", None), side("y\nz", None))]);
        assert!(
            found[0]
                .lines
                .iter()
                .all(|line| line.old.is_none() && line.new.is_none())
        );
        assert_eq!(found[0].lines.len(), 3);
    }

    #[test]
    fn a_new_file_is_all_added_from_line_one() {
        let hunk = inserted("one\ntwo");
        assert_eq!(hunk.lines.len(), 2);
        assert_eq!(hunk.lines[1].new, Some(2));
        assert!(hunk.lines.iter().all(|line| line.kind == LineKind::Added));
    }
}
