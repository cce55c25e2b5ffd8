//! The `sandbox` service: each session's policy (its latest `sandbox/mode`, else the default)
//! and processes started under it. In `read-only` and `workspace-write` a process runs inside
//! bubblewrap, or not at all; in `danger-full-access` it runs as the user. Either way its
//! environment loses the variables that look like secrets.

use std::sync::Mutex;

use abi_stable::std_types::{RResult, RString, RVec};
use dsh_plugin_api::io::piped::{PIPED_SUBPROCESS_SERVICE, PipedProcess, PipedSubprocessService};
use dsh_plugin_api::io::subprocess::{ProcessBox, SpawnRequest, SubprocessService};
use dsh_plugin_api::{Context, Json, Service, lock};
use dsh_protocol::{Enforcement, SandboxMode, SandboxModeEvent, SandboxPolicy};
use dsh_sandbox_seam::{Sandbox, SandboxPiped};
use dsh_session_seam::{LatestOf, open_live};

use crate::bwrap::{self, Mounts};
use crate::env::{LOADER_VARS, is_loader_var, matches, secret_names};

/// Which backend confines commands on this machine.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// `bwrap` at this path works.
    Bwrap(String),
    /// Landlock, through the host's `sandbox-exec` (the host binary at this path): files and
    /// TCP are fenced, but there is no pid or mount namespace.
    Landlock(String),
    /// None works, and why (commands that need confinement are refused).
    Unavailable(String),
}

/// What the row's config settles.
pub(crate) struct Settings {
    pub(crate) default_mode: SandboxMode,
    pub(crate) writable_roots: Vec<String>,
    pub(crate) network: bool,
    pub(crate) allow_env: Vec<String>,
    pub(crate) protected: Vec<String>,
    pub(crate) hidden: Vec<String>,
    pub(crate) fresh_tmp: bool,
    pub(crate) temp_writable: bool,
    /// When set, what commands and file tools may read besides the writable roots.
    pub(crate) readable_roots: Option<Vec<String>>,
}

/// Grants remembered at once; the oldest goes first (a grant is used by the call it was
/// approved for, right after the approval).
const GRANTS: usize = 256;

pub(crate) struct SandboxImpl {
    pub(crate) ctx: Context,
    pub(crate) settings: Settings,
    pub(crate) backend: Backend,
    pub(crate) subprocess: Service<SubprocessService>,
    /// Each session's latest `sandbox/mode`, read incrementally.
    modes: LatestOf<SandboxModeEvent>,
    /// Wider modes approved for one call each: (session, call id, mode).
    grants: Mutex<std::collections::VecDeque<(String, String, SandboxMode)>>,
}

/// Why a process was not started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error(
        "[sandbox: refused] the {mode} sandbox cannot be enforced here, so the command was not run: {reason}. Install bubblewrap (`apt-get install bubblewrap`) or choose danger-full-access."
    )]
    NoBackend { mode: &'static str, reason: String },
    #[error("could not start the process: {0}")]
    Spawn(String),
}

impl SandboxImpl {
    pub(crate) fn new(
        ctx: Context,
        settings: Settings,
        backend: Backend,
        subprocess: Service<SubprocessService>,
    ) -> Self {
        Self {
            ctx,
            settings,
            backend,
            subprocess,
            modes: LatestOf::default(),
            grants: Mutex::default(),
        }
    }

    /// Grants `mode` to call `call_id` of `session` (a person approved it).
    pub(crate) fn grant(&self, session: &str, call_id: &str, mode: SandboxMode) {
        let mut grants = lock(&self.grants);
        if grants.len() == GRANTS {
            grants.pop_front();
        }
        grants.push_back((session.to_owned(), call_id.to_owned(), mode));
    }

    fn granted(&self, session: &str, call_id: &str) -> Option<SandboxMode> {
        if call_id.is_empty() {
            return None;
        }
        lock(&self.grants)
            .iter()
            .rev()
            .find(|(granted_session, granted_call, _)| {
                granted_session == session && granted_call == call_id
            })
            .map(|(_, _, mode)| *mode)
    }

    /// The mode of `session`: the last `sandbox/mode` its log holds, else the default. Each
    /// call reads only what was logged since the last.
    pub(crate) fn mode_of(&self, session: &str) -> SandboxMode {
        open_live(&self.ctx, session)
            .ok()
            .and_then(|live| self.modes.of(&live))
            .and_then(|event| SandboxMode::parse(&event.mode))
            .unwrap_or(self.settings.default_mode)
    }

    pub(crate) fn policy_of(&self, session: &str, cwd: &str, call_id: &str) -> SandboxPolicy {
        let mode = self
            .granted(session, call_id)
            .unwrap_or_else(|| self.mode_of(session));
        self.policy_in(mode, cwd)
    }

    /// The policy of `mode` for a process working in `cwd`.
    fn policy_in(&self, mode: SandboxMode, cwd: &str) -> SandboxPolicy {
        let mut writable_roots = vec![cwd.to_owned()];
        writable_roots.extend(self.settings.writable_roots.iter().cloned());
        let temps = [
            "/tmp".to_owned(),
            std::env::temp_dir().display().to_string(),
        ];
        for temp in temps.into_iter().filter(|_| self.settings.temp_writable) {
            if !writable_roots.contains(&temp) {
                writable_roots.push(temp);
            }
        }
        let (enforcement, backend) = match (&self.backend, mode) {
            (_, SandboxMode::DangerFullAccess) => (Enforcement::None, "none".to_owned()),
            (Backend::Bwrap(_), _) => (Enforcement::Full, "bwrap".to_owned()),
            (Backend::Landlock(_), _) => (Enforcement::Partial, "landlock".to_owned()),
            (Backend::Unavailable(reason), _) => (Enforcement::None, reason.clone()),
        };
        SandboxPolicy {
            mode,
            writable_roots,
            protected: self.settings.protected.clone(),
            readable_roots: self.settings.readable_roots.clone(),
            hidden: self.settings.hidden.clone(),
            network: self.settings.network || mode == SandboxMode::DangerFullAccess,
            enforcement,
            backend,
        }
    }

    pub(crate) fn start(
        &self,
        session: &str,
        cwd: &str,
        call_id: &str,
        request: SpawnRequest,
    ) -> Result<ProcessBox, SandboxError> {
        let policy = self.policy_of(session, cwd, call_id);
        let request = self.confine(&policy, cwd, request)?;
        self.subprocess
            .spawn(request)
            .into_result()
            .map_err(|error| SandboxError::Spawn(error.to_string()))
    }

    /// Starts `request` with its stdin kept open, under the policy of the call, or under
    /// `mode` when the caller's configuration chose one.
    pub(crate) fn start_piped(
        &self,
        session: &str,
        cwd: &str,
        call_id: &str,
        mode: &str,
        request: SpawnRequest,
    ) -> Result<PipedProcess, SandboxError> {
        let mut policy = self.policy_of(session, cwd, call_id);
        if !mode.is_empty() {
            let chosen = SandboxMode::parse(mode).ok_or_else(|| {
                SandboxError::Spawn(format!(
                    "unknown sandbox mode `{mode}` (expected read-only, workspace-write or danger-full-access)"
                ))
            })?;
            policy = self.policy_in(chosen, cwd);
        }
        let request = self.confine(&policy, cwd, request)?;
        let launcher = self
            .ctx
            .get::<PipedSubprocessService>(PIPED_SUBPROCESS_SERVICE)
            .ok()
            .flatten()
            .ok_or_else(|| {
                SandboxError::Spawn(format!(
                    "no `{PIPED_SUBPROCESS_SERVICE}` service (the host's subprocess row provides it)"
                ))
            })?;
        launcher
            .spawn_piped(request)
            .into_result()
            .map_err(|error| SandboxError::Spawn(error.to_string()))
    }

    /// `request` rewritten to run under `policy`: secrets removed from its environment, and
    /// wrapped in the backend unless the policy is full access. The wrapper starts without the
    /// loader's variables, which are set inside the sandbox instead: otherwise an entry's
    /// `LD_PRELOAD` would run code in the wrapper before it confines anything.
    fn confine(
        &self,
        policy: &SandboxPolicy,
        cwd: &str,
        mut request: SpawnRequest,
    ) -> Result<SpawnRequest, SandboxError> {
        let names: Vec<(String, String)> = std::env::vars().collect();
        let secrets = secret_names(
            names.iter().map(|(name, _)| name.as_str()),
            &self.settings.allow_env,
        );
        let mut remove: Vec<RString> = request.remove_env.to_vec();
        remove.extend(secrets.into_iter().map(RString::from));
        if policy.mode != SandboxMode::DangerFullAccess {
            let inner = inner_env(&names, &remove, &request);
            remove.extend(LOADER_VARS.iter().map(|pattern| RString::from(*pattern)));
            // The other variables stay on the wrapper, which passes them on: as arguments
            // they would show in the process list (an MCP entry's token, say).
            request.env = request
                .env
                .iter()
                .filter(|var| !is_loader_var(&var.name))
                .cloned()
                .collect();
            let run_in = request
                .cwd
                .as_ref()
                .map_or_else(|| cwd.to_owned(), |dir| dir.to_string());
            let args: Vec<String> = request.args.iter().map(|arg| arg.to_string()).collect();
            let (program, argv) = match &self.backend {
                Backend::Bwrap(path) => {
                    let mounts = Mounts {
                        protected: &policy.protected,
                        hidden: &policy.hidden,
                        fresh_tmp: self.settings.fresh_tmp,
                    };
                    let command = bwrap::Command {
                        cwd: &run_in,
                        env: &inner,
                        program: request.program.as_str(),
                        args: &args,
                    };
                    (path.clone(), bwrap::arguments(policy, &mounts, &command))
                }
                Backend::Landlock(host) => (
                    host.clone(),
                    crate::landlock::arguments(policy, &inner, request.program.as_str(), &args),
                ),
                Backend::Unavailable(reason) => {
                    return Err(SandboxError::NoBackend {
                        mode: policy.mode.as_str(),
                        reason: reason.clone(),
                    });
                }
            };
            request.program = RString::from(program);
            request.args = argv.into_iter().map(RString::from).collect();
        }
        request.remove_env = RVec::from(remove);
        Ok(request)
    }
}

/// The loader's variables a wrapped process must be given inside the sandbox so that its
/// environment is the one it would have had unwrapped: the host's own (taken from the wrapper,
/// but the host runs with them anyway) unless removed, then the request's, later ones winning.
/// The wrapper keeps every other variable and passes it on.
fn inner_env(
    host: &[(String, String)],
    removed: &[RString],
    request: &SpawnRequest,
) -> Vec<(String, String)> {
    let kept = |name: &str| !removed.iter().any(|pattern| matches(name, pattern));
    host.iter()
        .filter(|(name, _)| is_loader_var(name) && kept(name))
        .cloned()
        .chain(
            request
                .env
                .iter()
                .filter(|var| is_loader_var(&var.name))
                .map(|var| (var.name.to_string(), var.value.to_string())),
        )
        .collect()
}

/// The service object: the implementation behind an `Arc`.
pub(crate) struct Handle(pub(crate) std::sync::Arc<SandboxImpl>);

impl Sandbox for Handle {
    fn policy(&self, session: RString, cwd: RString, call_id: RString) -> Json<SandboxPolicy> {
        Json::encode(&self.0.policy_of(&session, &cwd, &call_id))
    }

    fn spawn(
        &self,
        session: RString,
        cwd: RString,
        call_id: RString,
        request: SpawnRequest,
    ) -> RResult<ProcessBox, RString> {
        self.0
            .start(&session, &cwd, &call_id, request)
            .map_err(|error| RString::from(error.to_string()))
            .into()
    }
}

impl SandboxPiped for Handle {
    fn spawn_piped(
        &self,
        session: RString,
        cwd: RString,
        call_id: RString,
        mode: RString,
        request: SpawnRequest,
    ) -> RResult<PipedProcess, RString> {
        self.0
            .start_piped(&session, &cwd, &call_id, &mode, request)
            .map_err(|error| RString::from(error.to_string()))
            .into()
    }
}
