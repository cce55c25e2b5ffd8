//! `dsh-goals-seam`: goals across the plugin ABI. The `goals` service owns each session's one
//! revisioned objective (kept as `goal/change` events in the session's log, folded back when
//! the session is read) and the process-local activation that lets the agent go on towards it
//! by itself. A client's door (`clients`) reads a session's goal and puts a person's actions to
//! it; `goal/changed` tells listeners (the page's goal bar) after each accepted mutation.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, RResult, RString};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::{EmitEvent, Json, SeamError};
use dsh_protocol::{GoalAction, GoalChanged, GoalView};

/// Service key of the goals service.
pub const GOALS_SERVICE: &str = "goals";

/// What `goal/changed` carries: the session, and the mutation it accepted.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct GoalNotice {
    pub session: RString,
    pub change: Json<GoalChanged>,
}

/// `goal/changed`: a goal mutation was logged in `session` (emitted after its `goal/change`).
pub const GOAL_CHANGED: EmitEvent<GoalNotice> = EmitEvent::new("goal/changed");

/// The `goals` service. A refusal is a [`SeamError`] whose message starts with the goal error
/// code (`GOAL_NOT_FOUND`, `GOAL_STALE_REVISION`, `GOAL_ALREADY_EXISTS`,
/// `GOAL_INVALID_OBJECTIVE`, `GOAL_INVALID_MAX_ROUNDS`, `GOAL_INVALID_EDIT`,
/// `GOAL_INVALID_TRANSITION`, `GOAL_SESSION_NOT_LIVE`): `NotFound` for no goal or no session,
/// `Conflict` for a stale revision or a transition the phase forbids, `Invalid` for a bad
/// argument.
#[sabi_trait]
pub trait Goals: Send + Sync {
    /// The current goal of `session` (a stored session is read from its log), if it has one.
    fn get(&self, session: RString) -> FfiFuture<RResult<Json<Option<GoalView>>, SeamError>>;
    /// A person's action on live session `session`'s goal; answers the goal after it (none
    /// after a clear).
    fn act(
        &self,
        session: RString,
        action: Json<GoalAction>,
    ) -> FfiFuture<RResult<Json<Option<GoalView>>, SeamError>>;
}
pub type GoalsService = Goals_TO<'static, RBox<()>>;
