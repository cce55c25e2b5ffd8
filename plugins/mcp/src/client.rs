//! The client's side of a session: the handshake (this client asks for the latest revision and
//! accepts any it speaks, down to 2024-11-05), then the catalog: tools, resources and prompts,
//! each list read page by page.

use std::sync::Arc;

use dsh_plugin_api::Deserialize;

use crate::protocol::{
    ClientCapabilities, Empty, Implementation, InitializeParams, InitializeResult, LATEST,
    ListParams, Page, PromptInfo, ResourceInfo, RootsCapability, SUPPORTED, ToolInfo,
};
use crate::rpc::{CallError, Connection};

/// Pages read of one list at most (a server whose cursor never ends is cut off there).
const MAX_PAGES: usize = 100;

/// What a server offers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) tools: Vec<ToolInfo>,
    pub(crate) resources: Vec<ResourceInfo>,
    pub(crate) prompts: Vec<PromptInfo>,
}

/// Why a session could not be set up.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ClientError {
    #[error("initialize failed: {0}")]
    Initialize(CallError),
    #[error(
        "the server speaks MCP revision {0}, which this client does not (it speaks {supported})",
        supported = SUPPORTED.join(", ")
    )]
    Version(String),
    #[error("{method} failed: {error}")]
    List {
        method: &'static str,
        error: CallError,
    },
}

/// Runs the handshake: `initialize`, then `notifications/initialized`.
pub(crate) async fn initialize(
    connection: &Connection,
    roots: bool,
) -> Result<InitializeResult, ClientError> {
    let params = InitializeParams {
        protocol_version: LATEST,
        capabilities: ClientCapabilities {
            roots: roots.then_some(RootsCapability {
                list_changed: false,
            }),
        },
        client_info: Implementation {
            name: "dsh".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
    };
    let result: InitializeResult = connection
        .request("initialize", params, std::future::pending())
        .await
        .map_err(ClientError::Initialize)?;
    if !SUPPORTED.contains(&result.protocol_version.as_str()) {
        return Err(ClientError::Version(result.protocol_version));
    }
    connection.transport().negotiated(&result.protocol_version);
    connection
        .notify("notifications/initialized", Empty {})
        .await
        .map_err(ClientError::Initialize)?;
    connection.transport().ready();
    Ok(result)
}

/// Every item of list `method`, page by page.
pub(crate) async fn list<T: for<'de> Deserialize<'de>>(
    connection: &Connection,
    method: &'static str,
) -> Result<Vec<T>, ClientError> {
    let mut items = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let page: Page<T> = connection
            .request(method, ListParams { cursor }, std::future::pending())
            .await
            .map_err(|error| ClientError::List { method, error })?;
        items.extend(page.items);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => break,
        }
    }
    Ok(items)
}

/// The whole catalog of a server with these capabilities.
pub(crate) async fn catalog(
    connection: &Arc<Connection>,
    init: &InitializeResult,
) -> Result<Catalog, ClientError> {
    let capabilities = &init.capabilities;
    Ok(Catalog {
        tools: match capabilities.tools {
            Some(_) => list(connection, "tools/list").await?,
            None => Vec::new(),
        },
        resources: match capabilities.resources {
            Some(_) => list(connection, "resources/list").await?,
            None => Vec::new(),
        },
        prompts: match capabilities.prompts {
            Some(_) => list(connection, "prompts/list").await?,
            None => Vec::new(),
        },
    })
}
