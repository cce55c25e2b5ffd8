//! The browser app's files, compiled into this library (so a new library reloads the UI with
//! the server), and the page's boot data. The client is our own plain ES module and CSS: no
//! third-party code is committed or fetched, and the running product needs no Node.

use serde::Serialize;

const INDEX: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");
const RENDER_JS: &str = include_str!("../assets/render.js");
const DOM_JS: &str = include_str!("../assets/dom.js");
const CARDS_JS: &str = include_str!("../assets/cards.js");
const START_PAGE_JS: &str = include_str!("../assets/start-page.js");
const MENTIONS_JS: &str = include_str!("../assets/mentions.js");
const MENU_JS: &str = include_str!("../assets/menu.js");
const DROP_JS: &str = include_str!("../assets/drop.js");
const CORE_JS: &str = include_str!("../assets/core.js");
const SETTINGS_JS: &str = include_str!("../assets/settings.js");
const SIDEBAR_JS: &str = include_str!("../assets/sidebar.js");
const COMPOSER_JS: &str = include_str!("../assets/composer.js");
const TRAJECTORY_JS: &str = include_str!("../assets/trajectory.js");
const GOAL_JS: &str = include_str!("../assets/goal.js");
const UNDO_JS: &str = include_str!("../assets/undo.js");
const PRESETS_JS: &str = include_str!("../assets/presets.js");
const PROVIDERS_JS: &str = include_str!("../assets/providers.js");
const PLAN_JS: &str = include_str!("../assets/plan.js");
const ATTACHMENTS_JS: &str = include_str!("../assets/attachments.js");
const ATTACHMENTS_CSS: &str = include_str!("../assets/attachments.css");
const ICON: &str = include_str!("../assets/icon.svg");
const SIGN_IN: &str = include_str!("../assets/sign-in.html");

/// What the page reads before its first call.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Boot<'a> {
    pub(crate) csrf: &'a str,
    pub(crate) boot_id: &'a str,
    pub(crate) version: &'a str,
    /// What `host.describe` answers, so the first paint needs one call fewer.
    pub(crate) host: Option<dsh_client_protocol::HostDescription>,
}

/// The app page with `boot` in a JSON data block (not a script: the CSP allows no inline
/// code, and `<` is escaped so the data cannot close its element).
pub(crate) fn index(boot: &Boot<'_>) -> String {
    let data = serde_json::to_string(boot)
        .unwrap_or_else(|_| "{}".to_owned())
        .replace('<', "\\u003c");
    INDEX.replace("{{boot}}", &data)
}

/// The page a browser without the cookie gets.
pub(crate) fn sign_in() -> &'static str {
    SIGN_IN
}

/// A static asset: its content type, its bytes and its entity tag.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asset {
    pub(crate) kind: &'static str,
    pub(crate) text: &'static str,
    /// A hash of the bytes: a browser that holds this version revalidates it with a 304
    /// instead of fetching (and compiling) it again; a new library changes it.
    pub(crate) etag: u64,
}

/// FNV-1a over `text`, at compile time.
const fn fnv(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut at = 0;
    while at < bytes.len() {
        hash ^= bytes[at] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        at += 1;
    }
    hash
}

const JS: &str = "text/javascript; charset=utf-8";

macro_rules! assets {
    ($($path:literal => ($kind:expr, $text:ident)),* $(,)?) => {
        /// The asset at `path`.
        pub(crate) fn asset(path: &str) -> Option<Asset> {
            match path {
                $($path => {
                    const ETAG: u64 = fnv($text);
                    Some(Asset { kind: $kind, text: $text, etag: ETAG })
                })*
                _ => None,
            }
        }
    };
}

assets! {
    "/assets/app.js" => (JS, APP_JS),
    "/assets/render.js" => (JS, RENDER_JS),
    "/assets/dom.js" => (JS, DOM_JS),
    "/assets/cards.js" => (JS, CARDS_JS),
    "/assets/start-page.js" => (JS, START_PAGE_JS),
    "/assets/mentions.js" => (JS, MENTIONS_JS),
    "/assets/menu.js" => (JS, MENU_JS),
    "/assets/drop.js" => (JS, DROP_JS),
    "/assets/core.js" => (JS, CORE_JS),
    "/assets/settings.js" => (JS, SETTINGS_JS),
    "/assets/sidebar.js" => (JS, SIDEBAR_JS),
    "/assets/composer.js" => (JS, COMPOSER_JS),
    "/assets/trajectory.js" => (JS, TRAJECTORY_JS),
    "/assets/goal.js" => (JS, GOAL_JS),
    "/assets/undo.js" => (JS, UNDO_JS),
    "/assets/presets.js" => (JS, PRESETS_JS),
    "/assets/providers.js" => (JS, PROVIDERS_JS),
    "/assets/plan.js" => (JS, PLAN_JS),
    "/assets/attachments.js" => (JS, ATTACHMENTS_JS),
    "/assets/attachments.css" => ("text/css; charset=utf-8", ATTACHMENTS_CSS),
    "/assets/app.css" => ("text/css; charset=utf-8", APP_CSS),
    "/assets/icon.svg" => ("image/svg+xml", ICON),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_data_cannot_close_its_element() {
        let page = index(&Boot {
            csrf: "</script><script>alert(1)</script>",
            boot_id: "b",
            version: "0",
            host: None,
        });
        assert!(!page.contains("</script><script>alert"), "{page}");
        assert!(page.contains("\\u003c/script>"));
    }
}
