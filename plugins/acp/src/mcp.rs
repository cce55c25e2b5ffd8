//! A session's own MCP servers (`mcpServers` of `session/new`, `session/load` and
//! `session/resume`, editor mode): read into the `mcp` plugin's shapes, refused with -32602
//! naming the server when one cannot be (a stdio one without `command`, an http or sse one
//! without `url`, an unknown type),
//! and mounted through the `mcp_scopes` service in a tool scope of their own, which the
//! session's agent has in its scope chain, so only that session is offered their tools. The
//! `mcp` row stops them when the agent is disposed. A server that does not start leaves the
//! session working: the client is told which and why, in a message after the answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dsh_plugin_api::Json;
use dsh_tools_seam::mcp::{MCP_SCOPES_SERVICE, McpScopesService, ScopedServer, ServerStatus};

use crate::schema::McpServer;
use crate::server::Server;
use crate::wire::RpcError;

/// Makes each session's scope key unique on this host.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A fresh tool scope for one session's servers.
pub(crate) fn new_scope() -> String {
    format!(
        "acp-session:{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `servers` in the `mcp` plugin's shapes, or the -32602 naming the first that cannot be run.
pub(crate) fn read(servers: &[McpServer]) -> Result<Vec<ScopedServer>, RpcError> {
    servers
        .iter()
        .enumerate()
        .map(|(at, server)| one(at, server))
        .collect()
}

fn one(at: usize, server: &McpServer) -> Result<ScopedServer, RpcError> {
    let named = |what: &str| {
        RpcError::invalid_params(format!("mcpServers[{at}] (`{}`): {what}", server.name))
    };
    let pairs = |list: &[crate::schema::NameValue]| {
        list.iter()
            .map(|pair| (pair.name.clone(), pair.value.clone()))
            .collect::<Vec<_>>()
    };
    match server.kind.as_deref() {
        None | Some("stdio") => Ok(ScopedServer::Stdio {
            name: server.name.clone(),
            command: server
                .command
                .clone()
                .filter(|command| !command.is_empty())
                .ok_or_else(|| named("a stdio server needs a `command`"))?,
            args: server.args.clone(),
            env: pairs(&server.env),
        }),
        Some(kind @ ("http" | "sse")) => {
            let url = server
                .url
                .clone()
                .filter(|url| !url.is_empty())
                .ok_or_else(|| named(&format!("an {kind} server needs a `url`")))?;
            let (name, headers) = (server.name.clone(), pairs(&server.headers));
            Ok(match kind {
                "sse" => ScopedServer::Sse { name, url, headers },
                _ => ScopedServer::Http { name, url, headers },
            })
        }
        Some(other) => Err(named(&format!(
            "unknown type `{other}` (expected http, sse, or none for stdio)"
        ))),
    }
}

/// Mounts `servers` in `scope` for agent `agent` working in `cwd`; answers what the client is
/// told about those that did not start (nothing when all did).
pub(crate) async fn mount(
    server: &Arc<Server>,
    scope: &str,
    agent: &str,
    cwd: &str,
    servers: Vec<ScopedServer>,
) -> Option<String> {
    let names: Vec<String> = servers.iter().map(|s| format!("`{}`", s.name())).collect();
    let scopes = match server.ctx.get::<McpScopesService>(MCP_SCOPES_SERVICE) {
        Ok(Some(scopes)) => scopes,
        _ => {
            return Some(format!(
                "The MCP servers {} were not started: no `mcp` row is mounted (its `mcp_scopes` service is missing).",
                names.join(", ")
            ));
        }
    };
    let mounting = scopes.mount(
        scope.into(),
        agent.into(),
        cwd.into(),
        Json::encode(&servers),
    );
    drop(scopes);
    let statuses: Vec<ServerStatus> = match mounting.await.into_result() {
        Ok(statuses) => match statuses.decode() {
            Ok(statuses) => statuses,
            Err(error) => return Some(format!("The MCP servers' statuses do not read: {error}")),
        },
        Err(error) => {
            return Some(format!(
                "The MCP servers {} were not started: {error}",
                names.join(", ")
            ));
        }
    };
    let failed: Vec<String> = statuses
        .into_iter()
        .filter_map(|status| {
            let why = status.error?;
            Some(format!("MCP server `{}` did not start: {why}", status.name))
        })
        .collect();
    (!failed.is_empty()).then(|| failed.join("\n"))
}
