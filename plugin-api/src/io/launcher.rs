//! The `subprocess_launcher` service: processes started by a launcher, a small program the
//! host starts once per caller and then asks for each process (the launcher protocol of
//! `dsh-launcher`), instead of spawning each itself. What a launched process runs is the
//! launcher program's to decide from the request's arguments (the sandbox's launcher runs
//! them as its own command line); its output, exit and termination are followed as a spawned
//! one's are ([`Process`](super::subprocess::Process)). Provided by the host's subprocess row (`dsh-host/subprocess`).
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RResult};

use super::subprocess::{ProcessBox, SpawnRequest, SubprocessError};

/// The service key.
pub const LAUNCHER_SERVICE: &str = "subprocess_launcher";

/// One running launcher. Dropping it ends the launcher (and whatever it still runs).
#[sabi_trait]
pub trait Launcher: Send + Sync {
    /// The launcher's pid.
    fn pid(&self) -> u32;
    /// Starts `request` through the launcher: its `args`, `cwd` and environment (the host's,
    /// less `remove_env`, plus `env`) go in the request; `program` is not used. An error of
    /// kind `Closed` means nothing was started (the caller may spawn it another way); any
    /// other, that it may have started, and the launcher should be dropped (which ends what
    /// it started) rather than the request started again.
    fn spawn(&self, request: SpawnRequest) -> RResult<ProcessBox, SubprocessError>;
    /// Whether the launcher still serves (it has not died or lost a request).
    fn alive(&self) -> bool;
}
pub type LauncherBox = Launcher_TO<'static, RBox<()>>;

/// Starts launchers.
#[sabi_trait]
pub trait Launchers: Send + Sync {
    /// Starts `request` as a launcher: its request socket is its descriptor 3, its stdin and
    /// stdout are empty, its stderr is the host's.
    fn open(&self, request: SpawnRequest) -> RResult<LauncherBox, SubprocessError>;
}

/// The value registered under [`LAUNCHER_SERVICE`].
pub type LaunchersService = Launchers_TO<'static, RBox<()>>;
