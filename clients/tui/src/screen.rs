//! The terminal as the UI owns it: an inline viewport (the live part: what streams, the
//! approval in the air, the composer and the status line) at the bottom of what the program
//! printed, and above it the history, written into the terminal's own scrollback so a person
//! scrolls, selects and searches it with the terminal's tools. The viewport grows and shrinks
//! with what it shows (ratatui's own inline viewport has a fixed height, hence this module, as
//! codex-rs keeps its own terminal too).
//!
//! Each frame is one write wrapped in a synchronized update (`CSI ? 2026`), so a terminal that
//! supports it never shows half a frame, and only the cells that changed are drawn. History is
//! printed line by line above the viewport; a line that reaches the bottom scrolls the screen,
//! which pushes the oldest line into the scrollback. On a width change everything is printed
//! again at the new width (the screen and its scrollback cleared first), so the history
//! reflows instead of staying cut at the old width.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use crossterm::cursor::{Hide, MoveTo, Show};
use crossterm::queue;
use crossterm::style::{Attribute, Print, ResetColor, SetAttribute};
use crossterm::terminal::{BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

/// The bytes of one frame, gathered before they are written at once.
#[derive(Clone, Default)]
struct FrameBytes(Rc<RefCell<Vec<u8>>>);

impl Write for FrameBytes {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a frame draws in the viewport: `render` paints the area it is given and answers where
/// the cursor goes (none: hidden).
pub(crate) type Render<'a> = dyn FnOnce(&mut Buffer) -> Option<(u16, u16)> + 'a;

pub(crate) struct Screen {
    out: Box<dyn Write>,
    frame: FrameBytes,
    backend: CrosstermBackend<FrameBytes>,
    width: u16,
    height: u16,
    /// The viewport's first row and its height.
    top: u16,
    rows: u16,
    /// What the viewport shows now (to draw only what changed); `None` after anything that
    /// disturbed it.
    shown: Option<Buffer>,
    /// Every line that went to the scrollback, unwrapped, for a reflow.
    history: Vec<Line<'static>>,
}

impl Screen {
    /// A screen of `width` x `height` whose cursor is on row `cursor_row`: the viewport starts
    /// there.
    pub(crate) fn new(out: Box<dyn Write>, width: u16, height: u16, cursor_row: u16) -> Self {
        let frame = FrameBytes::default();
        Self {
            out,
            backend: CrosstermBackend::new(frame.clone()),
            frame,
            width: width.max(1),
            height: height.max(1),
            top: cursor_row.min(height.saturating_sub(1)),
            rows: 0,
            shown: None,
            history: Vec::new(),
        }
    }

    pub(crate) fn width(&self) -> u16 {
        self.width
    }

    pub(crate) fn height(&self) -> u16 {
        self.height
    }

    /// One frame: `lines` go to the history, then the viewport is drawn `rows` high.
    pub(crate) fn frame(
        &mut self,
        lines: Vec<Line<'static>>,
        rows: u16,
        render: Box<Render<'_>>,
    ) -> io::Result<()> {
        queue!(self.backend, BeginSynchronizedUpdate)?;
        if !lines.is_empty() {
            let wrapped = crate::wrap::wrap_all(&lines, self.width);
            self.history.extend(lines);
            self.print_history(&wrapped)?;
        }
        self.draw(rows, render)?;
        queue!(self.backend, EndSynchronizedUpdate)?;
        self.write_out()
    }

    /// The terminal is now `width` x `height`: a new width reflows the history.
    pub(crate) fn resize(&mut self, width: u16, height: u16) -> io::Result<()> {
        let (width, height) = (width.max(1), height.max(1));
        if width == self.width && height == self.height {
            return Ok(());
        }
        let reflow = width != self.width;
        self.width = width;
        self.height = height;
        self.shown = None;
        queue!(self.backend, BeginSynchronizedUpdate)?;
        if reflow {
            queue!(
                self.backend,
                Clear(ClearType::All),
                Clear(ClearType::Purge),
                MoveTo(0, 0)
            )?;
            self.top = 0;
            let wrapped = crate::wrap::wrap_all(&self.history, width);
            self.print_history(&wrapped)?;
        } else {
            // Where the terminal moved what it showed is its own business: keep the viewport
            // on the screen and draw it whole.
            self.top = self.top.min(height.saturating_sub(self.rows.max(1)));
            self.clear_rows(self.top, height)?;
        }
        queue!(self.backend, EndSynchronizedUpdate)?;
        self.write_out()
    }

    /// Everything printed again (after a host restart or a session switch): the history is
    /// `lines` from now on.
    pub(crate) fn reset_history(&mut self, lines: Vec<Line<'static>>) -> io::Result<()> {
        self.history.clear();
        self.shown = None;
        queue!(
            self.backend,
            BeginSynchronizedUpdate,
            Clear(ClearType::All),
            Clear(ClearType::Purge),
            MoveTo(0, 0)
        )?;
        self.top = 0;
        let wrapped = crate::wrap::wrap_all(&lines, self.width);
        self.history = lines;
        self.print_history(&wrapped)?;
        queue!(self.backend, EndSynchronizedUpdate)?;
        self.write_out()
    }

    /// Leaves the terminal as a shell expects it: the viewport cleared, the cursor where it
    /// began, visible, colours reset.
    pub(crate) fn leave(&mut self) -> io::Result<()> {
        self.clear_rows(self.top, self.top + self.rows)?;
        queue!(
            self.backend,
            MoveTo(0, self.top),
            SetAttribute(Attribute::Reset),
            ResetColor,
            Show
        )?;
        self.write_out()
    }

    /// After the process was stopped and continued: what the shell printed meanwhile (its
    /// job lines, the `fg` typed) moved the cursor somewhere this screen cannot know without
    /// asking the terminal (whose answer the input thread would take for keys), so the viewport
    /// starts again at the bottom row and is drawn whole, scrolling the shell's lines up.
    pub(crate) fn resumed(&mut self) {
        self.top = self.height.saturating_sub(1);
        self.rows = 0;
        self.shown = None;
    }

    /// Prints `lines` (already wrapped) from the viewport's top down, scrolling the screen
    /// where they pass its bottom; the viewport then starts below them.
    fn print_history(&mut self, lines: &[Line<'static>]) -> io::Result<()> {
        self.clear_rows(self.top, self.top + self.rows)?;
        self.shown = None;
        let mut row = self.top;
        let area = Rect::new(0, 0, self.width, 1);
        let blank = Buffer::empty(area);
        // One row's buffer, blanked for each line (a reopened session prints thousands).
        let mut cells = Buffer::empty(area);
        for line in lines {
            if row >= self.height {
                queue!(self.backend, MoveTo(0, self.height - 1), Print("\n"))?;
                row = self.height - 1;
            }
            cells.reset();
            cells.set_line(0, 0, line, self.width);
            // Against a blank row: only what is not blank is written, and the cell behind a
            // wide character is skipped (writing it would erase the character's right half).
            let placed = blank.diff_iter(&cells).map(|(x, _, cell)| (x, row, cell));
            self.backend.draw(placed)?;
            row += 1;
        }
        queue!(self.backend, SetAttribute(Attribute::Reset), ResetColor)?;
        self.top = row;
        Ok(())
    }

    fn draw(&mut self, rows: u16, render: Box<Render<'_>>) -> io::Result<()> {
        let rows = rows.clamp(1, self.height);
        if self.top + rows > self.height {
            // Room for the viewport: scroll what is above it up (into the scrollback).
            let scroll = self.top + rows - self.height;
            queue!(self.backend, MoveTo(0, self.height - 1))?;
            for _ in 0..scroll {
                queue!(self.backend, Print("\n"))?;
            }
            self.top -= scroll;
            self.shown = None;
        }
        // A viewport of another height is drawn whole, on cleared rows.
        if rows != self.rows || self.shown.is_none() {
            self.clear_rows(self.top, self.top + self.rows.max(rows))?;
            self.shown = None;
        }
        self.rows = rows;
        let area = Rect::new(0, self.top, self.width, rows);
        let mut next = Buffer::empty(area);
        let cursor = render(&mut next);
        match self.shown.as_ref().filter(|shown| shown.area == area) {
            Some(shown) => self.backend.draw(shown.diff_iter(&next))?,
            // The rows were cleared: drawn against blank ones, as the history is.
            None => self.backend.draw(Buffer::empty(area).diff_iter(&next))?,
        }
        queue!(self.backend, SetAttribute(Attribute::Reset), ResetColor)?;
        match cursor {
            Some((x, y)) => queue!(self.backend, MoveTo(x, y), Show)?,
            None => queue!(self.backend, Hide)?,
        }
        self.shown = Some(next);
        Ok(())
    }

    /// Blanks rows `from..to` one by one. (Erasing to the end of the screen from its first
    /// row would be quicker, but tmux takes that for a clear screen and scrolls what it
    /// showed into the history, leaving stale viewports there.)
    fn clear_rows(&mut self, from: u16, to: u16) -> io::Result<()> {
        for row in from..to.min(self.height) {
            queue!(self.backend, MoveTo(0, row), Clear(ClearType::CurrentLine))?;
        }
        Ok(())
    }

    fn write_out(&mut self) -> io::Result<()> {
        let bytes = std::mem::take(&mut *self.frame.0.borrow_mut());
        self.out.write_all(&bytes)?;
        self.out.flush()
    }
}
