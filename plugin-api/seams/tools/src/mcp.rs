//! The `mcp_scopes` service: MCP servers a client brings for one session (an ACP editor's
//! `mcpServers`), run by the `mcp` plugin with their tools registered in a tool scope the
//! caller names and puts in that session's agent's scope chain, so only that session (and its
//! children) is offered them. A set is owned by one agent: it stops when that agent is
//! disposed, or when the caller unmounts it.

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RResult, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{Json, SeamError};

/// Service key of the per-session MCP servers (provided by the `mcp` row).
pub const MCP_SCOPES_SERVICE: &str = "mcp_scopes";

/// One server a client asks for (the vocabulary's shape, which the client protocol takes).
pub use dsh_protocol::McpServerSpec;

/// How one server of a mounted set came up on its first attempt.
#[derive(Debug, Clone, PartialEq, Eq, dsh_plugin_api::Serialize, dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub struct ServerStatus {
    pub name: String,
    /// `None`: connected, its tools registered; else why it is not (it keeps being
    /// restarted, with a growing delay, while the set is mounted).
    pub error: Option<String>,
    /// The names its tools are offered under (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
}

/// What a mount answers: each server's status, in the order given, or the refusal.
pub type Mounted = FfiFuture<RResult<Json<Vec<ServerStatus>>, SeamError>>;

/// The `mcp_scopes` service.
#[sabi_trait]
pub trait McpScopes: Send + Sync {
    /// Starts `servers` (working in `cwd`) with their tools in tool scope `scope`, owned by
    /// agent `owner`, and waits (bounded by the row's startup timeout) until each made its
    /// first attempt. Refuses `Invalid` (an empty scope or owner, a relative `cwd`, an entry
    /// that does not read, two servers of one name) and `Conflict` (the scope has a set).
    /// A server that does not start is no refusal: its status says why.
    fn mount(
        &self,
        scope: RString,
        owner: RString,
        cwd: RString,
        servers: Json<Vec<McpServerSpec>>,
    ) -> Mounted;
    /// Stops the set of `scope` (its tools go at once). `NotFound` when it has none.
    fn unmount(&self, scope: RString) -> RResult<(), SeamError>;
}
pub type McpScopesService = McpScopes_TO<'static, RBox<()>>;
