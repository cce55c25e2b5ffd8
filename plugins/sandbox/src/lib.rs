//! Plugin `sandbox`: provides `sandbox`, the policy every tool process and file tool of a
//! session runs under, and the launcher that enforces it. Modes are the reference's
//! (`read-only`, `workspace-write`, `danger-full-access`); a session's mode is its latest
//! `sandbox/mode` event, else the row's `mode`, else `DSH_PERMISSION_MODE`, else
//! `workspace-write`. Confined processes run under bubblewrap (`bwrap`): `/` read-only, the
//! working directory, the configured roots and the temp dir writable, the dsh home read-only
//! over them, the credentials masked, no network unless the row allows it, in fresh pid and
//! mount namespaces that die with the call. A session's commands under `workspace-write` enter
//! one bubblewrap sandbox kept for the session and its mount layout (see `enclaves`) instead of
//! starting bubblewrap each. At start the backend is probed once; when it
//! does not work, every command that needs confinement is refused with the reason and how to
//! install bubblewrap, never run unconfined. Where bubblewrap does not work, Landlock (through
//! the host's `sandbox-exec`) confines files and TCP, reported as `partial` enforcement. Secrets are removed from every process's
//! environment (names holding KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL) unless allowed by name.
//! A `bash`, `write` or `edit` call may ask for a wider mode for itself (`sandbox_permissions`
//! + `justification`): a person approves it first (see `escalation`).

mod bwrap;
mod cgroup;
mod enclaves;
mod encoded;
mod env;
mod escalation;
mod landlock;
mod launcher;
mod limits;
mod roots;
mod service;

pub use limits::Limits;

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RSome, RString, RVec};
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::io::subprocess::{SUBPROCESS_SERVICE, SpawnRequest, SubprocessService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, Service};
use dsh_protocol::SandboxMode;
use dsh_sandbox_seam::{
    SANDBOX_PIPED_SERVICE, SANDBOX_PTY_SERVICE, SANDBOX_ROOTS_SERVICE, SANDBOX_SERVICE, Sandbox_TO,
    SandboxPiped_TO, SandboxPty_TO, SandboxRoots_TO,
};

use crate::service::{Backend, Handle, SandboxImpl, Settings};

/// Config of `sandbox`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct SandboxConfig {
    /// The mode of sessions that logged none: `read-only`, `workspace-write` or
    /// `danger-full-access` (unset: `DSH_PERMISSION_MODE`, else `workspace-write`).
    pub mode: Option<String>,
    /// More absolute directories writable in `workspace-write`.
    pub writable_roots: Vec<String>,
    /// Whether confined commands may use the network.
    pub network: bool,
    /// Variables that look like secrets but are passed on anyway, by exact name.
    pub allow_env: Vec<String>,
    /// Paths bound read-only over the writable roots.
    pub protected: Vec<String>,
    /// Files and directories confined commands see empty and the file tools refuse to read
    /// (the dsh home).
    pub hidden: Vec<String>,
    /// Paths inside the hidden ones that stay readable (the home's spilled results and skills).
    pub exposed: Vec<String>,
    /// Names kept read-only at the top of the working directory and of each `writableRoots`
    /// entry, for commands and the file tools alike (a file tool's write asks a person first).
    /// `.git` stands for its `hooks` and `config`. Default: `.git`, `.dsh`, `.claude`, `.codex`,
    /// `.agents`, `.mcp.json`.
    pub protected_names: Option<Vec<String>>,
    /// Resource limits of every confined command.
    pub limits: Limits,
    /// Whether confined commands may create Unix sockets (off: a socket file's read-only
    /// mount does not stop a connect, so the host's, a Docker daemon's or an agent's socket
    /// would be a way out).
    pub unix_sockets: bool,
    /// A fresh, private `/tmp` per command instead of the host's.
    pub fresh_tmp: bool,
    /// Whether a session's confined commands enter a bubblewrap sandbox kept for the session
    /// (each still in pid, mount and IPC namespaces of its own, with its own `/proc`) instead of
    /// starting bubblewrap each (default true; off: one bubblewrap per command, as before).
    /// Commands under `read-only` or `freshTmp` always start their own.
    pub enclaves: Option<bool>,
    /// Whether confined commands are started by a launcher the row keeps (a fork of
    /// `dsh-sandbox-exec --serve` instead of an exec of `dsh-sandbox-exec` per command; default
    /// true). Either way a command is confined the same; off, each pays one more exec.
    pub launcher: Option<bool>,
    /// Whether `/tmp` and the temp dir are writable in `workspace-write` (default true).
    pub temp_writable: Option<bool>,
    /// The bubblewrap program (default `bwrap`, looked up on `PATH`).
    pub bwrap: Option<String>,
    /// `auto` (default: bubblewrap, else Landlock), `bwrap` or `landlock`.
    pub backend: Option<String>,
    /// Fence reads too: commands and the file tools read only these directories, the writable
    /// roots and (for commands) the system's program directories. Unset: everything but the
    /// hidden paths is readable.
    pub readable_roots: Option<Vec<String>>,
}

/// How long the probe of the backend may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `program args` (a backend's probe) and answers `None` when it exits 0, else why not.
async fn probe_with(
    ctx: &Context,
    subprocess: &SubprocessService,
    program: &str,
    args: Vec<String>,
) -> Option<String> {
    let request = SpawnRequest {
        program: RString::from(program),
        args: args.into_iter().map(RString::from).collect::<RVec<_>>(),
        cwd: RSome(RString::from("/")),
        ..SpawnRequest::default()
    };
    let process = match subprocess.spawn(request).into_result() {
        Ok(process) => process,
        Err(error) => return Some(format!("cannot start `{program}`: {error}")),
    };
    let mut stderr = Vec::new();
    let reading = async {
        while let abi_stable::std_types::RSome(chunk) = process.next_output().await {
            stderr.extend_from_slice(&chunk.bytes);
        }
        process.wait().await.into_result()
    };
    match first_of(reading, ctx.sleep(PROBE_TIMEOUT)).await {
        Either::Left(Ok(status)) if status.code.into_option() == Some(0) => None,
        Either::Left(Ok(status)) => Some(format!(
            "it does not work here (exit {:?}): {}",
            status.code.into_option(),
            String::from_utf8_lossy(&stderr).trim()
        )),
        Either::Left(Err(error)) => Some(error.to_string()),
        Either::Right(()) => {
            let _ = process.terminate(500).await;
            Some("it did not answer its probe within 10 s".to_owned())
        }
    }
}

/// Why `dsh-sandbox-exec` cannot be found.
#[derive(Debug, thiserror::Error)]
enum ExecError {
    #[error("cannot tell where dsh-host is: {0}")]
    Host(std::io::Error),
    #[error("{0} is missing beside dsh-host (build or install it with the host)")]
    Missing(String),
}

/// Why a backend does not work here; every backend's reason is said when none does.
#[derive(Debug, thiserror::Error)]
#[error("{backend}: {why}")]
struct Unworkable {
    /// The backend, as `bwrap`, `bwrap (/usr/bin/bwrap)` or `landlock`.
    backend: String,
    why: String,
}

/// Where `dsh-sandbox-exec` is: beside the running `dsh-host`.
fn exec_path() -> Result<String, ExecError> {
    let host = std::env::current_exe().map_err(ExecError::Host)?;
    let exec = host.with_file_name(landlock::EXEC_NAME);
    match exec.is_file() {
        true => Ok(exec.display().to_string()),
        false => Err(ExecError::Missing(exec.display().to_string())),
    }
}

/// The default protected names.
const PROTECTED_NAMES: [&str; 6] = [".git", ".dsh", ".claude", ".codex", ".agents", ".mcp.json"];

/// Bubblewrap at `bwrap` with `exec` inside, with a user namespace where the kernel gives one.
async fn probe_bwrap(
    ctx: &Context,
    subprocess: &SubprocessService,
    bwrap: &str,
    exec: &str,
) -> Result<Backend, Unworkable> {
    let probe = |userns| landlock::front_probe_arguments(bwrap, userns);
    let with_userns = probe_with(ctx, subprocess, exec, probe(true)).await;
    let Some(userns_failed) = with_userns else {
        return Ok(Backend::Bwrap {
            bwrap: bwrap.to_owned(),
            exec: exec.to_owned(),
            user_namespace: true,
        });
    };
    match probe_with(ctx, subprocess, exec, probe(false)).await {
        None => {
            ctx.log(
                LogLevel::Warn,
                &format!(
                    "bwrap cannot make a user namespace here ({userns_failed}); commands run with every capability dropped but in the host's user namespace"
                ),
            );
            Ok(Backend::Bwrap {
                bwrap: bwrap.to_owned(),
                exec: exec.to_owned(),
                user_namespace: false,
            })
        }
        Some(why) => Err(Unworkable {
            backend: format!("bwrap ({bwrap})"),
            why,
        }),
    }
}

/// The backend `wanted` names (`auto` tries bubblewrap, then Landlock), probed once.
async fn choose(
    ctx: &Context,
    subprocess: &SubprocessService,
    wanted: &str,
    bwrap: &str,
) -> Result<Backend, PluginError> {
    let exec = exec_path();
    let try_bwrap = async {
        match &exec {
            Ok(exec) => probe_bwrap(ctx, subprocess, bwrap, exec).await,
            Err(why) => Err(Unworkable {
                backend: "bwrap".to_owned(),
                why: why.to_string(),
            }),
        }
    };
    let try_landlock = async {
        let unworkable = |why: String| Unworkable {
            backend: "landlock".to_owned(),
            why,
        };
        let exec = exec.as_ref().map_err(|why| unworkable(why.to_string()))?;
        match probe_with(ctx, subprocess, exec, landlock::probe_arguments()).await {
            None => Ok(Backend::Landlock(exec.clone())),
            Some(why) => Err(unworkable(why)),
        }
    };
    // The reasons are kept as words: the backend left unavailable says them to each command.
    let chosen = match wanted {
        "bwrap" => try_bwrap.await.map_err(|why| why.to_string()),
        "landlock" => try_landlock.await.map_err(|why| why.to_string()),
        "auto" => match try_bwrap.await {
            Ok(backend) => Ok(backend),
            Err(bwrap_failed) => try_landlock
                .await
                .map_err(|landlock_failed| format!("{bwrap_failed}; {landlock_failed}")),
        },
        other => {
            return Err(PluginError {
                kind: dsh_plugin_api::ErrorKind::Config,
                message: format!(
                    "invalid config: backend `{other}` (expected auto, bwrap or landlock)"
                )
                .into(),
                path: RSome("$.backend".into()),
            });
        }
    };
    Ok(chosen.unwrap_or_else(Backend::Unavailable))
}

fn default_mode(config: &SandboxConfig) -> Result<SandboxMode, PluginError> {
    if let Some(name) = &config.mode {
        return SandboxMode::parse(name).ok_or_else(|| PluginError {
            kind: dsh_plugin_api::ErrorKind::Config,
            message: format!(
                "invalid config: mode `{name}` (expected read-only, workspace-write or danger-full-access)"
            )
            .into(),
            path: RSome("$.mode".into()),
        });
    }
    Ok(std::env::var("DSH_PERMISSION_MODE")
        .ok()
        .and_then(|name| SandboxMode::parse(&name))
        .unwrap_or(SandboxMode::WorkspaceWrite))
}

pub struct SandboxPlugin;

impl Plugin for SandboxPlugin {
    const NAME: &'static str = "sandbox";
    const INJECT: &'static [&'static str] = &[SUBPROCESS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_credentials_seam::CREDENTIALS_SERVICE,
        dsh_plugin_api::io::secrets::SECRET_VALUES_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_plugin_api::io::piped::PIPED_SUBPROCESS_SERVICE,
        dsh_plugin_api::io::pty::PTY_SUBPROCESS_SERVICE,
        dsh_plugin_api::io::launcher::LAUNCHER_SERVICE,
        dsh_approval_seam::APPROVAL_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[
        SANDBOX_SERVICE,
        SANDBOX_PIPED_SERVICE,
        SANDBOX_ROOTS_SERVICE,
        SANDBOX_PTY_SERVICE,
    ];
    type Config = SandboxConfig;

    async fn apply(ctx: Context, config: SandboxConfig) -> Result<(), PluginError> {
        let subprocess: Service<SubprocessService> = ctx.inject(SUBPROCESS_SERVICE)?;
        let default_mode = default_mode(&config)?;
        let bwrap_path = config.bwrap.clone().unwrap_or_else(|| "bwrap".to_owned());
        let wanted = config.backend.clone().unwrap_or_else(|| "auto".to_owned());
        let backend = choose(&ctx, &subprocess, &wanted, &bwrap_path).await?;
        match &backend {
            Backend::Unavailable(reason) => ctx.log(
                LogLevel::Warn,
                &format!(
                    "no sandbox backend: commands outside danger-full-access are refused ({reason})"
                ),
            ),
            confining => ctx.log(
                LogLevel::Info,
                &format!(
                    "sandbox backend {confining:?}; each command limited to {}",
                    config.limits.describe()
                ),
            ),
        }
        let settings = Settings {
            default_mode,
            writable_roots: config.writable_roots,
            network: config.network,
            allow_env: config.allow_env,
            protected: config.protected,
            hidden: config.hidden,
            fresh_tmp: config.fresh_tmp,
            enclaves: config.enclaves.unwrap_or(true),
            launcher: config.launcher.unwrap_or(true),
            temp_writable: config.temp_writable.unwrap_or(true),
            readable_roots: config.readable_roots,
            exposed: config.exposed,
            protected_names: config.protected_names.unwrap_or_else(|| {
                PROTECTED_NAMES
                    .iter()
                    .map(|name| (*name).to_owned())
                    .collect()
            }),
            limits: config.limits,
            unix_sockets: config.unix_sockets,
        };
        let ceilings = cgroup::Ceilings {
            processes: settings.limits.processes,
            memory_bytes: settings.limits.memory_bytes,
        };
        let cgroups = match &backend {
            Backend::Unavailable(_) => Vec::new(),
            _ => match ctx.blocking(move || cgroup::prepare(&ceilings)).await? {
                Ok(groups) => groups,
                Err(why) => {
                    if cgroup::is_root() {
                        ctx.log(
                            LogLevel::Warn,
                            &format!(
                                "no control group for commands ({why}): as root, the process limit does not bind them"
                            ),
                        );
                    }
                    Vec::new()
                }
            },
        };
        let made = cgroups.clone();
        ctx.on_dispose(move || cgroup::remove(&made))?;
        let service = Arc::new(SandboxImpl::new(
            ctx.clone(),
            settings,
            backend,
            subprocess,
            cgroups,
        ));
        let kept = service.clone();
        ctx.on_dispose(move || {
            kept.enclaves.clear();
            kept.launcher.clear();
        })?;
        escalation::listen(&ctx, service.clone())?;
        ctx.provide(
            SANDBOX_SERVICE,
            Sandbox_TO::from_value(Handle(service.clone()), TD_Opaque),
        )?;
        ctx.provide(
            SANDBOX_ROOTS_SERVICE,
            SandboxRoots_TO::from_value(roots::RootsHandle(service.clone()), TD_Opaque),
        )?;
        // Long-lived stdio peers (MCP servers): the same policy, stdin kept open.
        ctx.provide(
            SANDBOX_PIPED_SERVICE,
            SandboxPiped_TO::from_value(Handle(service.clone()), TD_Opaque),
        )?;
        // Persistent shells: the same policy, on a terminal.
        ctx.provide(
            SANDBOX_PTY_SERVICE,
            SandboxPty_TO::from_value(Handle(service), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(SandboxPlugin);
