//! Plugin `mcp`: a Model Context Protocol client. It runs the servers its row names (`servers`)
//! and those of the `mcpServers` files it reads (`files`, the user's `$DSH_HOME/mcp.json` in
//! the bundles, and the workspace's `.mcp.json`), and registers each server's tools with the
//! `tools` service as `mcp__<server>__<tool>`, so they go through the guarded pipeline like
//! any tool (rules, approval, hooks). Stdio servers are processes started through the
//! sandbox's piped launcher, confined by its default mode unless the user's own entry chooses
//! one; Streamable HTTP servers are reached through the host's `http` service. Protocol
//! revision 2025-11-25, down to 2024-11-05 when a server speaks an older one.
//!
//! A server that dies is restarted with a growing delay, its tools answering why meanwhile;
//! `list_changed` notifications update the registry; the files are followed through the
//! host's `fs_watch` service, and a change restarts only the servers whose entries changed. A
//! bad entry is logged naming its file and server, and the others run on. Resources and
//! prompts are listed and kept (logged), for a later picker. The plugin owns no thread and no
//! socket: every process, request and timer is the host's. With no server configured it
//! starts nothing.

mod client;
mod config;
mod error;
mod http;
mod protocol;
mod reload;
mod results;
mod rpc;
mod server;
mod sse;
mod stdio;
mod tool;
mod transport;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_plugin_api::cancel::first_of;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, lock};
use dsh_sandbox_seam::{SANDBOX_PIPED_SERVICE, SandboxPipedService};
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService};
use dsh_trust_seam::{TRUST_CHANGED, is_trusted};

pub use crate::config::ServerEntry;
use crate::config::{Loaded, ServerSpec, Sources};
use crate::server::{Server, Shared};

/// Config of `mcp`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct McpConfig {
    /// Servers by name, in the shape of an `mcpServers` entry.
    pub servers: BTreeMap<String, ServerEntry>,
    /// The user's `mcpServers` files, read in order (a later one replaces a server of the
    /// same name).
    pub files: Vec<String>,
    /// The workspace's file, relative to the workspace (empty: none). Its entries cannot
    /// choose a sandbox mode.
    pub project_file: String,
    /// Let the workspace's file add HTTP servers too (off: its `url` entries are refused, since
    /// the host reaches them outside the sandbox).
    pub project_http: bool,
    /// The directory stdio servers work in and the root they are offered (default: the
    /// host's working directory).
    pub workspace: Option<String>,
    /// Offer the workspace to servers as their root (`roots/list`).
    pub roots: bool,
    /// Time a server gets for its handshake and its lists; the host's start waits for it.
    pub startup_timeout_ms: u64,
    /// The time limit of a call (unset: the pipeline's default).
    pub tool_timeout_ms: Option<u64>,
    /// The first restart delay of a server that died; it doubles up to `maxRestartDelayMs`.
    pub restart_delay_ms: u64,
    pub max_restart_delay_ms: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            files: Vec::new(),
            project_file: ".mcp.json".to_owned(),
            project_http: false,
            workspace: None,
            roots: true,
            startup_timeout_ms: 30_000,
            tool_timeout_ms: None,
            restart_delay_ms: 1_000,
            max_restart_delay_ms: 30_000,
        }
    }
}

/// The servers running now, by name, with the spec each was started from.
pub(crate) struct Manager {
    shared: Arc<Shared>,
    sources: Sources,
    running: Mutex<BTreeMap<String, (ServerSpec, Arc<Server>)>>,
    /// The last good entries of each file that stopped parsing, kept until it parses again.
    last_good: Mutex<BTreeMap<String, ServerSpec>>,
    /// One reconcile at a time: reading the files awaits, and a reading that finished earlier
    /// must not be applied after a later one.
    reconciling: tokio::sync::Mutex<()>,
}

impl Manager {
    /// Reads the sources, reports their problems, and starts, stops or restarts servers so
    /// that what runs is what they say; answers the servers it started.
    pub(crate) async fn reconcile(&self) -> Vec<Arc<Server>> {
        let _one_at_a_time = self.reconciling.lock().await;
        let ctx = &self.shared.ctx;
        // The files are read and parsed on the blocking pool: a large one must not hold a
        // runtime thread.
        let sources = self.sources.clone();
        let trusted = is_trusted(ctx, &self.shared.workspace);
        let loaded = match ctx.blocking(move || sources.load(trusted)).await {
            Ok(loaded) => loaded,
            Err(error) => {
                ctx.log(
                    LogLevel::Error,
                    &format!("mcp: the servers files were not read, nothing changes: {error}"),
                );
                return Vec::new();
            }
        };
        let Loaded {
            mut servers,
            errors,
            warnings,
        } = loaded;
        for warning in warnings {
            ctx.log(LogLevel::Warn, &format!("mcp: {warning}"));
        }
        for error in &errors {
            ctx.log(LogLevel::Error, &format!("mcp: {error}"));
            // A file that does not parse at all keeps its servers as they were.
            if let config::ConfigError::Malformed { file, .. } = error {
                for (name, spec) in lock(&self.last_good).iter() {
                    if &spec.source == file {
                        servers.entry(name.clone()).or_insert_with(|| spec.clone());
                    }
                }
            }
        }
        *lock(&self.last_good) = servers.clone();
        let mut running = lock(&self.running);
        let gone: Vec<String> = running
            .iter()
            .filter(|(name, (spec, _))| servers.get(*name) != Some(spec))
            .map(|(name, _)| name.clone())
            .collect();
        for name in gone {
            if let Some((_, server)) = running.remove(&name) {
                ctx.log(
                    LogLevel::Info,
                    &format!("mcp `{name}`: stopped (its entry changed or went)"),
                );
                server.retire();
            }
        }
        // A tool refused earlier because a stopped server still held its name gets it now.
        for (_, server) in running.values() {
            let added = server.resync(&self.shared);
            if added > 0 {
                ctx.log(
                    LogLevel::Info,
                    &format!(
                        "mcp `{}`: {added} tools registered that were refused before",
                        server.name
                    ),
                );
            }
        }
        let mut started = Vec::new();
        for (name, spec) in servers {
            if running.contains_key(&name) {
                continue;
            }
            let server = Server::new(&name);
            let task = server::supervise(self.shared.clone(), spec.clone(), server.clone());
            match ctx.spawn(task) {
                Ok(()) => {
                    started.push(server.clone());
                    running.insert(name, (spec, server));
                }
                Err(error) => ctx.log(LogLevel::Error, &format!("mcp `{name}`: {error}")),
            }
        }
        started
    }

    /// Stops every server, closing its connection (stdin closed, the process ended).
    async fn stop_all(&self) {
        let servers: Vec<Arc<Server>> = std::mem::take(&mut *lock(&self.running))
            .into_values()
            .map(|(_, server)| server)
            .collect();
        for server in servers {
            server.stop.fire();
            server.shutdown().await;
        }
    }
}

fn workspace(config: &McpConfig) -> PathBuf {
    match &config.workspace {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    }
}

pub struct McpPlugin;

impl Plugin for McpPlugin {
    const NAME: &'static str = "mcp";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, SANDBOX_PIPED_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_plugin_api::io::watch::FS_WATCH_SERVICE,
        dsh_plugin_api::io::http::HTTP_SERVICE,
        dsh_trust_seam::TRUST_SERVICE,
    ];
    type Config = McpConfig;

    async fn apply(ctx: Context, config: McpConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let sandbox = ctx.inject::<SandboxPipedService>(SANDBOX_PIPED_SERVICE)?;
        let workspace = workspace(&config);
        let project =
            (!config.project_file.is_empty()).then(|| workspace.join(&config.project_file));
        let sources = Sources {
            row: config.servers,
            files: config.files.iter().map(PathBuf::from).collect(),
            project,
            project_http: config.project_http,
        };
        let shared = Arc::new(Shared {
            ctx: ctx.clone(),
            tools,
            sandbox,
            workspace: workspace.display().to_string(),
            roots: config.roots,
            startup_timeout_ms: config.startup_timeout_ms,
            tool_timeout_ms: config.tool_timeout_ms,
            restart_delay_ms: config.restart_delay_ms.max(1),
            max_restart_delay_ms: config.max_restart_delay_ms.max(config.restart_delay_ms),
        });
        let manager = Arc::new(Manager {
            shared,
            sources,
            running: Mutex::default(),
            last_good: Mutex::default(),
            reconciling: tokio::sync::Mutex::default(),
        });
        let started = manager.reconcile().await;
        // The first turn should see every tool: the start waits for each server's first
        // attempt (bounded by its own timeout, plus a margin for starting the process).
        let firsts = async {
            for server in &started {
                server.first.wait().await;
            }
        };
        let bound = Duration::from_millis(config.startup_timeout_ms.saturating_add(5_000));
        first_of(firsts, ctx.sleep(bound)).await;
        reload::follow(&ctx, manager.clone())?;
        // A project trusted meanwhile: its servers start now, and the trust answers once
        // each made its first attempt (bounded as at the start).
        let trusted = manager.clone();
        let waiting = ctx.clone();
        ctx.on_parallel(&TRUST_CHANGED, move |_root| {
            let (trusted, ctx) = (trusted.clone(), waiting.clone());
            async move {
                let started = trusted.reconcile().await;
                let firsts = async {
                    for server in &started {
                        server.first.wait().await;
                    }
                };
                first_of(firsts, ctx.sleep(bound)).await;
            }
        })?;
        let stopping = manager.clone();
        ctx.effect(move || async move { stopping.stop_all().await })
    }
}

/// The paths a watcher of `file` must watch: its directory (the file may not exist yet).
pub(crate) fn parent_of(file: &Path) -> Option<PathBuf> {
    file.parent().map(Path::to_path_buf)
}

dsh_plugin_api::export_plugins!(McpPlugin);
