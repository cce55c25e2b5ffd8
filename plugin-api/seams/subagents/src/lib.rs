//! `dsh-subagents-seam`: the agent tree across the plugin ABI. A parent agent delegates to
//! child agents, each with its own session (linked to its parent in the header), tool scope and
//! model route; the `subagents` service lists a session's children and tells when everything a
//! session started has settled, and `subagent/start` / `subagent/end` announce a child's run
//! (hooks answer them as SubagentStart and SubagentStop; the web page follows them).
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
use abi_stable::std_types::{RBox, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{EmitEvent, Json};
use dsh_protocol::{ChildSummary, SubagentNotice};

/// Service key of the agent tree.
pub const SUBAGENTS_SERVICE: &str = "subagents";

/// `subagent/start`: a child's run began (after its session logged its descriptor).
pub const SUBAGENT_START: EmitEvent<Json<SubagentNotice>> = EmitEvent::new("subagent/start");

/// `subagent/end`: a child's run settled (its driver went idle), with its closing output.
pub const SUBAGENT_END: EmitEvent<Json<SubagentNotice>> = EmitEvent::new("subagent/end");

/// The `subagents` service.
#[sabi_trait]
pub trait Subagents: Send + Sync {
    /// The children of session `parent` (every descendant, in pre-order, when `descendants`).
    fn children(&self, parent: RString, descendants: bool) -> Json<Vec<ChildSummary>>;
    /// Resolves once no descendant of `session` runs and the notice of each settled one has
    /// reached its parent's inbox: a caller waiting for a whole delegation tree awaits this,
    /// then the parent's own idleness, until both hold at once.
    fn settled(&self, session: RString) -> FfiFuture<()>;
}
pub type SubagentsService = Subagents_TO<'static, RBox<()>>;
