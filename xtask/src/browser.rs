//! What the browser tests need, installed where it is missing: Debian's `chromium` and a CJK
//! font (through apt, as root, see `apt`) and playwright-core (through npm, into `tests/web/node_modules` from its lock
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
    if let Some(reason) = crate::apt::ensure(CHROMIUM, "chromium").err() {
        return Some(reason);
    }
    // Without a CJK font the screenshots show Chinese, Japanese and Korean text as boxes (the
    // page is right, what a person would see of it is not); a missing font only warns.
    if let Err(reason) = crate::apt::ensure(CJK_FONT, "fonts-wqy-microhei") {
        eprintln!("xtask: warning: {reason}; screenshots show CJK text as boxes");
    }
    None
}

/// A font with CJK glyphs, for the screenshots.
const CJK_FONT: &str = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc";
