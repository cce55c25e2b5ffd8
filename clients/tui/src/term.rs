//! The terminal's modes while the UI runs, and putting them back whatever happens: raw input,
//! bracketed paste and the keyboard protocol that tells Shift-Enter from Enter (where the
//! terminal has it) are switched on at the start and off on a normal exit, on a panic (a hook
//! restores the terminal before the panic's message is printed) and on SIGTERM, SIGHUP or
//! SIGINT (the app's loop hears them and leaves as on a normal exit). Ctrl-Z puts them back,
//! stops the process as a shell's job control expects, and switches them on again when the
//! shell continues it (`fg`).

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
/// Whether the terminal said at the start that it speaks the keyboard protocol.
static SUPPORTED: AtomicBool = AtomicBool::new(false);

/// Raw mode, bracketed paste, the keyboard protocol where supported, and the panic hook.
pub(crate) fn enter() -> std::io::Result<()> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = stdout();
    execute!(out, EnableBracketedPaste)?;
    // Only where the terminal answers that it speaks it (tmux does not): elsewhere the push
    // would print garbage.
    if matches!(terminal::supports_keyboard_enhancement(), Ok(true)) {
        SUPPORTED.store(true, Ordering::SeqCst);
        enhance(&mut out)?;
    }
    install_panic_hook();
    Ok(())
}

fn enhance(out: &mut std::io::Stdout) -> std::io::Result<()> {
    execute!(
        out,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )?;
    ENHANCED.store(true, Ordering::SeqCst);
    Ok(())
}

/// Ctrl-Z: the terminal put back, then the process stopped (SIGTSTP) until the shell continues
/// it; then the modes are on again as [`enter`] left them. The terminal is not asked again
/// whether it speaks the keyboard protocol: the input thread is reading, and would take the
/// answer for keys. Without job control (a process group no shell leads, as under `sh -c`) the
/// kernel does not stop the process, and this returns at once.
pub(crate) fn suspend() -> std::io::Result<()> {
    restore();
    signal_hook::low_level::raise(signal_hook::consts::SIGTSTP)?;
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = stdout();
    execute!(out, EnableBracketedPaste)?;
    if SUPPORTED.load(Ordering::SeqCst) {
        enhance(&mut out)?;
    }
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
