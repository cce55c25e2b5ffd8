//! The `subprocess_piped` service: processes whose stdin stays open for the life of the
//! process, for peers that talk over stdio (an MCP server). It sits beside `subprocess`
//! instead of changing it, so plugins built against the earlier `plugin-api` keep their
//! layouts: a [`PipedProcess`] is the same [`ProcessBox`] (output, wait, terminate, dropped
//! with its group) plus a [`ProcessStdinBox`] to write through. Provided by the host
//! (`dsh-host/subprocess`, the same row as `subprocess`).
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, RResult, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;

use crate::io::subprocess::{ProcessBox, SpawnRequest, SubprocessError};

/// The service key.
pub const PIPED_SUBPROCESS_SERVICE: &str = "subprocess_piped";

/// The write end of a process's stdin.
#[sabi_trait]
pub trait ProcessStdin: Send + Sync {
    /// Writes `bytes` whole and flushes them; writes are delivered in call order. Fails once
    /// stdin was closed or the process stopped reading it.
    fn write(&self, bytes: RVec<u8>) -> FfiFuture<RResult<(), SubprocessError>>;
    /// Closes stdin (the process reads end of file); later writes fail.
    fn close(&self) -> FfiFuture<()>;
}
pub type ProcessStdinBox = ProcessStdin_TO<'static, RBox<()>>;

/// A process started with an open stdin. Dropping `process` ends the group, as for
/// `subprocess`.
#[repr(C)]
#[derive(StableAbi)]
pub struct PipedProcess {
    pub process: ProcessBox,
    pub stdin: ProcessStdinBox,
}

/// The launcher.
#[sabi_trait]
pub trait PipedSubprocess: Send + Sync {
    /// Starts `request` as `Subprocess::spawn` does, except that stdin stays open: the
    /// request's `stdin` bytes, if any, are written first, then whatever goes through the
    /// returned [`ProcessStdinBox`].
    fn spawn_piped(&self, request: SpawnRequest) -> RResult<PipedProcess, SubprocessError>;
}

/// The value registered under [`PIPED_SUBPROCESS_SERVICE`].
pub type PipedSubprocessService = PipedSubprocess_TO<'static, RBox<()>>;
