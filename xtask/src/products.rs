//! What the product-subagent tests need: the agent products themselves (Codex CLI and Claude
//! Code, at the versions in `tests/products/package.json`), installed through npm into
//! `tests/products/node_modules` from its lock file where they are missing. Their native
//! binaries come in platform packages, so no install script has to run. Where npm or the
//! registry cannot be had, the answer is the reason, which the tests print as they skip.

use std::path::Path;

/// `None` when both products are in place; otherwise why their tests must be skipped.
pub(crate) fn prepare(root: &Path) -> Option<String> {
    let dir = root.join("tests/products");
    let codex = dir.join("node_modules/@openai/codex/bin/codex.js");
    let claude = dir.join("node_modules/@anthropic-ai/claude-code/package.json");
    crate::apt::npm_ci_where_missing(&dir, codex.is_file() && claude.is_file())
        .err()
        .map(|reason| {
            format!("the agent products (Codex CLI, Claude Code) could not be installed: {reason}")
        })
}
