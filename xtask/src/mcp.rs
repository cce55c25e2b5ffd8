//! What the MCP tests need: the reference servers (`@modelcontextprotocol/server-everything`
//! and `server-filesystem`), installed through npm into `tests/mcp/node_modules` from its lock
//! file where they are missing. Where npm or the registry cannot be had, the answer is the
//! reason, which the tests print as they skip.

use std::path::Path;

/// `None` when the servers are in place; otherwise why the MCP tests must be skipped.
pub(crate) fn prepare(root: &Path) -> Option<String> {
    let dir = root.join("tests/mcp");
    let everything = dir.join("node_modules/@modelcontextprotocol/server-everything");
    let filesystem = dir.join("node_modules/@modelcontextprotocol/server-filesystem");
    crate::apt::npm_ci_where_missing(&dir, everything.is_dir() && filesystem.is_dir())
        .err()
        .map(|reason| format!("the reference MCP servers could not be installed: {reason}"))
}
