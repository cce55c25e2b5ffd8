//! The composer: a multi-line text box. Enter sends; Shift-Enter, Alt-Enter or Ctrl-J start a
//! new line; a paste arrives whole (bracketed paste); Up and Down walk the lines, and past the
//! first or the last one the messages sent before. Ctrl-A/E, Home/End, Ctrl-U/K/W edit as a
//! shell does. Lines wrap at the box's width, by characters, so the cursor is always where the
//! text says.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::theme;
use crate::wrap::char_width;

const PROMPT: &str = "› ";
const PLACEHOLDER: &str = "Ask anything · / commands · @ files";

/// What a key did to the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// Not the composer's key.
    Ignored,
    Changed,
    Submit(String),
}

#[derive(Debug, Default)]
pub(crate) struct Composer {
    text: String,
    /// A byte offset into `text`, on a character boundary.
    cursor: usize,
    sent: Vec<String>,
    /// Where Up/Down is in `sent`, and the draft it left.
    browsing: Option<(usize, String)>,
}

impl Composer {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(crate) fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
    }

    pub(crate) fn clear(&mut self) {
        self.set_text("");
        self.browsing = None;
    }

    /// Replaces `text[start..cursor]` with `with` (a completion).
    pub(crate) fn replace_before_cursor(&mut self, start: usize, with: &str) {
        let start = start.min(self.cursor);
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }

    pub(crate) fn insert(&mut self, text: &str) {
        let clean: String = text
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .replace('\t', "    ")
            .chars()
            .filter(|c| *c == '\n' || !c.is_control())
            .collect();
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// Remembers a sent message for Up.
    pub(crate) fn remember(&mut self, text: &str) {
        if self.sent.last().is_none_or(|last| last != text) {
            self.sent.push(text.to_owned());
        }
        self.browsing = None;
    }

    /// The word being typed at the cursor: its start and text (from the last space or line
    /// start to the cursor).
    pub(crate) fn word_at_cursor(&self) -> (usize, &str) {
        let before = &self.text[..self.cursor];
        let start = before.rfind(|c: char| c.is_whitespace()).map_or(0, |at| {
            at + before[at..].chars().next().map_or(1, char::len_utf8)
        });
        (start, &before[start..])
    }

    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Edit {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.insert("\n")
            }
            KeyCode::Char('j') if ctrl => self.insert("\n"),
            KeyCode::Enter => {
                let text = self.text.trim_end().to_owned();
                if text.trim().is_empty() {
                    return Edit::Ignored;
                }
                return Edit::Submit(text);
            }
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(),
            KeyCode::Char('u') if ctrl => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            KeyCode::Char('k') if ctrl => {
                let end = self.line_end();
                self.text.replace_range(self.cursor..end, "");
            }
            KeyCode::Char('w') if ctrl => self.delete_word(),
            KeyCode::Backspace if alt || ctrl => self.delete_word(),
            KeyCode::Char(c) if !ctrl && !alt => self.insert(&c.to_string()),
            KeyCode::Backspace => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                    self.text.remove(self.cursor);
                }
            }
            KeyCode::Delete => {
                if self.cursor < self.text.len() {
                    self.text.remove(self.cursor);
                }
            }
            KeyCode::Left => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
            }
            KeyCode::Right => {
                if let Some(c) = self.text[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
            }
            KeyCode::Home => self.cursor = self.line_start(),
            KeyCode::End => self.cursor = self.line_end(),
            KeyCode::Up => {
                if self.line_start() == 0 {
                    return self.browse(true);
                }
                self.vertical(true);
            }
            KeyCode::Down => {
                if self.line_end() == self.text.len() {
                    return self.browse(false);
                }
                self.vertical(false);
            }
            _ => return Edit::Ignored,
        }
        Edit::Changed
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |at| self.cursor + at)
    }

    fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map_or(0, |at| at + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Moves to the same column of the line above or below.
    fn vertical(&mut self, up: bool) {
        let start = self.line_start();
        let column = self.text[start..self.cursor].chars().count();
        let (from, to) = if up {
            let end = start - 1;
            (self.text[..end].rfind('\n').map_or(0, |at| at + 1), end)
        } else {
            let from = self.line_end() + 1;
            let to = self.text[from..]
                .find('\n')
                .map_or(self.text.len(), |at| from + at);
            (from, to)
        };
        let offset: usize = self.text[from..to]
            .chars()
            .take(column)
            .map(char::len_utf8)
            .sum();
        self.cursor = from + offset;
    }

    /// Up (older) or Down (newer) through the sent messages.
    fn browse(&mut self, older: bool) -> Edit {
        if self.sent.is_empty() {
            return Edit::Ignored;
        }
        let next = match (&self.browsing, older) {
            (None, true) => Some(self.sent.len() - 1),
            (None, false) => return Edit::Ignored,
            (Some((at, _)), true) => Some(at.saturating_sub(1)),
            (Some((at, _)), false) if at + 1 < self.sent.len() => Some(at + 1),
            (Some(_), false) => None,
        };
        match next {
            Some(at) => {
                let draft = match self.browsing.take() {
                    Some((_, draft)) => draft,
                    None => self.text.clone(),
                };
                self.set_text(&self.sent[at].clone());
                self.browsing = Some((at, draft));
            }
            None => {
                let draft = self
                    .browsing
                    .take()
                    .map(|(_, draft)| draft)
                    .unwrap_or_default();
                self.set_text(&draft);
            }
        }
        Edit::Changed
    }

    /// The text as screen rows of `width` columns, and the cursor's row and column.
    fn rows(&self, width: u16) -> (Vec<String>, (u16, u16)) {
        let room = usize::from(width).saturating_sub(2).max(1);
        let mut rows = vec![String::new()];
        let mut used = 0;
        let mut cursor = (0, 0);
        for (at, c) in self.text.char_indices() {
            if at == self.cursor {
                cursor = (rows.len() - 1, used);
            }
            if c == '\n' {
                rows.push(String::new());
                used = 0;
                continue;
            }
            let w = char_width(c);
            if used + w > room {
                rows.push(String::new());
                used = 0;
            }
            if let Some(row) = rows.last_mut() {
                row.push(c);
            }
            used += w;
        }
        if self.cursor >= self.text.len() {
            if used >= room {
                rows.push(String::new());
                used = 0;
            }
            cursor = (rows.len() - 1, used);
        }
        let (row, column) = cursor;
        (rows, (column as u16 + 2, row as u16))
    }

    /// How many rows the composer takes at `width`.
    pub(crate) fn height(&self, width: u16) -> u16 {
        self.rows(width).0.len().min(12) as u16
    }

    /// Draws the composer in `area`; answers where the cursor is.
    pub(crate) fn render(&self, area: Rect, buf: &mut Buffer) -> (u16, u16) {
        let (rows, (column, row)) = self.rows(area.width);
        // Rows that do not fit scroll away at the top, keeping the cursor's row in sight.
        let skip = (row + 1).saturating_sub(area.height);
        if self.text.is_empty() {
            let line = Line::from(vec![
                Span::styled(PROMPT, theme::accent().patch(theme::bold())),
                Span::styled(PLACEHOLDER, theme::dim()),
            ]);
            buf.set_line(area.x, area.y, &line, area.width);
            return (area.x + 2, area.y);
        }
        for (index, text) in rows.iter().enumerate().skip(usize::from(skip)) {
            let y = area.y + index as u16 - skip;
            if y >= area.bottom() {
                break;
            }
            let lead = if index == 0 {
                Span::styled(PROMPT, theme::accent().patch(theme::bold()))
            } else {
                Span::raw("  ")
            };
            buf.set_line(
                area.x,
                y,
                &Line::from(vec![lead, Span::raw(text.clone())]),
                area.width,
            );
        }
        (area.x + column, area.y + row - skip)
    }
}

#[cfg(test)]
#[path = "composer_tests.rs"]
mod tests;
