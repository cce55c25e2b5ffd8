//! What the layout and the seams promise, counted over the product code (the non-test code of
//! `plugins/`, `plugin-api/` and `host/`): service look-ups no declaration names (`services`),
//! import circles between modules of different folders (`circles`), both gated at 0, and event
//! types compared as strings outside the vocabulary crate, reported per crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::{Result, bail};

use super::scan::Source;
use super::{circles, is_test_file, services};

/// The findings over the whole workspace.
#[derive(Debug, Default)]
pub(super) struct House {
    undeclared: BTreeMap<String, BTreeSet<String>>,
    circles_across: Vec<Vec<String>>,
    circles_inside: usize,
    /// Per product file, event types compared as strings.
    event_strings: BTreeMap<String, usize>,
}

/// Whether `path` is product code: a crate under `plugins/`, `plugin-api/` or `host/`, not a
/// test file.
fn is_product(path: &str) -> bool {
    ["plugins/", "plugin-api/", "host/"]
        .iter()
        .any(|top| path.starts_with(top))
        && !is_test_file(path)
}

/// `text` without the lines its test code takes.
fn without_tests(text: &str) -> String {
    let tests = Source::new(text).test_lines();
    text.lines()
        .enumerate()
        .filter(|(index, _)| !tests.iter().any(|range| range.contains(&(index + 1))))
        .map(|(_, line)| line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `literal` (without its quotes) looks like an event type (`turn/end`, `agent/inbox/spliced`).
fn is_event_type(literal: &str) -> bool {
    let mut parts = literal.split('/');
    let first = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    let word = |part: &str| {
        !part.is_empty()
            && part.starts_with(|c: char| c.is_ascii_lowercase())
            && part.chars().all(|c| c.is_ascii_lowercase() || c == '-')
    };
    word(first) && !rest.is_empty() && rest.iter().all(|part| word(part))
}

/// String literals shaped like event types that `text` compares: after `==` or `!=`, or as a
/// `match` pattern (followed by `=>` or `|`).
fn event_comparisons(text: &str) -> usize {
    let mut count = 0;
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else {
            break;
        };
        let literal = &after[..close];
        let before = rest[..open].trim_end();
        let next = after[close + 1..].trim_start();
        let compared = before.ends_with("==")
            || before.ends_with("!=")
            || next.starts_with("=>")
            || next.starts_with('|');
        if compared && is_event_type(literal) {
            count += 1;
        }
        rest = &after[close + 1..];
    }
    count
}

impl House {
    pub(super) fn of(files: &[(String, String)]) -> Self {
        let product: Vec<(String, String)> = files
            .iter()
            .filter(|(path, _)| is_product(path))
            .map(|(path, text)| (path.clone(), without_tests(text)))
            .collect();
        let (circles_across, inside) = circles::of(&product);
        let event_strings = product
            .iter()
            .filter(|(path, _)| !path.starts_with("plugin-api/protocol/"))
            .map(|(path, text)| (path.clone(), event_comparisons(text)))
            .filter(|(_, count)| *count > 0)
            .collect();
        Self {
            undeclared: services::undeclared(&product),
            circles_across,
            circles_inside: inside.len(),
            event_strings,
        }
    }

    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        let undeclared: usize = self.undeclared.values().map(BTreeSet::len).sum();
        let _ = writeln!(
            out,
            "lint: undeclared service look-ups in plugins: {undeclared}"
        );
        for (plugin, keys) in &self.undeclared {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let _ = writeln!(out, "lint:   {plugin}: {}", keys.join(", "));
        }
        let _ = writeln!(
            out,
            "lint: import circles across folders: {} (inside one folder: {})",
            self.circles_across.len(),
            self.circles_inside
        );
        for circle in &self.circles_across {
            let _ = writeln!(out, "lint:   {}", circle.join(" <-> "));
        }
        let total: usize = self.event_strings.values().sum();
        let mut per_crate: BTreeMap<String, usize> = BTreeMap::new();
        for (path, count) in &self.event_strings {
            let krate = path.split("/src/").next().unwrap_or(path).to_owned();
            *per_crate.entry(krate).or_default() += count;
        }
        let crates: Vec<String> = per_crate
            .iter()
            .map(|(krate, count)| format!("{krate} {count}"))
            .collect();
        let _ = writeln!(
            out,
            "lint: event types compared as strings outside the vocabulary crate: {total} ({})",
            crates.join(", ")
        );
        out
    }

    /// Fails on an undeclared look-up or a circle across folders.
    pub(super) fn gate(&self) -> Result<()> {
        if !self.undeclared.is_empty() {
            let named: Vec<String> = self
                .undeclared
                .iter()
                .map(|(plugin, keys)| {
                    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                    format!("{plugin} ({})", keys.join(", "))
                })
                .collect();
            bail!(
                "services looked up that no INJECT or OPTIONAL declares: {}",
                named.join("; ")
            );
        }
        if let Some(circle) = self.circles_across.first() {
            bail!(
                "an import circle runs across folders: {} (and {} more)",
                circle.join(" <-> "),
                self.circles_across.len() - 1
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_compared_as_strings_are_counted() {
        let text = r#"if kind == "turn/end" { }
match event.kind.as_str() { "step/start" | "agent/inbox/spliced" => {} _ => {} }
let path = "src/lib.rs"; let url = "a/b"; log("turn/end");"#;
        assert_eq!(event_comparisons(text), 3);
        assert!(!is_event_type("src/lib.rs"));
        assert!(is_event_type("agent/inbox/spliced"));
    }
}
