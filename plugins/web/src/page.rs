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
/// code, and `<` is escaped so the data cannot close its element). Its files are named under
/// this build's version (`/assets/<version>/app.js`), and the modules' relative imports resolve
/// under the same prefix, so a browser keeps them all without asking again.
pub(crate) fn index(boot: &Boot<'_>) -> String {
    static VERSIONED: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let page =
        VERSIONED.get_or_init(|| INDEX.replace("\"/assets/", &format!("\"/assets/{}/", version())));
    let data = serde_json::to_string(boot)
        .unwrap_or_else(|_| "{}".to_owned())
        .replace('<', "\\u003c");
    page.replace("{{boot}}", &data)
}

/// The page a browser without the cookie gets.
pub(crate) fn sign_in() -> &'static str {
    SIGN_IN
}

/// This build of the app's files as one name: a hash over all of them, so a new library (any
/// file changed) names its files anew and a browser never runs a module of another build.
pub(crate) fn version() -> String {
    format!("{VERSION:016x}")
}

const VERSION: u64 = fnv_all(ALL);

/// How the browser may keep an asset it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Freshness {
    /// Asked under this build's version: the same path always holds the same bytes.
    Immutable,
    /// Asked by its plain name, or under another build's version (a tab opened before a
    /// reload): revalidated on every use.
    Revalidate,
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

/// FNV-1a over every text in turn.
const fn fnv_all(texts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut index = 0;
    while index < texts.len() {
        hash ^= fnv(texts[index]);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        index += 1;
    }
    hash
}

const JS: &str = "text/javascript; charset=utf-8";

macro_rules! assets {
    ($($path:literal => ($kind:expr, $text:ident)),* $(,)?) => {
        /// Every asset's bytes, for the build's version.
        const ALL: &[&str] = &[$($text),*];
        #[cfg(test)]
        const ALL_PATHS: &[&str] = &[$($path),*];

        /// The asset at `path` (`/assets/NAME` or `/assets/VERSION/NAME`), and how it may be
        /// kept.
        pub(crate) fn asset(path: &str) -> Option<(Asset, Freshness)> {
            let (plain, freshness) = unversioned(path);
            let found = match plain.as_str() {
                $($path => {
                    const ETAG: u64 = fnv($text);
                    Asset { kind: $kind, text: $text, etag: ETAG }
                })*
                _ => return None,
            };
            Some((found, freshness))
        }
    };
}

/// `path` without its version segment, and whether that segment named this build.
fn unversioned(path: &str) -> (String, Freshness) {
    let rest = path.strip_prefix("/assets/").unwrap_or(path);
    match rest.split_once('/') {
        Some((segment, name))
            if segment.len() == 16 && segment.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            let freshness = match u64::from_str_radix(segment, 16) == Ok(VERSION) {
                true => Freshness::Immutable,
                false => Freshness::Revalidate,
            };
            (format!("/assets/{name}"), freshness)
        }
        _ => (path.to_owned(), Freshness::Revalidate),
    }
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

    /// A module not named for preloading is found only when its importer has loaded, one
    /// round trip later, on a cold open.
    #[test]
    fn every_module_but_the_entry_is_preloaded() {
        let modules = ALL_PATHS.iter().filter(|path| path.ends_with(".js"));
        for path in modules.filter(|path| **path != "/assets/app.js") {
            let preload = format!("<link rel=\"modulepreload\" href=\"{path}\">");
            assert!(
                INDEX.contains(&preload),
                "index.html does not preload {path}"
            );
        }
    }

    #[test]
    fn the_page_names_its_files_under_the_builds_version() {
        let page = index(&Boot {
            csrf: "c",
            boot_id: "b",
            version: "0",
            host: None,
        });
        let prefix = format!("/assets/{}/", version());
        assert!(page.contains(&format!("src=\"{prefix}app.js\"")), "{page}");
        assert!(
            page.contains(&format!("href=\"{prefix}app.css\"")),
            "{page}"
        );
        assert!(!page.contains("\"/assets/app.js"), "{page}");
        let (found, freshness) = asset(&format!("{prefix}core.js")).expect("core.js");
        assert_eq!((found.text, freshness), (CORE_JS, Freshness::Immutable));
        let (found, freshness) = asset("/assets/0123456789abcdef/core.js").expect("stale tab");
        assert_eq!((found.text, freshness), (CORE_JS, Freshness::Revalidate));
        assert_eq!(
            asset("/assets/core.js").map(|(_, f)| f),
            Some(Freshness::Revalidate)
        );
        assert!(asset(&format!("{prefix}nothing.js")).is_none());
        assert!(asset(&format!("{prefix}../index.html")).is_none());
    }
}
