//! The viewport's layout, top to bottom: the live part of the conversation (what streams, the
//! tools still running; its tail when it is taller than the room left), the messages queued
//! for the next turns, the approval or question modal, a picker, the composer and the status
//! line. The viewport is as tall as this needs, never taller than the screen.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::composer::Composer;
use crate::modal::ApprovalModal;
use crate::popup::Picker;
use crate::question::QuestionModal;
use crate::theme;

/// How many queued messages are listed (the rest are counted in the status line).
const QUEUE_ROWS: usize = 3;

pub(crate) struct View<'a> {
    /// Already wrapped to the screen's width.
    pub(crate) live: Vec<Line<'static>>,
    pub(crate) queue: &'a [String],
    pub(crate) popup: Option<&'a Picker>,
    pub(crate) approval: Option<&'a ApprovalModal>,
    pub(crate) question: Option<&'a QuestionModal>,
    pub(crate) composer: &'a Composer,
    pub(crate) status: Line<'static>,
}

struct Heights {
    live: u16,
    queue: u16,
    modal: u16,
    popup: u16,
    composer: u16,
}

impl View<'_> {
    fn heights(&self, width: u16, height: u16) -> Heights {
        let composer = self.composer.height(width);
        let modal = match (self.approval, self.question) {
            (Some(modal), _) => modal.height(width),
            (None, Some(modal)) => modal.height(width),
            _ => 0,
        };
        let popup = self.popup.map_or(0, Picker::height);
        let queue = self.queue.len().min(QUEUE_ROWS) as u16;
        let fixed = 1 + composer + queue + popup;
        // The modal gives way before the composer does; the live part fills what is left.
        let modal = modal.min(height.saturating_sub(fixed));
        let live = (self.live.len() as u16).min(height.saturating_sub(fixed + modal));
        Heights {
            live,
            queue,
            modal,
            popup,
            composer,
        }
    }

    /// The rows the viewport needs at `width`, at most `height`.
    pub(crate) fn rows(&self, width: u16, height: u16) -> u16 {
        let h = self.heights(width, height);
        (h.live + h.queue + h.modal + h.popup + h.composer + 1).min(height)
    }

    /// Draws into `buf` (whose area is the viewport); answers the cursor.
    pub(crate) fn render(&self, buf: &mut Buffer) -> Option<(u16, u16)> {
        let area = buf.area;
        let h = self.heights(area.width, area.height);
        let mut y = area.y;
        let skip = self.live.len().saturating_sub(usize::from(h.live));
        for line in self.live.iter().skip(skip) {
            buf.set_line(area.x, y, line, area.width);
            y += 1;
        }
        let shown = self.queue.len().min(QUEUE_ROWS);
        for (index, text) in self.queue.iter().take(QUEUE_ROWS).enumerate() {
            let first = text.lines().next().unwrap_or_default();
            let mut spans = vec![
                Span::styled("↳ queued: ", theme::dim()),
                Span::styled(crate::wrap::sanitize(first), theme::italic()),
            ];
            if index + 1 == shown {
                spans.push(Span::styled("  (Alt-↑ edits)", theme::dim()));
            }
            let line = Line::from(spans);
            buf.set_line(area.x, y, &line, area.width);
            y += 1;
        }
        if h.modal > 0 {
            let modal_area = Rect::new(area.x, y, area.width, h.modal);
            match (self.approval, self.question) {
                (Some(modal), _) => modal.render(modal_area, buf),
                (None, Some(modal)) => modal.render(modal_area, buf),
                _ => {}
            }
            y += h.modal;
        }
        if let Some(popup) = self.popup {
            popup.render(Rect::new(area.x, y, area.width, h.popup), buf);
            y += h.popup;
        }
        let composer_area = Rect::new(area.x, y, area.width, h.composer);
        let cursor = self.composer.render(composer_area, buf);
        y += h.composer;
        if y < area.bottom() {
            buf.set_line(area.x, y, &self.status, area.width);
        }
        let modal_open = self.approval.is_some() || self.question.is_some();
        let picker_typing = self.popup.is_some_and(|p| p.kind.owns_input());
        (!modal_open && !picker_typing).then_some(cursor)
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
