//! The `subprocess_pty` service: a process started on a pseudo-terminal of its own, for
//! programs that behave only on a terminal (an interactive shell whose `cd`, variables and
//! prompt live on between commands). It sits beside `subprocess` and `subprocess_piped`
//! instead of changing them, so plugins built against the earlier `plugin-api` keep their
//! layouts. The process leads a new session with the terminal as its controlling terminal
//! (so job control and `^C` work as in a terminal window); its output is what the terminal
//! shows, delivered as [`OutputStream::Stdout`] chunks (a terminal has one stream, and echoes
//! what is written to it). Provided by the host (`dsh-host/subprocess`, the same row as
//! `subprocess`), whose runtime reads the terminal: plugins own no threads.
//!
//! [`OutputStream::Stdout`]: crate::io::subprocess::OutputStream::Stdout
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, RResult};
use abi_stable::{StableAbi, sabi_trait};

use crate::io::piped::ProcessStdinBox;
use crate::io::subprocess::{ProcessBox, SpawnRequest, SubprocessError};

/// The service key.
pub const PTY_SUBPROCESS_SERVICE: &str = "subprocess_pty";

/// A terminal's size in character cells.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtySize {
    pub rows: u16,
    pub cols: u16,
}

impl Default for PtySize {
    fn default() -> Self {
        Self { rows: 24, cols: 80 }
    }
}

/// What only a terminal has: its size and its foreground process group.
#[sabi_trait]
pub trait PtyControl: Send + Sync {
    /// Sets the terminal's size (the foreground group gets `SIGWINCH`).
    fn resize(&self, size: PtySize) -> RResult<(), SubprocessError>;
    /// Sends `signal` to the terminal's foreground process group (the command a shell is
    /// running, or the shell itself at its prompt) and answers that group's id. Fails once
    /// the terminal has no foreground group (its session ended).
    fn signal_foreground(&self, signal: i32) -> RResult<u32, SubprocessError>;
}
pub type PtyControlBox = PtyControl_TO<'static, RBox<()>>;

/// A process on a terminal. `process` reads what the terminal shows (its `RNone` once every
/// process holding the terminal is gone), waits and terminates as for `subprocess`, and its
/// drop ends the session's processes; `input` types into the terminal (what a keyboard would:
/// `\r` submits a line, `\x03` is `^C` for the line discipline).
#[repr(C)]
#[derive(StableAbi)]
pub struct PtyProcess {
    pub process: ProcessBox,
    pub input: ProcessStdinBox,
    pub control: PtyControlBox,
}

/// The launcher.
#[sabi_trait]
pub trait PtySubprocess: Send + Sync {
    /// Starts `request` on a new terminal of `size`. The request's `stdin` bytes, if any, are
    /// typed first.
    fn spawn_pty(
        &self,
        request: SpawnRequest,
        size: PtySize,
    ) -> RResult<PtyProcess, SubprocessError>;
}

/// The value registered under [`PTY_SUBPROCESS_SERVICE`].
pub type PtySubprocessService = PtySubprocess_TO<'static, RBox<()>>;
