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

/// A static asset: its content type and bytes.
pub(crate) fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/assets/app.js" => Some(("text/javascript; charset=utf-8", APP_JS)),
        "/assets/render.js" => Some(("text/javascript; charset=utf-8", RENDER_JS)),
        "/assets/dom.js" => Some(("text/javascript; charset=utf-8", DOM_JS)),
        "/assets/cards.js" => Some(("text/javascript; charset=utf-8", CARDS_JS)),
        "/assets/start-page.js" => Some(("text/javascript; charset=utf-8", START_PAGE_JS)),
        "/assets/mentions.js" => Some(("text/javascript; charset=utf-8", MENTIONS_JS)),
        "/assets/menu.js" => Some(("text/javascript; charset=utf-8", MENU_JS)),
        "/assets/drop.js" => Some(("text/javascript; charset=utf-8", DROP_JS)),
        "/assets/core.js" => Some(("text/javascript; charset=utf-8", CORE_JS)),
        "/assets/settings.js" => Some(("text/javascript; charset=utf-8", SETTINGS_JS)),
        "/assets/sidebar.js" => Some(("text/javascript; charset=utf-8", SIDEBAR_JS)),
        "/assets/composer.js" => Some(("text/javascript; charset=utf-8", COMPOSER_JS)),
        "/assets/trajectory.js" => Some(("text/javascript; charset=utf-8", TRAJECTORY_JS)),
        "/assets/app.css" => Some(("text/css; charset=utf-8", APP_CSS)),
        "/assets/icon.svg" => Some(("image/svg+xml", ICON)),
        _ => None,
    }
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
