//! What the client tests need beyond the workspace: the ACP clients nobody here wrote
//! (`@agentclientprotocol/sdk` and `acpx`, at the versions in `tests/acp/package.json`, through
//! npm into `tests/acp/node_modules` from its lock file) and Debian's tmux, the real terminal
//! the terminal UI's tests drive (through apt, as root). Where either cannot be had, the answer
//! is the reason, which the tests print as they skip.

use std::path::Path;

/// `None` when the ACP clients are in place; otherwise why their tests must be skipped.
pub(crate) fn prepare_acp(root: &Path) -> Option<String> {
    let dir = root.join("tests/acp");
    let sdk = dir.join("node_modules/@agentclientprotocol/sdk/package.json");
    let acpx = dir.join("node_modules/acpx/package.json");
    crate::apt::npm_ci_where_missing(&dir, sdk.is_file() && acpx.is_file())
        .err()
        .map(|reason| {
            format!("the ACP clients (acpx, the ACP SDK) could not be installed: {reason}")
        })
}

/// Installs tmux where it is missing; the tests say why they skip when it still is.
pub(crate) fn ensure_tmux() {
    if let Err(reason) = crate::apt::ensure("/usr/bin/tmux", "tmux") {
        println!("xtask: the terminal UI's tests will be skipped: {reason}");
    }
}
