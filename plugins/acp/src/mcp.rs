//! A session's own MCP servers (`mcpServers` of `session/new`, `session/load` and
//! `session/resume`, editor mode), read into the client protocol's shapes, refused with -32602
//! naming the server when one cannot be (a stdio one without `command`, an http or sse one
//! without `url`, an unknown type). The clients service starts them for that session alone
//! (`session.create`, `session.open`); one that does not start leaves the session working, and
//! the client is told which and why in a message after the answer.

use dsh_client_protocol::McpServerSpec;

use crate::schema::McpServer;
use crate::wire::RpcError;

/// `servers` in the client protocol's shapes, or the -32602 naming the first that cannot be run.
pub(crate) fn read(servers: &[McpServer]) -> Result<Vec<McpServerSpec>, RpcError> {
    servers
        .iter()
        .enumerate()
        .map(|(at, server)| one(at, server))
        .collect()
}

fn one(at: usize, server: &McpServer) -> Result<McpServerSpec, RpcError> {
    let named = |what: &str| {
        RpcError::invalid_params(format!("mcpServers[{at}] (`{}`): {what}", server.name))
    };
    let pairs = |list: &[crate::schema::NameValue]| {
        list.iter()
            .map(|pair| (pair.name.clone(), pair.value.clone()))
            .collect::<Vec<_>>()
    };
    match server.kind.as_deref() {
        None | Some("stdio") => Ok(McpServerSpec::Stdio {
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
                "sse" => McpServerSpec::Sse { name, url, headers },
                _ => McpServerSpec::Http { name, url, headers },
            })
        }
        Some(other) => Err(named(&format!(
            "unknown type `{other}` (expected http, sse, or none for stdio)"
        ))),
    }
}
