//! A streaming answer as blocks: everything up to the last blank line outside a code fence (or
//! a fence's closing line) can no longer change and is rendered once, highlighted; what follows
//! is the open tail, rendered again as it grows. A page then replaces only its last block per
//! frame instead of the whole message.
//!
//! Where the blocks fall depends only on the text, not on how it was cut into chunks (only
//! whole lines are scanned), so a reader that starts from the whole text (a history page) gets
//! the same blocks as one that followed every chunk. A finished answer is shown in the same
//! blocks (its tail highlighted too), so the page keeps every block it already has and the end of
//! a stream re-renders one block, not the message. Blocks rendered apart can differ from the
//! whole text rendered at once: a loose list restarts its `<ol>` (numbered on from where it
//! was), and a reference link defined in a later block stays text, which models rarely write.
//!
//! An open tail longer than [`TAIL_LIMIT`] is not rendered again for each chunk (a paragraph or a
//! code fence that runs on for a megabyte would cost its whole length per chunk, quadratic in
//! the answer): [`StreamedMarkdown::grow`] then says nothing changed, and a reader shows the
//! appended text after the tail it last got until a block settles or the answer ends.

use crate::markdown::render;

/// The rendered blocks from `from` on, replacing what a reader held from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlocksUpdate {
    pub from: usize,
    pub blocks: Vec<String>,
}

/// The longest open tail [`StreamedMarkdown::grow`] renders again as it grows.
pub const TAIL_LIMIT: usize = 16 * 1024;

/// How far one streaming text has been split.
#[derive(Debug, Default, Clone)]
pub struct StreamedMarkdown {
    /// Bytes of the text in settled blocks.
    settled_to: usize,
    /// How many settled blocks there are.
    settled: usize,
    /// Bytes of whole lines scanned for boundaries.
    scanned_to: usize,
    /// The open fence: its character and length.
    fence: Option<(char, usize)>,
    /// Whether the scanned part after `settled_to` holds anything but blank lines.
    pending_content: bool,
}

/// A fence marker at the start of `line` (up to three spaces in, or inside a list item):
/// its character and length.
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start();
    let first = trimmed.chars().next()?;
    if first != '`' && first != '~' {
        return None;
    }
    let length = trimmed.chars().take_while(|c| *c == first).count();
    (length >= 3).then_some((first, length))
}

impl StreamedMarkdown {
    /// Scans what `text` gained since the last call and renders the blocks that settled and
    /// the tail. `text` must extend the text of the previous call.
    pub fn update(&mut self, text: &str) -> BlocksUpdate {
        self.split(text, usize::MAX)
    }

    /// As [`Self::update`], but `None` when no block settled and the open tail is longer than
    /// [`TAIL_LIMIT`]: the reader keeps the blocks it has. When a block settles the tail is
    /// rendered whatever its length, since it lies wholly in the text added since the last call
    /// (its line break was found in it), so each byte of the text is sent at most once that way.
    pub fn grow(&mut self, text: &str) -> Option<BlocksUpdate> {
        let update = self.split(text, TAIL_LIMIT);
        (!update.blocks.is_empty() || text[self.settled_to..].len() <= TAIL_LIMIT).then_some(update)
    }

    /// Scans for settled blocks and renders them, and the tail when a block settled or it is at
    /// most `tail_limit` long.
    fn split(&mut self, text: &str, tail_limit: usize) -> BlocksUpdate {
        let from = self.settled;
        let mut blocks = Vec::new();
        while let Some(end) = text[self.scanned_to..].find('\n') {
            let line_end = self.scanned_to + end + 1;
            let line = &text[self.scanned_to..line_end];
            self.scanned_to = line_end;
            let boundary = match self.fence {
                Some((mark, length)) => {
                    let closes = fence_marker(line).is_some_and(|(c, n)| c == mark && n >= length)
                        && line.trim().chars().all(|c| c == mark);
                    if closes {
                        self.fence = None;
                    }
                    closes
                }
                None if line.trim().is_empty() => self.pending_content,
                None => {
                    self.fence = fence_marker(line);
                    self.pending_content = true;
                    false
                }
            };
            if boundary {
                blocks.push(render(&text[self.settled_to..line_end], true));
                self.settled += 1;
                self.settled_to = line_end;
                self.pending_content = false;
            }
        }
        let tail = &text[self.settled_to..];
        let render_tail = self.settled > from || tail.len() <= tail_limit;
        if render_tail && !tail.trim().is_empty() {
            blocks.push(render(tail, false));
        }
        BlocksUpdate { from, blocks }
    }

    /// The blocks of `text` read whole (a history page of an answer still streaming).
    pub fn of(text: &str) -> Vec<String> {
        Self::default().update(text).blocks
    }

    /// The blocks of a finished answer: as while it streamed, its last block highlighted too.
    pub fn finished(text: &str) -> Vec<String> {
        let mut stream = Self::default();
        let mut blocks = stream.update(text).blocks;
        let tail = &text[stream.settled_to..];
        if !tail.trim().is_empty()
            && let Some(last) = blocks.last_mut()
        {
            *last = render(tail, true);
        }
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = "# Title\n\nA paragraph\nthat wraps.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\nAfter the code.\n\n- one\n- two\n";

    #[test]
    fn paragraphs_and_closed_fences_settle_and_the_tail_stays_open() {
        let mut stream = StreamedMarkdown::default();
        let first = stream.update(&ANSWER[..30]);
        assert_eq!(first.from, 0);
        assert_eq!(first.blocks.len(), 2, "{first:?}");
        assert!(first.blocks[0].contains("<h1>Title</h1>"));
        let rest = stream.update(ANSWER);
        assert_eq!(rest.from, 1);
        // The paragraph, the fence (blank line inside kept), "After the code.", the open list.
        assert_eq!(rest.blocks.len(), 4, "{rest:?}");
        assert!(rest.blocks[1].contains(">b<"), "{rest:?}");
        assert!(
            rest.blocks[1].contains("hl-"),
            "settled code is highlighted"
        );
        assert!(rest.blocks[3].contains("<li>two</li>"), "{rest:?}");
    }

    #[test]
    fn the_blocks_do_not_depend_on_how_the_text_was_chunked() {
        let whole = StreamedMarkdown::of(ANSWER);
        for size in [1, 2, 3, 7, 64] {
            let mut stream = StreamedMarkdown::default();
            let mut blocks: Vec<String> = Vec::new();
            let mut end = 0;
            while end < ANSWER.len() {
                end = (end + size).min(ANSWER.len());
                while !ANSWER.is_char_boundary(end) {
                    end += 1;
                }
                let update = stream.update(&ANSWER[..end]);
                blocks.truncate(update.from);
                blocks.extend(update.blocks);
            }
            assert_eq!(blocks, whole, "chunks of {size}");
        }
    }

    #[test]
    fn a_finished_answer_keeps_the_streamed_blocks_and_highlights_its_tail() {
        let text = "One.\n\n```rust\nfn a() {}";
        let streamed = StreamedMarkdown::of(text);
        let finished = StreamedMarkdown::finished(text);
        assert_eq!(streamed[0], finished[0]);
        assert!(!streamed[1].contains("hl-"), "{streamed:?}");
        assert!(finished[1].contains("hl-keyword"), "{finished:?}");
    }

    #[test]
    fn a_long_open_tail_is_not_rendered_per_chunk_until_a_block_settles() {
        let mut stream = StreamedMarkdown::default();
        let mut text = "Intro.\n\n```\n".to_owned();
        let first = stream.grow(&text).unwrap();
        assert_eq!((first.from, first.blocks.len()), (0, 2), "{first:?}");
        // The fence runs past the limit: nothing to send while it stays open.
        text.push_str(&"line\n".repeat(TAIL_LIMIT / 5 + 1));
        assert_eq!(stream.grow(&text), None);
        text.push_str("more\n");
        assert_eq!(stream.grow(&text), None);
        // It closes: the fence settles (rendered once, whole) and the short tail comes.
        text.push_str("```\nAfter.");
        let closed = stream.grow(&text).unwrap();
        assert_eq!(closed.from, 1);
        assert_eq!(closed.blocks.len(), 2, "{closed:?}");
        assert!(closed.blocks[0].contains("more"), "{closed:?}");
        assert!(closed.blocks[1].contains("After."), "{closed:?}");
        // The blocks are those of the text read whole.
        let whole = StreamedMarkdown::of(&text);
        assert_eq!(whole[1..], closed.blocks[..]);
    }

    #[test]
    fn a_tilde_fence_is_not_closed_by_backticks() {
        let blocks = StreamedMarkdown::of("~~~\na\n```\n\nb\n~~~\n\nend\n");
        assert_eq!(blocks.len(), 2, "{blocks:?}");
        assert!(blocks[0].contains("```"), "{blocks:?}");
    }
}
