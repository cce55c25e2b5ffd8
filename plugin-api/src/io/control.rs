//! The `host` service: what an entry plugin (the headless runner, a server) may ask of the
//! process itself. `exit(code)` ends the run: the host emits `host/stopping`, disposes the tree
//! and exits with the last code asked for. `host/stopping` is also emitted when a signal ends
//! the run, before anything is disposed, so a runner can cancel its work cleanly (and ask for
//! its own exit code, such as 130 after SIGINT) while every service is still up. `rows()`
//! lists the running tree, for a page that shows which plugins run and which failed.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption};
use abi_stable::{StableAbi, sabi_trait};

use crate::ParallelEvent;

/// The service key.
pub const HOST_SERVICE: &str = "host";

/// `host/stopping`: the run is ending (awaited, within the shutdown grace period).
pub const HOST_STOPPING: ParallelEvent<StopRequest> = ParallelEvent::new("host/stopping");

/// Why the run is ending.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopRequest {
    /// The exit code the host will use unless a listener asks for another.
    pub code: i32,
    /// The signal that ended the run (2 for SIGINT, 15 for SIGTERM), if one did.
    pub signal: ROption<i32>,
}

#[sabi_trait]
pub trait HostControl: Send + Sync {
    /// Ends the run with `code` (the last request wins when several arrive).
    fn exit(&self, code: i32);
    /// The rows of the running tree, in mount order, as JSON: `[{row, plugin, state,
    /// waitingFor, error}]` (state: PENDING, LOADING, ACTIVE, FAILED, UNLOADING, DISPOSED).
    fn rows(&self) -> abi_stable::std_types::RString;
}
pub type HostControlService = HostControl_TO<'static, RBox<()>>;
