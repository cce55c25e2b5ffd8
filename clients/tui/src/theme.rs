//! The few styles the terminal UI paints with. Only the terminal's own sixteen colours, dim and
//! bold are used, so a light and a dark background both read; with `NO_COLOR` set (to anything
//! but empty) or `--no-color`, colours go and only bold, dim, italic and reverse remain.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};

static COLORED: OnceLock<bool> = OnceLock::new();

/// Chooses colour or not, once, before anything is drawn (later calls change nothing).
pub(crate) fn init(no_color: bool) {
    let from_env = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    let _ = COLORED.set(!(no_color || from_env));
}

/// Whether colours are on.
pub(crate) fn colored() -> bool {
    *COLORED.get_or_init(|| false)
}

/// `color` as the foreground, when colours are on.
pub(crate) fn fg(color: Color) -> Style {
    if colored() {
        Style::new().fg(color)
    } else {
        Style::new()
    }
}

pub(crate) fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

pub(crate) fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

pub(crate) fn italic() -> Style {
    Style::new().add_modifier(Modifier::ITALIC)
}

/// The selected row of a list and the cursor of a picker.
pub(crate) fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

pub(crate) fn accent() -> Style {
    fg(Color::Cyan)
}

pub(crate) fn ok() -> Style {
    fg(Color::Green)
}

pub(crate) fn error() -> Style {
    fg(Color::Red)
}

pub(crate) fn warn() -> Style {
    fg(Color::Yellow)
}
