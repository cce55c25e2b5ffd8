//! The `client_terminal` service: a session's shell commands run in a terminal its client
//! shows (an editor over ACP, whose `terminal/*` methods run the command and embed its live
//! output in the tool call). The shell tool asks it per call, for commands that would run
//! unconfined anyway (the session's sandbox mode is full access): the client's terminal is
//! the person's own shell, outside any sandbox, so a confined command never goes there.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption, RResult, RStr, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;

use super::subprocess::EnvVar;
use crate::SeamError;
use crate::cancel::CancelBox;

/// The service key.
pub const CLIENT_TERMINAL_SERVICE: &str = "client_terminal";

/// One command to run in the client's terminal: `bash -c command`.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct TerminalCommand {
    pub session: RString,
    /// The tool call it runs for: the client shows the terminal in that call.
    pub call_id: RString,
    pub command: RString,
    pub cwd: RString,
    /// Variables set for the command, beside the client's environment.
    pub env: RVec<EnvVar>,
    /// The output the client keeps (its end, as a shell tool's tail does).
    pub output_limit: u64,
    /// How long it may run before it is killed.
    pub timeout_ms: u64,
}

/// How a command in the client's terminal ended.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutcome {
    /// Standard output and error together, as the terminal shows them.
    pub output: RString,
    /// The client dropped the output's beginning to keep `output_limit`.
    pub truncated: bool,
    pub exit_code: ROption<u32>,
    /// The signal that ended it (`SIGKILL`), as the client names it.
    pub signal: ROption<RString>,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// A session's terminal as its client runs it (see the module docs).
#[sabi_trait]
pub trait ClientTerminal: Send + Sync {
    /// Whether the client runs `session`'s commands.
    fn serves(&self, session: RStr<'_>) -> bool;
    /// Runs `command` to its end, its timeout or `cancel`. An error of kind `Unavailable`
    /// means the client made no terminal (the caller may run the command itself); any other,
    /// that whether the command started is unknown.
    fn run(
        &self,
        command: TerminalCommand,
        cancel: CancelBox,
    ) -> FfiFuture<RResult<TerminalOutcome, SeamError>>;
}

/// The value registered under [`CLIENT_TERMINAL_SERVICE`].
pub type ClientTerminalService = ClientTerminal_TO<'static, RBox<()>>;
