//! Plugin `mcp`: a Model Context Protocol client. It runs the servers its row names (`servers`)
//! and those of the `mcpServers` files it reads (`files`, the user's `$DSH_HOME/mcp.json` in
//! the bundles), whose tools every session sees, and, per working directory that has
//! sessions, the servers of that directory's `.mcp.json` (a trusted project's), whose tools
//! only that directory's sessions see (`workspaces`). It registers each server's tools with
//! the `tools` service as `mcp__<server>__<tool>`, so they go through the guarded pipeline like
//! any tool (rules, approval, hooks). Stdio servers are processes started through the
//! sandbox's piped launcher, confined by its default mode unless the user's own entry chooses
//! one; Streamable HTTP servers, and those that speak only the legacy HTTP+SSE transport
//! (`type: sse`), are reached through the host's `http` service. Protocol
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
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod images;
mod legacy_sse;
mod manager;
mod protocol;
mod reload;
mod results;
mod rpc;
mod scoped;
mod server;
mod sse;
mod stdio;
mod tool;
mod transport;
mod workspaces;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;

use dsh_agents_seam::{AGENT_CREATED, AGENT_DISPOSED, AGENT_PRE_STEP};
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::prelude::*;
use dsh_sandbox_seam::{SANDBOX_PIPED_SERVICE, SandboxPipedService};
use dsh_tools_seam::mcp::{MCP_SCOPES_SERVICE, McpScopes_TO};
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService};
use dsh_trust_seam::TRUST_CHANGED;

pub use crate::config::ServerEntry;
use crate::config::Sources;
use crate::manager::Manager;
use crate::scoped::Scoped;
use crate::server::Shared;
use crate::workspaces::Workspaces;

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
    /// A project's file, relative to the working directory of a session (empty: none). Its
    /// servers run per directory that has sessions, in that directory, and only its sessions
    /// see their tools; its entries cannot choose a sandbox mode.
    pub project_file: String,
    /// Let a project's file add HTTP servers too (off: its `url` entries are refused, since
    /// the host reaches them outside the sandbox).
    pub project_http: bool,
    /// The directory the row's and the user's stdio servers work in and the root they are
    /// offered (default: the host's working directory).
    pub workspace: Option<String>,
    /// Offer the workspace (a project's servers: their directory) to servers as their root
    /// (`roots/list`).
    pub roots: bool,
    /// Time a server gets for its handshake and its lists; the host's start waits for the
    /// row's and the user's servers, a session's first step for its directory's.
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
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_attachments_seam::ATTACHMENTS_SERVICE,
        dsh_attachments_seam::ROUTE_SERVICES[0],
        dsh_attachments_seam::ROUTE_SERVICES[1],
    ];
    const PROVIDES: &'static [&'static str] = &[MCP_SCOPES_SERVICE];
    type Config = McpConfig;

    async fn apply(ctx: Context, config: McpConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let sandbox = ctx.inject::<SandboxPipedService>(SANDBOX_PIPED_SERVICE)?;
        let shared = Shared {
            ctx: ctx.clone(),
            tools,
            sandbox,
            workspace: workspace(&config).display().to_string(),
            scope: String::new(),
            roots: config.roots,
            startup_timeout_ms: config.startup_timeout_ms,
            tool_timeout_ms: config.tool_timeout_ms,
            restart_delay_ms: config.restart_delay_ms.max(1),
            max_restart_delay_ms: config.max_restart_delay_ms.max(config.restart_delay_ms),
        };
        // A first attempt is bounded by its own timeout, plus a margin for starting the process.
        let bound = Duration::from_millis(config.startup_timeout_ms.saturating_add(5_000));
        let sources = Sources {
            row: config.servers,
            row_label: "the row".to_owned(),
            files: config.files.iter().map(PathBuf::from).collect(),
            project: None,
            project_http: config.project_http,
        };
        let global = Manager::new(Arc::new(shared.clone()), sources);
        let scoped = Scoped::new(shared.clone(), bound);
        let global_ready = CancelFlag::new();
        let projects = (!config.project_file.is_empty()).then(|| {
            Workspaces::new(
                shared,
                config.project_file,
                config.project_http,
                bound,
                global_ready.clone(),
            )
        });
        // Followed before the row's and the user's servers are waited for: a session may
        // start meanwhile (the web page serves before this row is up).
        if let Some(projects) = &projects {
            follow_agents(&ctx, projects)?;
        }
        // A project trusted meanwhile: its servers start now, and the trust answers once
        // each made its first attempt (bounded as at the start).
        let trusted = projects.clone();
        ctx.on_parallel(&TRUST_CHANGED, move |_root| {
            let trusted = trusted.clone();
            async move {
                if let Some(projects) = trusted {
                    projects.reconcile_all().await;
                }
            }
        })?;
        let (stopping, global_stopping) = (projects.clone(), global.clone());
        let scoped_stopping = scoped.clone();
        ctx.effect(move || async move {
            if let Some(projects) = stopping {
                projects.stop_all().await;
            }
            scoped_stopping.stop_all().await;
            global_stopping.stop_all().await;
        })?;
        // A client's servers for one session (an ACP editor's): they go with its agent.
        let owned = scoped.clone();
        ctx.on_emit(&AGENT_DISPOSED, move |notice| {
            owned.disposed(notice.agent.as_str())
        })?;
        ctx.provide(
            MCP_SCOPES_SERVICE,
            McpScopes_TO::from_value(scoped::Handle(scoped), TD_Opaque),
        )?;
        // The first turn should see every tool: the start (and a session's first step) waits
        // for each server's first attempt.
        global.reconcile_and_wait(bound).await;
        global_ready.fire();
        reload::follow(&ctx, global, CancelFlag::new())
    }
}

/// Project servers follow the agents: a directory's set starts with its first agent and
/// stops with its last, and a turn's first step waits for its directory's set to be up.
fn follow_agents(ctx: &Context, projects: &Arc<Workspaces>) -> Result<(), PluginError> {
    // Agents that were there before this plugin loaded (a reload).
    projects.sync();
    for event in [&AGENT_CREATED, &AGENT_DISPOSED] {
        let projects = projects.clone();
        ctx.on_emit(event, move |_notice| projects.sync())?;
    }
    let waiting = projects.clone();
    ctx.on_waterfall(&AGENT_PRE_STEP, move |next| {
        let projects = waiting.clone();
        let proposal = next.payload().decode();
        async move {
            if let Ok(proposal) = proposal {
                projects.settled(&proposal.session).await;
            }
            next.run().await
        }
    })
}

/// The paths a watcher of `file` must watch: its directory (the file may not exist yet).
pub(crate) fn parent_of(file: &Path) -> Option<PathBuf> {
    file.parent().map(Path::to_path_buf)
}

dsh_plugin_api::export_plugins!(McpPlugin);
