//! Plugin `acp`: the Agent Client Protocol agent of `dsh-host --profile acp` (protocol
//! version 1, newline-delimited JSON-RPC 2.0 on stdin and stdout; stdout carries frames and
//! nothing else). Each `session/new` creates an agent through the `agents` registry, each
//! prompt is queued on it as a followup, and what the agent does comes back as
//! `session/update`s, from the committed session events. Approvals of its sessions' calls are
//! put to the client (`session/request_permission`).
//!
//! Two contracts, chosen by the row's `mode`: `editor` (the default) for Zed and the other ACP
//! clients, and `automation`, the reference's automation-only contract exactly, which its
//! recorded transcripts reproduce. `--replay FILE` mounts `llm-replay` on FILE (its
//! `replay.override.json` and child logs beside it), so a recorded case runs with no network
//! and no key. Stdin closed ends the connection and the host (exit 0); a signal stops the work
//! first.
//!
//! In editor mode a session's own `mcpServers` (stdio, HTTP and SSE) run for that session alone
//! (`mcp`), and its `additionalDirectories` are writable roots of its calls besides its
//! working directory (the sandbox's `sandbox_roots`). Images in prompts are taken when an
//! attachment store is mounted and the model takes them (`images`). With the row's `clientFs`,
//! the file tools of full-access sessions read and write text through the client's `fs/*`
//! (`client_fs`); with its `clientTerminal`, their shell commands run in the client's
//! terminals (`client_terminal`). Not built: audio in prompts.

mod args;
mod client_fs;
mod client_terminal;
mod door;
mod editor;
mod events;
#[doc(hidden)]
pub mod fuzzing;
mod images;
mod live;
mod mcp;
mod modes;
mod options;
mod permission;
mod plan_review;
mod prompt;
mod schema;
mod server;
mod shutdown;
mod stdin;
mod stored;
mod tool_calls;
mod updates;
mod wire;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use dsh_agents_seam::AGENTS_SERVICE;
use dsh_plugin_api::cancel::first_of;
use dsh_plugin_api::io::control::{HOST_SERVICE, HostControlService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{CMDLINE_SERVICE, CmdlineArgs};

use crate::args::{Args, Parsed, USAGE, UsageError};
pub use crate::server::Mode;
use crate::server::Server;

/// How long the first request waits for the rest of the tree to start.
const TREE_START: Duration = Duration::from_secs(5);

/// Config of `acp`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct AcpConfig {
    /// `editor` (streamed text, tool calls, plans, modes, load and list) or `automation` (the
    /// reference's automation-only contract).
    pub mode: Mode,
    /// The model route of new sessions (`PROVIDER/MODEL`) when `--model` is not given.
    pub model: Option<String>,
    /// Whether the file tools of the client's full-access sessions read and write text
    /// through the client's `fs/read_text_file` and `fs/write_text_file`, where it offers both
    /// (editor mode): an editor answers with its buffers, saved or not, and shows the writes in
    /// them.
    pub client_fs: bool,
    /// How long a file tool waits for the client's answer to an `fs/*` request before the
    /// request is withdrawn (`$/cancel_request`) and the tool fails (ms; 30,000 when unset).
    pub client_fs_timeout_ms: Option<u64>,
    /// Whether the shell commands of the client's full-access sessions run in the client's
    /// terminal (`terminal/*`), where it has terminals (editor mode): the editor shows the
    /// command live in its tool call. Commands under a sandbox never go there.
    pub client_terminal: bool,
}

pub struct AcpPlugin;

fn err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The model route of new sessions, in the documented order of preference.
fn choose_model(args: &Args, config: Option<&str>) -> Result<(String, String), UsageError> {
    if let Some(route) = &args.model {
        return Ok(route.clone());
    }
    if let Some(route) = config {
        return args::split_route(route)
            .map_err(|error| UsageError(format!("row config `model`: {error}")));
    }
    if args.replay.is_some() {
        return Ok(("replay".to_owned(), "replay".to_owned()));
    }
    if std::env::var_os("DEEPSEEK_API_KEY").is_some_and(|key| !key.is_empty()) {
        return Ok((
            "deepseek-official".to_owned(),
            "deepseek-v4-flash".to_owned(),
        ));
    }
    Ok((String::new(), String::new()))
}

impl Plugin for AcpPlugin {
    const NAME: &'static str = "acp";
    // The registry and the services a session uses are reached when used, so a reload of one
    // does not take the connection down with it.
    const INJECT: &'static [&'static str] = &[CMDLINE_SERVICE, HOST_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        AGENTS_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_sessions_seam::SESSION_PERSISTENCE_SERVICE,
        dsh_subagents_seam::SUBAGENTS_SERVICE,
        dsh_clients_seam::CLIENTS_SERVICE,
        dsh_compaction_seam::COMPACTION_SERVICE,
        dsh_llm_seam::LLM_SERVICE,
        dsh_attachments_seam::ATTACHMENTS_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[
        dsh_plugin_api::io::client_files::CLIENT_FILES_SERVICE,
        dsh_plugin_api::io::client_terminal::CLIENT_TERMINAL_SERVICE,
    ];
    type Config = AcpConfig;

    async fn apply(ctx: Context, config: AcpConfig) -> Result<(), PluginError> {
        let cmdline = ctx.inject::<CmdlineArgs>(CMDLINE_SERVICE)?;
        let host = ctx.inject::<HostControlService>(HOST_SERVICE)?;
        let args: Vec<String> = cmdline.args.iter().map(|arg| arg.to_string()).collect();
        let args = match args::parse(&args) {
            Ok(Parsed::Run(args)) => args,
            Ok(Parsed::Help) => {
                let _ = writeln!(std::io::stdout().lock(), "{USAGE}");
                host.exit(0);
                return Ok(());
            }
            Err(error) => {
                err(&format!("dsh: {error}\n\n{USAGE}"));
                host.exit(2);
                return Ok(());
            }
        };
        let route = match choose_model(&args, config.model.as_deref()) {
            Ok(route) => route,
            Err(error) => {
                err(&format!("dsh: {error}"));
                host.exit(2);
                return Ok(());
            }
        };
        let server = Arc::new(Server::new(ctx.clone(), config.mode, route));
        events::listen(&server)?;
        permission::listen(&server)?;
        live::listen(&server)?;
        if config.client_fs {
            let bound = config
                .client_fs_timeout_ms
                .map_or(client_fs::ANSWER_BOUND, Duration::from_millis);
            client_fs::provide(&server, bound)?;
        }
        if config.client_terminal {
            client_terminal::provide(&server)?;
        }
        shutdown::on_signal(&server)?;
        // Unloaded while the connection is open (a service it needs went away, its row was
        // edited): the client cannot be handed over, so the host ends with it.
        let (unloaded, exits) = (server.clone(), host.clone());
        ctx.effect(move || async move {
            if !unloaded.is_closed() {
                err("dsh: the ACP agent was unloaded while its connection was open");
                shutdown::quiesce(&unloaded, true).await;
                exits.exit(1);
            }
        })?;
        let task = server.clone();
        ctx.spawn(async move {
            if let Some(log) = &args.replay
                && let Err(error) = dsh_llm_seam::mount_replay(&task.ctx, log).await
            {
                err(&format!("dsh: {error}"));
                host.exit(1);
                return;
            }
            // Every row that can start has started before the first request is read (the
            // tools a session offers, the sandbox their processes run in).
            let _ = first_of(task.ctx.tree_settled(), task.ctx.sleep(TREE_START)).await;
            stdin::serve(&task).await;
            shutdown::stdin_closed(&task, &host).await;
        })
    }
}

dsh_plugin_api::export_plugins!(AcpPlugin);
