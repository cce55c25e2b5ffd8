//! The terminal's modes while the UI runs, and putting them back whatever happens: raw input,
//! bracketed paste and the keyboard protocol that tells Shift-Enter from Enter (where the
//! terminal has it) are switched on at the start and off on a normal exit, on a panic (a hook
//! restores the terminal before the panic's message is printed) and on SIGTERM, SIGHUP or
//! SIGINT (the app's loop hears them and leaves as on a normal exit).

use std::io::{Write, stdout};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::{cursor, execute, terminal};

/// Whether the modes are on (so a second restore, from the hook and the exit, does nothing).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static ENHANCED: AtomicBool = AtomicBool::new(false);

/// Raw mode, bracketed paste, the keyboard protocol where supported, and the panic hook.
pub(crate) fn enter() -> std::io::Result<()> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = stdout();
    execute!(out, EnableBracketedPaste)?;
    // Only where the terminal answers that it speaks it (tmux does not): elsewhere the push
    // would print garbage.
    if matches!(terminal::supports_keyboard_enhancement(), Ok(true)) {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        ENHANCED.store(true, Ordering::SeqCst);
    }
    install_panic_hook();
    Ok(())
}

/// Puts the terminal back (idempotent).
pub(crate) fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        crossterm::style::SetAttribute(crossterm::style::Attribute::Reset),
        cursor::Show
    );
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // The message must land on a sane terminal, on a line of its own.
        if ACTIVE.load(Ordering::SeqCst) {
            restore();
            let _ = writeln!(stdout(), "\r");
        }
        previous(info);
    }));
}
