//! `dsh-approval-seam`: approval across the plugin ABI. The `approval` service puts a call to a
//! human and answers one of four outcomes; only `allowed-once` lets anything through, nothing
//! is approved automatically, and where no one can answer the outcome is `unavailable`. The
//! `approval/request` waterfall is the answerer chain (a web page, an ACP client): the first
//! listener that answers wins, and the innermost default answers `unavailable`.
//!
//! Requests, outcomes and the policy are `dsh-protocol` values crossing as [`Json`].
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
use dsh_plugin_api::{Json, WaterfallEvent};
use dsh_protocol::{ApprovalOutcome, ApprovalPolicy, ApprovalRequest, ApprovalVerdict};

/// Service key of the approval service.
pub const APPROVAL_SERVICE: &str = "approval";

/// `approval/request`: the answerer chain; the first listener that answers a verdict wins.
pub const APPROVAL_REQUEST: WaterfallEvent<Json<ApprovalRequest>, Json<ApprovalVerdict>> =
    WaterfallEvent::new("approval/request");

/// The approval service.
#[sabi_trait]
pub trait Approval: Send + Sync {
    /// Puts `request` to the answerers (or rejects it under the `never` policy), logging
    /// `approval/asked` and `approval/decided` in its session.
    fn request(&self, request: Json<ApprovalRequest>) -> FfiFuture<Json<ApprovalOutcome>>;
    /// The policy asks are decided by, where a session chose none.
    fn policy(&self) -> Json<ApprovalPolicy>;
    /// The policy of `session`: its latest `approval/policy` (its preset's), else `policy`.
    fn session_policy(&self, session: RString) -> Json<ApprovalPolicy>;
}
pub type ApprovalService = Approval_TO<'static, RBox<()>>;
