//! `dsh-trust-seam`: whether the person trusts a project. A cloned repository's `.mcp.json`,
//! hook files, `.dsh/settings.yaml` and skills are the project's, not the person's: the plugins
//! that read them (`mcp`, `hook-scripts`, `permissions`, `skills`) ask this service first and
//! leave them waiting while the project is not trusted, and follow [`TRUST_CHANGED`] to take
//! them up once it is. Without the service nothing of a project's own is trusted (it fails
//! closed). The web page and the terminal ask the person once per project and remember the
//! answer in the dsh home; the headless runner takes `--trust-project`; `settings.yaml` may
//! list trusted roots.
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
use abi_stable::std_types::{RBox, RResult, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{Context, Json, ParallelEvent, SeamError};
use dsh_protocol::ProjectTrust;

/// Service key of the trust store.
pub const TRUST_SERVICE: &str = "trust";

/// `trust/changed`: a project became trusted (the payload is its root). Parallel: a trust
/// answers once every reader took the project's configuration up (MCP servers started), so a
/// run that trusts its project first finds its servers' tools at its first turn.
pub const TRUST_CHANGED: ParallelEvent<RString> = ParallelEvent::new("trust/changed");

/// The trust store.
#[sabi_trait]
pub trait Trust: Send + Sync {
    /// The project of a session working in `cwd`, whether it is trusted and what waits.
    fn describe(&self, cwd: RString) -> Json<ProjectTrust>;
    /// Only whether the project of `cwd` is trusted: what every tool call asks, so it looks at
    /// nothing but the folders above `cwd`.
    fn is_trusted(&self, cwd: RString) -> bool;
    /// Trusts the project of `cwd`: for this run only, or remembered in the dsh home
    /// (`remember`). Emits [`TRUST_CHANGED`].
    fn trust(
        &self,
        cwd: RString,
        remember: bool,
    ) -> FfiFuture<RResult<Json<ProjectTrust>, SeamError>>;
}
pub type TrustService = Trust_TO<'static, RBox<()>>;

/// Whether the project of `cwd` is trusted; `false` when no trust service runs.
pub fn is_trusted(ctx: &Context, cwd: &str) -> bool {
    match ctx.get::<TrustService>(TRUST_SERVICE) {
        Ok(Some(trust)) => trust.is_trusted(RString::from(cwd)),
        _ => false,
    }
}
