//! The `subprocess` service: processes started by the host, each in a process group of its own,
//! their output read chunk by chunk, terminated as a group (SIGTERM, then SIGKILL after a grace
//! period). Provided by the host (`dsh-host/subprocess`, tokio on the host runtime).
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;

/// The service key.
pub const SUBPROCESS_SERVICE: &str = "subprocess";

#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub name: RString,
    pub value: RString,
}

/// What to start.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Default)]
pub struct SpawnRequest {
    pub program: RString,
    pub args: RVec<RString>,
    pub cwd: ROption<RString>,
    /// Set after `remove_env` is applied to the host's environment.
    pub env: RVec<EnvVar>,
    /// Variables removed from the inherited environment (a trailing `*` matches a prefix).
    pub remove_env: RVec<RString>,
    /// Written to stdin, which is then closed; without it stdin is empty.
    pub stdin: ROption<RVec<u8>>,
}

#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    pub stream: OutputStream,
    pub bytes: RVec<u8>,
}

/// How a process ended: its exit code, or the signal that ended it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus {
    pub code: ROption<i32>,
    pub signal: ROption<i32>,
}

/// What a caller of the launcher can tell apart.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubprocessErrorKind {
    /// The program does not exist (or a directory on its way does not).
    NotFound,
    /// The program may not be run, or the working directory entered.
    PermissionDenied,
    /// Stdin was closed, or the process stopped reading it.
    Closed,
    /// Anything else the operating system refused.
    Failed,
}

/// A launcher's refusal: its kind, and a message naming the program.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct SubprocessError {
    pub kind: SubprocessErrorKind,
    pub message: RString,
}

impl SubprocessError {
    pub fn new(kind: SubprocessErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: RString::from(message.into()),
        }
    }
}

impl std::fmt::Display for SubprocessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SubprocessError {}

/// A running process. Dropping it terminates the whole group.
#[sabi_trait]
pub trait Process: Send + Sync {
    fn pid(&self) -> u32;
    /// The next chunk of output from either stream, in arrival order; `RNone` once both closed.
    fn next_output(&self) -> FfiFuture<ROption<OutputChunk>>;
    /// Waits until the process exits.
    fn wait(&self) -> FfiFuture<RResult<ExitStatus, SubprocessError>>;
    /// SIGTERM to the process group, SIGKILL after `grace_ms` if anything is still running there;
    /// resolves once the process is gone.
    fn terminate(&self, grace_ms: u64) -> FfiFuture<RResult<ExitStatus, SubprocessError>>;
}
pub type ProcessBox = Process_TO<'static, RBox<()>>;

/// The launcher.
#[sabi_trait]
pub trait Subprocess: Send + Sync {
    fn spawn(&self, request: SpawnRequest) -> RResult<ProcessBox, SubprocessError>;
}

/// The value registered under [`SUBPROCESS_SERVICE`].
pub type SubprocessService = Subprocess_TO<'static, RBox<()>>;
