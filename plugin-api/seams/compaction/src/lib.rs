//! `dsh-compaction-seam`: what a session's context holds, across the plugin ABI. The
//! `compaction` service answers a live session's token meter (the provider's count of its
//! latest request plus an estimate of what was appended since, against the model's window)
//! and compacts a session on demand, as `/compact` does.
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
use abi_stable::std_types::{RBox, ROption, RResult, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{Json, SeamError};
use dsh_protocol::TokenMeter;

/// Service key of the compaction plugin.
pub const COMPACTION_SERVICE: &str = "compaction";

/// The `compaction` service.
#[sabi_trait]
pub trait Compaction: Send + Sync {
    /// The token meter of live session `session` (`None` when it is not live here).
    fn meter(&self, session: RString) -> Json<Option<TokenMeter>>;
    /// Compacts idle session `session` now, below the threshold too, with `focus` for the
    /// summary; fails naming why (a turn runs, nothing to compact, the summary failed).
    fn compact(
        &self,
        session: RString,
        focus: ROption<RString>,
    ) -> FfiFuture<RResult<(), SeamError>>;
}
pub type CompactionService = Compaction_TO<'static, RBox<()>>;
