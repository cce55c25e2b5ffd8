//! `dsh-sandbox-seam`: the sandbox across the plugin ABI. The `sandbox` service knows each
//! session's policy (its mode, writable roots and network, and how fully the backend enforces
//! them) and starts a tool's process confined by it, with a curated environment. It fails
//! closed: when the mode asks for confinement and no backend works, `spawn` refuses and says
//! which backend failed and how to install one; it never runs the process unconfined.
//!
//! A call may ask for a strictly wider mode for itself (`sandbox_permissions` with a
//! `justification` in its arguments): the sandbox puts that to a person before the call runs
//! and grants the mode to that call alone; asking for the mode the session already has needs
//! no approval and is no error.
//!
//! Policies cross as `dsh-protocol` values in [`Json`]; processes are the host's `subprocess`
//! objects. A long-lived process that talks over stdio (an MCP server) starts through
//! [`SANDBOX_PIPED_SERVICE`], a second service of the same provider, so the `sandbox` object's layout
//! stays what plugins built against the earlier seam expect; a session's extra writable roots are
//! set through [`SANDBOX_ROOTS_SERVICE`], a third; a process on a terminal of its own (a
//! persistent shell) starts through [`SANDBOX_PTY_SERVICE`], a fourth.
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
use abi_stable::std_types::{RBox, RResult, RString, RVec};
use dsh_plugin_api::io::piped::PipedProcess;
use dsh_plugin_api::io::pty::{PtyProcess, PtySize};
use dsh_plugin_api::io::subprocess::{ProcessBox, SpawnRequest};
use dsh_plugin_api::{Json, SeamError};
use dsh_protocol::SandboxPolicy;

/// Service key of the sandbox.
pub const SANDBOX_SERVICE: &str = "sandbox";

/// The sandbox service.
#[sabi_trait]
pub trait Sandbox: Send + Sync {
    /// The policy of call `call_id` of `session` working in `cwd`: the session's latest
    /// `sandbox/mode` (else the default), or the wider mode a person approved for this one
    /// call (`sandbox_permissions`). An empty `call_id` is no call: the session's policy.
    fn policy(&self, session: RString, cwd: RString, call_id: RString) -> Json<SandboxPolicy>;
    /// Starts `request` for call `call_id` of `session` confined by that call's policy (with
    /// `cwd` as the workspace root), secrets removed from its environment. Refuses, with the
    /// reason for the model and the user, when the policy cannot be enforced.
    fn spawn(
        &self,
        session: RString,
        cwd: RString,
        call_id: RString,
        request: SpawnRequest,
    ) -> RResult<ProcessBox, SeamError>;
}
pub type SandboxService = Sandbox_TO<'static, RBox<()>>;

/// Service key of the launcher of piped processes (provided by the `sandbox` row too).
pub const SANDBOX_PIPED_SERVICE: &str = "sandbox_piped";

/// Confined processes whose stdin stays open.
#[sabi_trait]
pub trait SandboxPiped: Send + Sync {
    /// Starts `request` as [`Sandbox::spawn`] does (same policy, same refusals), with its
    /// stdin kept open for the caller. `mode` is a mode the caller's own configuration chose
    /// for this process (a user's server entry); empty: the policy of call `call_id` of
    /// `session`, as for `spawn`.
    fn spawn_piped(
        &self,
        session: RString,
        cwd: RString,
        call_id: RString,
        mode: RString,
        request: SpawnRequest,
    ) -> RResult<PipedProcess, SeamError>;
}
pub type SandboxPipedService = SandboxPiped_TO<'static, RBox<()>>;

/// Service key of the sessions' extra writable roots (provided by the `sandbox` row too).
pub const SANDBOX_ROOTS_SERVICE: &str = "sandbox_roots";

/// Directories a session may write besides its working directory (an ACP editor's
/// `additionalDirectories`). They count only where the session's mode lets it write its
/// working directory (workspace-write); protected names inside them stay read-only.
#[sabi_trait]
pub trait SandboxRoots: Send + Sync {
    /// Sets the extra writable roots of `session`, replacing any it had (empty: none).
    /// Refuses `Invalid` naming a root that is not an absolute path.
    fn set_roots(&self, session: RString, roots: RVec<RString>) -> RResult<(), SeamError>;
}
pub type SandboxRootsService = SandboxRoots_TO<'static, RBox<()>>;

/// Service key of the launcher of processes on a terminal (provided by the `sandbox` row too).
pub const SANDBOX_PTY_SERVICE: &str = "sandbox_pty";

/// Confined processes on a pseudo-terminal of their own (the host's `subprocess_pty`).
#[sabi_trait]
pub trait SandboxPty: Send + Sync {
    /// Starts `request` as [`Sandbox::spawn`] does (the policy of call `call_id` of `session`,
    /// the same refusals), on a new terminal of `size`. Everything the process starts later
    /// (a shell's commands) stays inside the confinement it started in.
    fn spawn_pty(
        &self,
        session: RString,
        cwd: RString,
        call_id: RString,
        request: SpawnRequest,
        size: PtySize,
    ) -> RResult<PtyProcess, SeamError>;
}
pub type SandboxPtyService = SandboxPty_TO<'static, RBox<()>>;

/// The sandbox policy of call `call_id` of `session` working in `cwd`, as the `sandbox` service
/// answers it; `None` without that service (or an answer that does not read).
pub fn call_policy(
    ctx: &dsh_plugin_api::Context,
    session: &str,
    cwd: &str,
    call_id: &str,
) -> Option<SandboxPolicy> {
    let sandbox = ctx.get::<SandboxService>(SANDBOX_SERVICE).ok().flatten()?;
    sandbox
        .policy(
            RString::from(session),
            RString::from(cwd),
            RString::from(call_id),
        )
        .decode()
        .ok()
}
