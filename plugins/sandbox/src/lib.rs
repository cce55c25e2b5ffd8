//! Plugin `sandbox`: provides `sandbox`, the policy every tool process and file tool of a
//! session runs under, and the launcher that enforces it. Modes are the reference's
//! (`read-only`, `workspace-write`, `danger-full-access`); a session's mode is its latest
//! `sandbox/mode` event, else the row's `mode`, else `DSH_PERMISSION_MODE`, else
//! `workspace-write`. Confined processes run under bubblewrap (`bwrap`): `/` read-only, the
//! working directory, the configured roots and the temp dir writable, the dsh home read-only
//! over them, the credentials masked, no network unless the row allows it, in fresh pid and
//! network namespaces that die with the call. At start the backend is probed once; when it
//! does not work, every command that needs confinement is refused with the reason and how to
//! install bubblewrap, never run unconfined. Secrets are removed from every process's
//! environment (names holding KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL) unless allowed by name.
//! A `bash`, `write` or `edit` call may ask for a wider mode for itself (`sandbox_permissions`
//! + `justification`): a person approves it first (see `escalation`).

mod bwrap;
mod env;
mod escalation;
mod service;

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RSome, RString, RVec};
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::io::subprocess::{SUBPROCESS_SERVICE, SpawnRequest, SubprocessService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, Service};
use dsh_protocol::SandboxMode;
use dsh_sandbox_seam::{SANDBOX, Sandbox_TO};

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
    /// Paths bound read-only over the writable roots (the dsh home).
    pub protected: Vec<String>,
    /// Files and directories confined commands see empty (the credentials file).
    pub hidden: Vec<String>,
    /// A fresh, private `/tmp` per command instead of the host's.
    pub fresh_tmp: bool,
    /// The bubblewrap program (default `bwrap`, looked up on `PATH`).
    pub bwrap: Option<String>,
}

/// How long the probe of the backend may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `bwrap` runs a confined `true` here; why not, when it does not.
async fn probe(ctx: &Context, subprocess: &SubprocessService, bwrap: &str) -> Backend {
    let request = SpawnRequest {
        program: RString::from(bwrap),
        args: bwrap::probe_arguments()
            .into_iter()
            .map(RString::from)
            .collect::<RVec<_>>(),
        cwd: RSome(RString::from("/")),
        ..SpawnRequest::default()
    };
    let process = match subprocess.spawn(request).into_result() {
        Ok(process) => process,
        Err(error) => {
            return Backend::Unavailable(format!("bwrap: cannot start `{bwrap}`: {error}"));
        }
    };
    let mut stderr = Vec::new();
    let reading = async {
        while let abi_stable::std_types::RSome(chunk) = process.next_output().await {
            stderr.extend_from_slice(&chunk.bytes);
        }
        process.wait().await.into_result()
    };
    match first_of(reading, ctx.sleep(PROBE_TIMEOUT)).await {
        Either::Left(Ok(status)) if status.code.into_option() == Some(0) => {
            Backend::Bwrap(bwrap.to_owned())
        }
        Either::Left(Ok(status)) => Backend::Unavailable(format!(
            "bwrap does not work here (exit {:?}): {}",
            status.code.into_option(),
            String::from_utf8_lossy(&stderr).trim()
        )),
        Either::Left(Err(error)) => Backend::Unavailable(format!("bwrap: {error}")),
        Either::Right(()) => {
            let _ = process.terminate(500).await;
            Backend::Unavailable("bwrap did not answer its probe within 10 s".to_owned())
        }
    }
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
    const PROVIDES: &'static [&'static str] = &[SANDBOX];
    type Config = SandboxConfig;

    async fn apply(ctx: Context, config: SandboxConfig) -> Result<(), PluginError> {
        let subprocess: Service<SubprocessService> = ctx.inject(SUBPROCESS_SERVICE)?;
        let default_mode = default_mode(&config)?;
        let bwrap_path = config.bwrap.clone().unwrap_or_else(|| "bwrap".to_owned());
        let backend = probe(&ctx, &subprocess, &bwrap_path).await;
        if let Backend::Unavailable(reason) = &backend {
            ctx.log(
                LogLevel::Warn,
                &format!(
                    "no sandbox backend: commands outside danger-full-access are refused ({reason})"
                ),
            );
        }
        let settings = Settings {
            default_mode,
            writable_roots: config.writable_roots,
            network: config.network,
            allow_env: config.allow_env,
            protected: config.protected,
            hidden: config.hidden,
            fresh_tmp: config.fresh_tmp,
        };
        let service = Arc::new(SandboxImpl::new(ctx.clone(), settings, backend, subprocess));
        escalation::listen(&ctx, service.clone())?;
        ctx.provide(SANDBOX, Sandbox_TO::from_value(Handle(service), TD_Opaque))
    }
}

dsh_plugin_api::export_plugins!(SandboxPlugin);
