//! Undeclared service look-ups: in each plugin crate (`plugins/<name>/src`, test code aside),
//! the service keys its code asks the context for (`ctx.get::<S>(KEY)`, `ctx.inject::<S>(KEY)`)
//! that none of its plugins declares in `INJECT`, `OPTIONAL` or `PROVIDES`. A reader (and
//! `dsh-host check`) must see what a plugin uses from its declarations alone; the host refuses
//! an undeclared look-up at run time in debug builds, which also catches the ones a seam's
//! helper makes on the plugin's behalf, where this count cannot look.

use std::collections::{BTreeMap, BTreeSet};

/// The plugin crate of a product source file (`plugins/web/src/api.rs` is `web`); a plugin's
/// logic crate (`plugins/<name>/core`) declares nothing and is left out.
fn plugin_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("plugins/")?;
    let (name, rest) = rest.split_once('/')?;
    rest.starts_with("src/").then_some(name)
}

/// The last path segment or string literal of each argument in `list` (`[A, b::C, "d"]`).
fn keys_in(list: &str) -> Vec<String> {
    list.split(',')
        .map(|item| item.trim().trim_matches('"'))
        .map(|item| item.rsplit("::").next().unwrap_or(item).trim().to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

/// The keys the `INJECT`, `OPTIONAL` and `PROVIDES` constants of `text` name.
fn declared(text: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for constant in ["const INJECT", "const OPTIONAL", "const PROVIDES"] {
        for (at, _) in text.match_indices(constant) {
            let rest = &text[at..];
            // `= &[` on the line, or `=` ending it and `&[` on the next (as rustfmt breaks a
            // long one).
            let Some(equals) = rest.find('=') else {
                continue;
            };
            let Some(body) = rest[equals + 1..].trim_start().strip_prefix("&[") else {
                continue;
            };
            if let Some(close) = body.find(']') {
                keys.extend(keys_in(&body[..close]));
            }
        }
    }
    keys
}

/// The keys `text` looks up: the argument of `.get::<..>(..)` and `.inject::<..>(..)`.
fn looked_up(text: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for call in [".get::<", ".inject::<"] {
        for (at, _) in text.match_indices(call) {
            let rest = &text[at + call.len()..];
            let Some(open) = rest.find(">(") else {
                continue;
            };
            let argument = &rest[open + 2..];
            if let Some(close) = argument.find(')') {
                keys.extend(keys_in(&argument[..close]));
            }
        }
    }
    keys
}

/// Helpers of the seams and kits that look a service up on the caller's behalf, with the key:
/// a plugin that calls one uses that service as surely as one that calls `ctx.get`.
const HELPERS: [(&str, &str); 5] = [
    ("open_live(", "SESSIONS_SERVICE"),
    ("append_or_report(", "SESSIONS_SERVICE"),
    ("is_trusted(", "TRUST_SERVICE"),
    ("dsh_visible_check::", "SESSIONS_SERVICE"),
    ("dsh_path_follow::", "FS_WATCH_SERVICE"),
];

/// The keys the helpers `text` calls look up.
fn looked_up_by_helpers(text: &str) -> Vec<String> {
    HELPERS
        .iter()
        .filter(|(call, _)| text.contains(call))
        .map(|(_, key)| (*key).to_owned())
        .collect()
}

/// Per plugin crate, the keys it looks up that none of its plugins declares. `files` are the
/// product files (workspace-relative path, text with test code blanked out).
pub(crate) fn undeclared(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut declared_by: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut used_by: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in files {
        let Some(plugin) = plugin_of(path) else {
            continue;
        };
        declared_by
            .entry(plugin)
            .or_default()
            .extend(declared(text));
        let used = used_by.entry(plugin).or_default();
        used.extend(looked_up(text));
        used.extend(looked_up_by_helpers(text));
    }
    used_by
        .into_iter()
        .filter_map(|(plugin, used)| {
            let declared = declared_by.get(plugin).cloned().unwrap_or_default();
            let missing: BTreeSet<String> = used.difference(&declared).cloned().collect();
            (!missing.is_empty()).then(|| (plugin.to_owned(), missing))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_up_that_no_plugin_of_the_crate_declares_is_named() {
        let files = [
            (
                "plugins/web/src/lib.rs".to_owned(),
                "const INJECT: &'static [&'static str] = &[CMDLINE_SERVICE, io::HOST_SERVICE];\n\
                 const OPTIONAL: &'static [&'static str] =\n        &[dsh_x::AGENTS_SERVICE];"
                    .to_owned(),
            ),
            (
                "plugins/web/src/api.rs".to_owned(),
                "ctx.get::<AgentsService>(AGENTS_SERVICE); ctx.get::<L>(dsh_llm_seam::LLM_SERVICE);\
                 ctx.inject::<H>(HOST_SERVICE); let live = open_live(&ctx, id);"
                    .to_owned(),
            ),
            (
                "plugins/tools/core/src/lib.rs".to_owned(),
                "ctx.get::<X>(ANYTHING);".to_owned(),
            ),
        ];
        let found = undeclared(&files);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found["web"].iter().collect::<Vec<_>>(),
            ["LLM_SERVICE", "SESSIONS_SERVICE"]
        );
    }
}
