//! The session as this client holds it: its items in order (kept current by the update
//! frames' ops) and how much of it is in the scrollback. Items go to the scrollback in order,
//! once each can change no more; a streaming answer goes line by line as its source lines
//! complete (see [`crate::markdown`]), so a long answer is readable and scrollable while it
//! streams. What is not in the scrollback yet is the live part the viewport shows.

use std::collections::HashMap;

use dsh_client_protocol::{AppendField, ChatItem, ItemOp};
use ratatui::text::Line;

use crate::cells::{self, CellOptions};

#[derive(Default)]
pub(crate) struct Transcript {
    items: Vec<ChatItem>,
    index: HashMap<String, usize>,
    /// Items before this one are in the scrollback whole.
    committed: usize,
    /// Of the item at `committed` (a streaming answer), the lines already in the scrollback.
    partial: usize,
    /// And the length of its settled source they were rendered from (unchanged: nothing new
    /// to render).
    partial_source: usize,
    pub(crate) options: CellOptions,
}

impl Transcript {
    /// Forgets everything (another session, a resync).
    pub(crate) fn clear(&mut self) {
        *self = Self {
            options: self.options,
            ..Self::default()
        };
    }

    /// Whether any of it went to the scrollback.
    pub(crate) fn printed_any(&self) -> bool {
        self.committed > 0 || self.partial > 0
    }

    pub(crate) fn items(&self) -> &[ChatItem] {
        &self.items
    }

    pub(crate) fn find(&self, id: &str) -> Option<&ChatItem> {
        self.index.get(id).map(|&at| &self.items[at])
    }

    /// The item as it now is: new at the end, or in place of the one with its id.
    pub(crate) fn upsert(&mut self, item: ChatItem) {
        match self.index.get(item.id()) {
            // The scrollback cannot change: an item already there stays as it was printed.
            Some(&at) if at < self.committed => {}
            Some(&at) => self.items[at] = item,
            None => {
                self.index.insert(item.id().to_owned(), self.items.len());
                self.items.push(item);
            }
        }
    }

    /// Applies one op; answers the id of an answer an append named that this transcript does
    /// not hold (the text so far is missing: the caller reads the session again).
    pub(crate) fn apply(&mut self, op: ItemOp) -> Option<String> {
        match op {
            ItemOp::Upsert { item } => self.upsert(item),
            ItemOp::Append {
                item_id,
                field,
                text: more,
            } => {
                let Some(ChatItem::Assistant {
                    text, reasoning, ..
                }) = self
                    .index
                    .get(&item_id)
                    .and_then(|&at| self.items.get_mut(at))
                else {
                    return Some(item_id);
                };
                match field {
                    AppendField::Text => text.push_str(&more),
                    AppendField::Reasoning => reasoning.push_str(&more),
                }
            }
            // Rendered HTML for pages; this client renders the Markdown itself.
            ItemOp::Blocks { .. } => {}
        }
        None
    }

    /// The lines that can go to the scrollback now, marked as gone there.
    pub(crate) fn take_settled(&mut self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        while let Some(item) = self.items.get(self.committed) {
            if cells::settled(item) {
                let lines = cells::render(item, self.options);
                out.extend(lines.into_iter().skip(self.partial));
                self.committed += 1;
                self.partial = 0;
                self.partial_source = 0;
                continue;
            }
            if let ChatItem::Assistant {
                text, reasoning, ..
            } = item
                && !text.is_empty()
            {
                let source = crate::markdown::settled(text);
                if source.len() == self.partial_source {
                    break;
                }
                self.partial_source = source.len();
                // The reasoning is whole once the answer's text began.
                let mut lines = cells::reasoning_lines(reasoning, self.options);
                lines.extend(cells::answer_lines(source));
                if lines.len() > self.partial {
                    out.extend(lines[self.partial..].iter().cloned());
                    self.partial = lines.len();
                }
            }
            break;
        }
        out
    }

    /// The lines of what is not in the scrollback yet.
    pub(crate) fn live_lines(&self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for (offset, item) in self.items[self.committed.min(self.items.len())..]
            .iter()
            .enumerate()
        {
            let lines = match item {
                ChatItem::Assistant {
                    text,
                    reasoning,
                    streaming: true,
                    ..
                } => {
                    let mut lines = cells::reasoning_lines(reasoning, self.options);
                    lines.extend(cells::answer_lines(text));
                    lines
                }
                // An undecided approval is the modal's; the card here would say it twice.
                ChatItem::Approval { outcome: None, .. }
                | ChatItem::Question { outcome: None, .. } => Vec::new(),
                other => cells::render(other, self.options),
            };
            let skip = if offset == 0 { self.partial } else { 0 };
            out.extend(lines.into_iter().skip(skip));
        }
        out
    }

    /// As if nothing had been printed (before printing it all again: reasoning shown or
    /// hidden, a session opened anew).
    pub(crate) fn rewind(&mut self) {
        self.committed = 0;
        self.partial = 0;
        self.partial_source = 0;
    }

    /// The newest undecided approval.
    pub(crate) fn pending_approval(&self) -> Option<&ChatItem> {
        self.items
            .iter()
            .rev()
            .find(|item| matches!(item, ChatItem::Approval { outcome: None, .. }))
    }

    /// The newest unanswered question.
    pub(crate) fn pending_question(&self) -> Option<&ChatItem> {
        self.items
            .iter()
            .rev()
            .find(|item| matches!(item, ChatItem::Question { outcome: None, .. }))
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
