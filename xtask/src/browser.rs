//! What the browser tests need, installed where it is missing: Debian's `chromium` (through
//! apt, as root, see `apt`) and playwright-core (through npm, into `tests/web/node_modules` from its lock
//! file). Where a registry cannot be reached or the tools are absent, the answer is the reason,
//! which the tests print as they skip.

use std::path::Path;

/// The browser the tests drive.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// `None` when everything is in place; otherwise why the browser tests must be skipped.
pub(crate) fn prepare(root: &Path) -> Option<String> {
    let scripts = root.join("tests/web");
    let playwright = scripts.join("node_modules/playwright-core");
    if let Err(reason) = crate::apt::npm_ci_where_missing(&scripts, playwright.is_dir()) {
        return Some(format!("playwright-core could not be installed: {reason}"));
    }
    crate::apt::ensure(CHROMIUM, "chromium").err()
}
