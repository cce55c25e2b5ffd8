//! An MCP server a client brings for one session (an editor's `mcpServers`, a client's
//! `session.create`): the shape the client protocol takes it in and the `mcp_scopes` seam runs
//! it from.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One server: a process over stdio, a Streamable HTTP endpoint, or the event stream of a
/// legacy HTTP+SSE one (MCP 2024-11-05).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum McpServerSpec {
    Stdio {
        name: String,
        command: String,
        #[serde(default)]
        args: Vec<String>,
        /// Variables set for the process, in order (the sandbox still removes secret-looking
        /// ones it inherits, not these).
        #[serde(default)]
        env: Vec<(String, String)>,
    },
    Http {
        name: String,
        url: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
    Sse {
        name: String,
        url: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
}

impl McpServerSpec {
    pub fn name(&self) -> &str {
        match self {
            Self::Stdio { name, .. } | Self::Http { name, .. } | Self::Sse { name, .. } => name,
        }
    }
}
