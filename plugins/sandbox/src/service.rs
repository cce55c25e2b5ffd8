//! The `sandbox` service: each session's policy (its latest `sandbox/mode`, else the default)
//! and processes started under it. In `read-only` and `workspace-write` a process runs inside
//! bubblewrap and `dsh-sandbox-exec` (or, where bubblewrap cannot run, `dsh-sandbox-exec` with
//! Landlock), or not at all; in `danger-full-access` it runs as the user. Either way its
//! environment loses the variables that look like secrets.

use std::path::Path;
use std::sync::Mutex;

use abi_stable::std_types::{RResult, RString, RVec};
use dsh_plugin_api::io::piped::{PIPED_SUBPROCESS_SERVICE, PipedProcess, PipedSubprocessService};
use dsh_plugin_api::io::pty::{PTY_SUBPROCESS_SERVICE, PtyProcess, PtySize, PtySubprocessService};
use dsh_plugin_api::io::secrets::{SECRET_VALUES_SERVICE, SecretValuesService};
use dsh_plugin_api::io::subprocess::{
    ProcessBox, SpawnRequest, SubprocessError, SubprocessErrorKind, SubprocessService,
};
use dsh_plugin_api::{Context, Json, SeamError, SeamErrorKind, Service, lock};
use dsh_protocol::{SandboxMode, SandboxModeEvent, SandboxPolicy};
use dsh_sandbox_seam::{Sandbox, SandboxPiped, SandboxPty};
use dsh_sessions_seam::{LatestOf, open_live};

use dsh_credentials_seam::{CREDENTIALS_SERVICE, CredentialsService};

use crate::bwrap::{self, Mounts};
use crate::encoded::EncodedPolicies;
use crate::env::{LOADER_VARS, is_loader_var, matches, secret_names};
use crate::landlock::Inner;
use crate::limits::Limits;

/// Which backend confines commands on this machine.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// `bwrap` at `bwrap` works, fronted by `dsh-sandbox-exec` at `exec`; `user_namespace` says
    /// whether it can make a user namespace here.
    Bwrap {
        bwrap: String,
        exec: String,
        user_namespace: bool,
    },
    /// Landlock, through `dsh-sandbox-exec` at this path alone: files and TCP are fenced, but
    /// there is no pid or mount namespace.
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
    /// Whether confined commands run in their session's enclave where they can.
    pub(crate) enclaves: bool,
    /// Whether confined commands start through the row's launcher (see `launcher`).
    pub(crate) launcher: bool,
    pub(crate) temp_writable: bool,
    /// When set, what commands and file tools may read besides the writable roots.
    pub(crate) readable_roots: Option<Vec<String>>,
    /// Readable again inside the hidden paths.
    pub(crate) exposed: Vec<String>,
    /// Kept read-only at the top of the working directory and each configured writable root.
    pub(crate) protected_names: Vec<String>,
    pub(crate) limits: Limits,
    /// Whether confined commands may create Unix sockets.
    pub(crate) unix_sockets: bool,
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
    /// Each session's extra writable roots (`sandbox_roots`).
    pub(crate) roots: crate::roots::Roots,
    /// The control groups every confined command joins (root only; see `cgroup`).
    pub(crate) cgroups: Vec<std::path::PathBuf>,
    /// The sessions' enclaves (see `enclaves`).
    pub(crate) enclaves: crate::enclaves::Enclaves,
    /// The launcher of confined commands (see `launcher`).
    pub(crate) launcher: crate::launcher::Launcher,
    /// The policies answered through the service, encoded (see `encoded`).
    encoded: EncodedPolicies,
}

/// Why a process was not started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error(
        "[sandbox: refused] the {mode} sandbox cannot be enforced here, so the command was not run: {reason}. Install bubblewrap (`apt-get install bubblewrap`) or choose danger-full-access."
    )]
    NoBackend { mode: &'static str, reason: String },
    #[error(
        "could not start the process: unknown sandbox mode `{0}` (expected read-only, workspace-write or danger-full-access)"
    )]
    Mode(String),
    #[error(
        "could not start the process: no `{PIPED_SUBPROCESS_SERVICE}` service (the host's subprocess row provides it)"
    )]
    NoLauncher,
    #[error(
        "could not start the process: no `{PTY_SUBPROCESS_SERVICE}` service (the host's subprocess row provides it)"
    )]
    NoTerminals,
    #[error("could not start the process: {0}")]
    Spawn(SubprocessError),
}

impl From<SandboxError> for SeamError {
    fn from(error: SandboxError) -> Self {
        let kind = match error {
            SandboxError::NoBackend { .. }
            | SandboxError::NoLauncher
            | SandboxError::NoTerminals => SeamErrorKind::Unavailable,
            SandboxError::Mode(_) => SeamErrorKind::Invalid,
            SandboxError::Spawn(SubprocessError { kind, .. }) => match kind {
                SubprocessErrorKind::NotFound => SeamErrorKind::NotFound,
                _ => SeamErrorKind::Failed,
            },
        };
        SeamError::new(kind, error.to_string())
    }
}

impl SandboxImpl {
    pub(crate) fn new(
        ctx: Context,
        settings: Settings,
        backend: Backend,
        subprocess: Service<SubprocessService>,
        cgroups: Vec<std::path::PathBuf>,
    ) -> Self {
        Self {
            ctx,
            settings,
            backend,
            subprocess,
            modes: LatestOf::default(),
            grants: Mutex::default(),
            roots: crate::roots::Roots::default(),
            cgroups,
            enclaves: crate::enclaves::Enclaves::default(),
            launcher: crate::launcher::Launcher::default(),
            encoded: EncodedPolicies::default(),
        }
    }

    /// `--join-cgroup DIR` for each of this host's control groups.
    pub(crate) fn join_arguments(&self) -> Vec<String> {
        self.cgroups
            .iter()
            .flat_map(|group| ["--join-cgroup".to_owned(), group.display().to_string()])
            .collect()
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
        self.policy_in(self.call_mode(session, call_id), session, cwd)
    }

    /// The mode call `call_id` of `session` runs in: the one granted to it, else the session's.
    fn call_mode(&self, session: &str, call_id: &str) -> SandboxMode {
        self.granted(session, call_id)
            .unwrap_or_else(|| self.mode_of(session))
    }

    /// The protected names' paths in the project roots of a session working in `cwd`: the
    /// working directory and the configured writable roots.
    pub(crate) fn protected_by_name(&self, cwd: &str) -> Vec<String> {
        std::iter::once(cwd)
            .chain(self.settings.writable_roots.iter().map(String::as_str))
            .flat_map(|root| {
                let root = Path::new(root);
                protected_paths(root, &self.settings.protected_names, git_is_file(root))
            })
            .collect()
    }

    /// The policy of `mode` for a process of `session` working in `cwd`.
    fn policy_in(&self, mode: SandboxMode, session: &str, cwd: &str) -> SandboxPolicy {
        self.policy_from(&self.inputs(mode, session, cwd))
    }

    /// The policy of `session` in `cwd` as the `sandbox` service answers it, encoded once per
    /// distinct inputs: the system prompt asks for it every step, and it rarely changes.
    pub(crate) fn encoded_policy(
        &self,
        session: &str,
        cwd: &str,
        call_id: &str,
    ) -> Json<SandboxPolicy> {
        let inputs = self.inputs(self.call_mode(session, call_id), session, cwd);
        self.encoded
            .get_or_encode(inputs, |inputs| self.policy_from(inputs))
    }

    pub(crate) fn start(
        &self,
        session: &str,
        cwd: &str,
        call_id: &str,
        request: SpawnRequest,
    ) -> Result<ProcessBox, SandboxError> {
        let policy = self.policy_of(session, cwd, call_id);
        let request = self.confine(&policy, cwd, request, Some(session))?;
        if let Some(process) = self.launched(&request).map_err(SandboxError::Spawn)? {
            return Ok(process);
        }
        self.subprocess
            .spawn(request)
            .into_result()
            .map_err(SandboxError::Spawn)
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
            let chosen =
                SandboxMode::parse(mode).ok_or_else(|| SandboxError::Mode(mode.to_owned()))?;
            policy = self.policy_in(chosen, session, cwd);
        }
        let request = self.confine(&policy, cwd, request, None)?;
        let launcher = self
            .ctx
            .get::<PipedSubprocessService>(PIPED_SUBPROCESS_SERVICE)
            .ok()
            .flatten()
            .ok_or(SandboxError::NoLauncher)?;
        launcher
            .spawn_piped(request)
            .into_result()
            .map_err(SandboxError::Spawn)
    }

    /// Starts `request` on a terminal of its own under the policy of the call.
    pub(crate) fn start_pty(
        &self,
        session: &str,
        cwd: &str,
        call_id: &str,
        request: SpawnRequest,
        size: PtySize,
    ) -> Result<PtyProcess, SandboxError> {
        let policy = self.policy_of(session, cwd, call_id);
        let request = self.confine(&policy, cwd, request, None)?;
        let launcher = self
            .ctx
            .get::<PtySubprocessService>(PTY_SUBPROCESS_SERVICE)
            .ok()
            .flatten()
            .ok_or(SandboxError::NoTerminals)?;
        launcher
            .spawn_pty(request, size)
            .into_result()
            .map_err(SandboxError::Spawn)
    }

    /// The values the credentials store and the rows' own `env` and `headers` hold: a
    /// variable of the host's environment that carries one is removed whatever its name.
    fn known_secrets(&self) -> Vec<String> {
        let mut known = Vec::new();
        if let Ok(Some(store)) = self.ctx.get::<CredentialsService>(CREDENTIALS_SERVICE) {
            known.extend(
                store
                    .names()
                    .into_iter()
                    .filter_map(|name| store.get(name).into_option())
                    .map(|value| value.to_string()),
            );
        }
        if let Ok(Some(rows)) = self.ctx.get::<SecretValuesService>(SECRET_VALUES_SERVICE) {
            known.extend(rows.values().into_iter().map(|value| value.to_string()));
        }
        known
    }

    /// `request` rewritten to run under `policy`: secrets removed from its environment, and
    /// wrapped in the backend unless the policy is full access. The wrappers start without the
    /// loader's variables, which are set for the program alone once everything is in place:
    /// otherwise an entry's `LD_PRELOAD` would run code before the sandbox is complete. Given
    /// the `session`, the command runs in the session's enclave where one can serve it.
    fn confine(
        &self,
        policy: &SandboxPolicy,
        cwd: &str,
        mut request: SpawnRequest,
        session: Option<&str>,
    ) -> Result<SpawnRequest, SandboxError> {
        let host: Vec<(String, String)> = std::env::vars_os()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.to_string_lossy().into_owned(),
                )
            })
            .collect();
        let secrets = secret_names(
            host.iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
            &self.settings.allow_env,
            &self.known_secrets(),
        );
        let mut remove: Vec<RString> = request.remove_env.to_vec();
        remove.extend(secrets.into_iter().map(RString::from));
        if policy.mode != SandboxMode::DangerFullAccess {
            let inner_env = inner_env(&host, &remove, &request);
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
            let inner = Inner {
                policy,
                limits: &self.settings.limits,
                env: &inner_env,
                program: request.program.as_str(),
                args: &args,
            };
            let joins = self.join_arguments();
            let (program, argv) = match &self.backend {
                Backend::Bwrap {
                    bwrap,
                    exec,
                    user_namespace,
                } => {
                    prepare_protected(policy);
                    let mut inside = vec![inner.program.to_owned()];
                    inside.extend(args.iter().cloned());
                    let mounts = Mounts {
                        fresh_tmp: self.settings.fresh_tmp,
                        user_namespace: *user_namespace,
                    };
                    let command = bwrap::Command {
                        cwd: &run_in,
                        env: &inner_env,
                        argv: &inside,
                    };
                    let layout = bwrap::layout(policy, &mounts);
                    let ticket = session
                        .filter(|_| self.enclave_serves(policy))
                        .and_then(|session| self.enclave_ticket(session, policy, &layout));
                    let mut front = joins;
                    if let Some(ticket) = &ticket {
                        front.extend([
                            "--enclave".to_owned(),
                            format!("{}:{}:{}", ticket.pid, ticket.start, inside.len()),
                            "--chdir".to_owned(),
                            run_in.clone(),
                        ]);
                        for (name, value) in &inner_env {
                            front.extend(["--env".to_owned(), name.clone(), value.clone()]);
                        }
                    }
                    let mut bwrap_args = layout;
                    bwrap_args.extend(bwrap::command_arguments(&command));
                    let argv = crate::landlock::front_arguments(bwrap, &inner, &front, bwrap_args);
                    (exec.clone(), argv)
                }
                Backend::Landlock(exec) => {
                    (exec.clone(), crate::landlock::arguments(&inner, &joins))
                }
                Backend::Unavailable(reason) => {
                    return Err(SandboxError::NoBackend {
                        mode: policy.mode.as_str(),
                        reason: reason.clone(),
                    });
                }
            };
            self.ctx.log(
                dsh_plugin_api::LogLevel::Debug,
                &format!("confined: {program} {}", argv.join(" ")),
            );
            request.program = RString::from(program);
            request.args = argv.into_iter().map(RString::from).collect();
        }
        request.remove_env = RVec::from(remove);
        Ok(request)
    }
}

/// Whether `root/.git` is a file (a worktree's or a submodule's pointer to its repository).
pub(crate) fn git_is_file(root: &Path) -> bool {
    root.join(".git").is_file()
}

/// The protected paths of one project root: each of `names` under it, where `.git` stands for
/// the two places git runs code from (its `hooks` directory and its `config`), or for itself
/// when it is a file (a worktree's pointer to its repository).
pub(crate) fn protected_paths(root: &Path, names: &[String], git_is_file: bool) -> Vec<String> {
    let mut paths = Vec::new();
    for name in names {
        let path = root.join(name);
        if name == ".git" && !git_is_file {
            paths.push(path.join("hooks").display().to_string());
            paths.push(path.join("config").display().to_string());
        } else {
            paths.push(path.display().to_string());
        }
    }
    paths
}

/// A repository without a hooks directory gets an empty one before a command runs, so that it
/// is bound read-only like any other (otherwise the command could create it and plant a hook).
fn prepare_protected(policy: &SandboxPolicy) {
    for protected in &policy.protected {
        let path = Path::new(protected);
        if path.ends_with(".git/hooks") && !path.exists() && path.parent().is_some_and(Path::is_dir)
        {
            let _ = std::fs::create_dir(path);
        }
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
        self.0.encoded_policy(&session, &cwd, &call_id)
    }

    fn spawn(
        &self,
        session: RString,
        cwd: RString,
        call_id: RString,
        request: SpawnRequest,
    ) -> RResult<ProcessBox, SeamError> {
        self.0
            .start(&session, &cwd, &call_id, request)
            .map_err(SeamError::from)
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
    ) -> RResult<PipedProcess, SeamError> {
        self.0
            .start_piped(&session, &cwd, &call_id, &mode, request)
            .map_err(SeamError::from)
            .into()
    }
}

impl SandboxPty for Handle {
    fn spawn_pty(
        &self,
        session: RString,
        cwd: RString,
        call_id: RString,
        request: SpawnRequest,
        size: PtySize,
    ) -> RResult<PtyProcess, SeamError> {
        self.0
            .start_pty(&session, &cwd, &call_id, request, size)
            .map_err(SeamError::from)
            .into()
    }
}
