//! What the layout and the seams promise, counted over the product code (the non-test code of
//! `plugins/`, `plugin-api/` and `host/`): service look-ups no declaration names (`services`),
//! import circles between modules of different folders (`circles`) and event types compared as
//! strings outside the vocabulary crate, all gated at 0, and JSON members read by key, reported
//! per crate, the named places apart, under a ceiling on the total that only comes down.

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
    /// Per product file, JSON members read by key.
    by_key: BTreeMap<String, usize>,
    /// The same, in the places [`OPEN_BY_NATURE`] names.
    by_key_open: BTreeMap<String, usize>,
}

/// JSON read by key in product code in all, the places below included; the count may only go
/// down.
const BY_KEY_CEILING: usize = 22;

/// Where JSON is read by key because the data is open by nature, or because this is the
/// boundary where outside data is checked member by member (each with its own message) before
/// anything typed exists. Counted apart, and named, so the list stays short and argued.
const OPEN_BY_NATURE: [(&str, &str); 2] = [
    ("host/loader/", "config rows"),
    (
        "host/libs/session-jsonl/src/chunks.rs",
        "the chunk packer: which logged deltas a row can hold, keeping their members by reference",
    ),
];

fn open_by_nature(path: &str) -> bool {
    OPEN_BY_NATURE
        .iter()
        .any(|(prefix, _)| path.starts_with(prefix))
}

/// Whether `path` is product code: a crate under `plugins/`, `plugin-api/` or `host/`, not a
/// test file.
fn is_product(path: &str) -> bool {
    ["plugins/", "plugin-api/", "host/"]
        .iter()
        .any(|top| path.starts_with(top))
        && !is_test_file(path)
        && !path.contains("/examples/")
        && !path.contains("/benches/")
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

/// Members read by key in `text`: `.get("name")`, `.get_mut("name")`, `["name"]` and
/// `.pointer("/a/b")`.
fn by_key_reads(text: &str) -> usize {
    let mut count = 0;
    for opener in [".get(\"", ".get_mut(\"", "[\"", ".pointer(\""] {
        for (at, _) in text.match_indices(opener) {
            let rest = &text[at + opener.len()..];
            let Some(close) = rest.find('"') else {
                continue;
            };
            let key = &rest[..close];
            let closes = if opener == "[\"" { "]" } else { ")" };
            let is_key = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/' || c == '-');
            // `["a"]` is an index only after an expression (`v["a"]`, `f()["a"]`), not an array
            // literal (`vec!["a"]`, `&["a"]`, `"required": ["a"]`).
            let indexes = opener != "[\""
                || text[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ')' | ']'));
            if is_key && indexes && rest[close + 1..].starts_with(closes) {
                count += 1;
            }
        }
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
        let counts: Vec<(String, usize)> = product
            .iter()
            .map(|(path, text)| (path.clone(), by_key_reads(text)))
            .filter(|(_, count)| *count > 0)
            .collect();
        let (open, by_key): (Vec<_>, Vec<_>) = counts
            .into_iter()
            .partition(|(path, _)| open_by_nature(path));
        Self {
            by_key: by_key.into_iter().collect(),
            by_key_open: open.into_iter().collect(),
            undeclared: services::undeclared(&product),
            circles_across,
            circles_inside: inside.len(),
            event_strings,
        }
    }

    /// JSON read by key in product code, the named places included: what the ceiling bounds.
    fn by_key_total(&self) -> usize {
        self.by_key.values().chain(self.by_key_open.values()).sum()
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
        let (total, crates) = per_crate(&self.event_strings);
        let _ = writeln!(
            out,
            "lint: event types compared as strings outside the vocabulary crate: {total} ({crates})"
        );
        let (outside, crates) = per_crate(&self.by_key);
        let total = self.by_key_total();
        let _ = writeln!(
            out,
            "lint: JSON read by key in product code: {total} in all (ceiling {BY_KEY_CEILING}); {outside} outside the named places ({crates})"
        );
        let (open, crates) = per_crate(&self.by_key_open);
        let _ = writeln!(
            out,
            "lint:   and where data is open by nature or checked at the boundary: {open} ({crates})"
        );
        out
    }

    /// Fails on an undeclared look-up, a circle across folders, an event type compared as a
    /// string or JSON read by key past its ceiling.
    pub(super) fn gate(&self) -> Result<()> {
        let (compared, crates) = per_crate(&self.event_strings);
        if compared > 0 {
            bail!(
                "event types compared as strings outside the vocabulary crate: {compared} ({crates}); compare against dsh_protocol::kinds"
            );
        }
        let by_key = self.by_key_total();
        if by_key > BY_KEY_CEILING {
            let (_, outside) = per_crate(&self.by_key);
            let (_, open) = per_crate(&self.by_key_open);
            bail!(
                "JSON read by key in product code: {by_key} in all, past the ceiling of {BY_KEY_CEILING} (outside the named places: {outside}; in them: {open}); read the vocabulary's types instead"
            );
        }
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

/// The total of `counts` (per file) and its split per crate, largest first.
fn per_crate(counts: &BTreeMap<String, usize>) -> (usize, String) {
    let mut crates: BTreeMap<String, usize> = BTreeMap::new();
    for (path, count) in counts {
        let krate = path.split("/src/").next().unwrap_or(path).to_owned();
        *crates.entry(krate).or_default() += count;
    }
    let mut crates: Vec<(String, usize)> = crates.into_iter().collect();
    crates.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total = crates.iter().map(|(_, count)| count).sum();
    let named: Vec<String> = crates
        .iter()
        .map(|(krate, count)| format!("{krate} {count}"))
        .collect();
    (total, named.join(", "))
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

    #[test]
    fn members_read_by_key_are_counted() {
        let text = r#"data.get("turn"); v["callId"]; m.get_mut("x"); d.pointer("/message/content");
map.get(&key); v[0]; format!("[\"{x}\"]"); s.get("not a key"); vec!["a"]; &["b"];
f()["c"]; "required": ["d"]"#;
        assert_eq!(by_key_reads(text), 5);
    }

    #[test]
    fn the_ceiling_bounds_the_total_named_places_included() {
        let mut house = House::default();
        house.by_key.insert("plugins/a/src/lib.rs".into(), 1);
        house
            .by_key_open
            .insert("host/loader/src/rows.rs".into(), BY_KEY_CEILING);
        let error = house.gate().unwrap_err().to_string();
        assert!(
            error.contains(&format!("{} in all", BY_KEY_CEILING + 1)),
            "{error}"
        );
        assert!(error.contains("in them: host/loader"), "{error}");
        house.by_key.clear();
        assert!(house.gate().is_ok());
        assert!(house.render().contains(&format!(
            "JSON read by key in product code: {BY_KEY_CEILING} in all (ceiling {BY_KEY_CEILING}); 0 outside"
        )));
    }
}
