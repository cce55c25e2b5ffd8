//! `cargo xtask lint`: counts of what the codebase wants less of, read from the workspace's Rust
//! sources (`target/` and hidden directories skipped, symlinks not followed, so nothing outside
//! the workspace root is read). The counts are reported, not gated, with three exceptions that
//! fail the step: an `unsafe` block in `plugin-api/src` or `host/src` (library loading,
//! `host/src/library/`, aside) without a `// SAFETY:` comment on one of the three lines above
//! it; a `Result<_, String>` in product code; and a seam method answering a bare string error
//! (`RResult<_, RString>` in `plugin-api/seams/*` or `plugin-api/src/io/`), since a caller can
//! branch on neither.
//!
//! Plugin code is the non-test code of the crates plugins are made of (`plugins/<name>` and
//! `plugins/<name>/core`, `plugin-api/protocol`, `plugin-api/seams/<name>`,
//! `plugin-api/kit/<name>`, `host/libs/<name>`); product code is that and the non-test code of
//! `plugin-api` itself and of the host's crates (`host`, `host/loader`, `host/sandbox-exec`).
//! Test code is in a `tests/` directory, in a file named `tests.rs` or `*_tests.rs`, in a file
//! declared as `#[cfg(test)] mod name;`, or in the item after a `#[cfg(test)]` line (for the
//! usual trailing `mod tests {`, the rest of the file).

mod circles;
mod dylib;
mod house;
mod layers;
mod scan;
mod services;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use scan::Source;

/// Files longer than this many lines are listed.
const LONG_FILE: usize = 500;
/// Functions longer than this many lines are listed.
const LONG_FUNCTION: usize = 100;
/// How many of the files that contribute most to a count are named.
const TOP_FILES: usize = 5;

/// A count per file (workspace-relative path, `/`-separated); files that count 0 are left out.
type PerFile = BTreeMap<String, usize>;

#[derive(Debug, Default)]
struct Report {
    json_macros: PerFile,
    key_lookups: PerFile,
    /// Unsafe blocks in plugin-api/src and host/src, host/src/library aside.
    guarded_unsafe: PerFile,
    /// Those of them without a SAFETY comment: (path, line).
    undocumented: Vec<(String, usize)>,
    all_unsafe: PerFile,
    /// (path, lines), longest first.
    long_files: Vec<(String, usize)>,
    /// (path, line, name, length), longest first.
    long_functions: Vec<(String, usize, String, usize)>,
    /// `Result<_, String>` in product code: (path, line).
    string_results: Vec<(String, usize)>,
    /// Seam methods answering `RResult<_, RString>`: (path, line).
    string_seam_errors: Vec<(String, usize)>,
}

pub(crate) fn run(root: &Path) -> Result<()> {
    let files = rust_files(root)?;
    let report = Report::of(&files);
    print!("{}", report.render());
    let house = house::House::of(&files);
    print!("{}", house.render());
    house.gate()?;
    layers::check(root)?;
    dylib::check(root)?;
    report.gate()
}

/// Every `.rs` file under `root` as (relative path, text), sorted by path.
fn rust_files(root: &Path) -> Result<Vec<(String, String)>> {
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let mut out = Vec::new();
    let mut pending: Vec<PathBuf> = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // file_type does not follow symlinks: a symlinked file or directory is skipped.
            let kind = entry.file_type()?;
            if kind.is_dir() && name != "target" && !name.starts_with('.') {
                pending.push(entry.path());
            } else if kind.is_file() && name.ends_with(".rs") {
                let path = entry.path();
                let relative = path
                    .strip_prefix(&root)
                    .context("a file outside the workspace root")?;
                let relative: Vec<String> = relative
                    .components()
                    .map(|part| part.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                out.push((
                    relative.join("/"),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The crate of plugin code a path belongs to: a plugin (`agent-loop`) or a plugin's own
/// logic crate (`tool-fs/core`) under `plugins/`, the vocabulary (`protocol`), a seam
/// (`seams/llm`) or a kit library (`kit/path-follow`) under `plugin-api/`, or a library under
/// `host/libs/` that plugins link too (`libs/session-log`).
fn plugin_crate(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let below = |depth: usize| parts.len() > depth + 1;
    match parts.as_slice() {
        ["plugins", name, "core", ..] if below(3) => Some(format!("{name}/core")),
        ["plugins", name, ..] if below(2) => Some((*name).to_owned()),
        ["plugin-api", "protocol", ..] if below(2) => Some("protocol".to_owned()),
        ["plugin-api", group @ ("seams" | "kit"), name, ..] if below(3) => {
            Some(format!("{group}/{name}"))
        }
        ["host", "libs", name, ..] if below(3) => Some(format!("libs/{name}")),
        _ => None,
    }
}

/// The crate of product code a path belongs to: a crate of plugin code (see [`plugin_crate`]),
/// `plugin-api` itself, or a crate of the host (`host`, `host/loader`, `host/sandbox-exec`).
fn product_crate(path: &str) -> Option<String> {
    if let Some(name) = plugin_crate(path) {
        return Some(name);
    }
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        ["plugin-api", "src", _, ..] => Some("plugin-api".to_owned()),
        ["host", "src", _, ..] => Some("host".to_owned()),
        ["host", name, "src", _, ..] if *name != "libs" => Some(format!("host/{name}")),
        _ => None,
    }
}

/// Where a seam's methods are declared: the seam crates and the host's I/O service traits.
fn is_seam_file(path: &str) -> bool {
    matches!(
        path.split('/').collect::<Vec<_>>().as_slice(),
        ["plugin-api", "seams", _, "src", _, ..] | ["plugin-api", "src", "io", _, ..]
    )
}

/// The files of the modules `path` declares as `names` (`mod name;`): beside a `lib.rs`,
/// `main.rs` or `mod.rs`, in a folder named after any other file.
fn module_files(path: &str, names: &[String]) -> Vec<String> {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let base = if matches!(stem, "lib" | "main" | "mod") {
        dir.to_owned()
    } else {
        format!("{dir}/{stem}")
    };
    names
        .iter()
        .flat_map(|name| [format!("{base}/{name}.rs"), format!("{base}/{name}/mod.rs")])
        .collect()
}

/// Test code by where it lives: a `tests/` directory, `tests.rs` or `*_tests.rs`.
fn is_test_file(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let file = parts.pop().unwrap_or_default();
    parts.contains(&"tests") || file == "tests.rs" || file.ends_with("_tests.rs")
}

/// Where every unsafe block needs its SAFETY comment.
fn needs_safety_comments(path: &str) -> bool {
    (path.starts_with("plugin-api/src/") || path.starts_with("host/src/"))
        && !path.starts_with("host/src/library/")
}

fn add(counts: &mut PerFile, path: &str, count: usize) {
    if count > 0 {
        *counts.entry(path.to_owned()).or_default() += count;
    }
}

impl Report {
    fn of(files: &[(String, String)]) -> Self {
        let mut report = Self::default();
        let sources: Vec<(&String, Source)> = files
            .iter()
            .map(|(path, text)| (path, Source::new(text)))
            .collect();
        let test_modules: BTreeSet<String> = sources
            .iter()
            .flat_map(|(path, source)| module_files(path, &source.test_module_files()))
            .collect();
        for (path, source) in &sources {
            let test_file = is_test_file(path) || test_modules.contains(path.as_str());
            report.add_file(path, source, test_file);
        }
        report.string_results.sort();
        report.string_seam_errors.sort();
        report
            .long_files
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        report
            .long_functions
            .sort_by(|a, b| b.3.cmp(&a.3).then_with(|| (&a.0, a.1).cmp(&(&b.0, b.1))));
        report
    }

    fn add_file(&mut self, path: &str, source: &Source, test_file: bool) {
        if source.line_count() > LONG_FILE {
            self.long_files.push((path.to_owned(), source.line_count()));
        }
        for function in source.functions() {
            if function.length > LONG_FUNCTION {
                self.long_functions.push((
                    path.to_owned(),
                    function.line,
                    function.name,
                    function.length,
                ));
            }
        }
        let blocks = source.unsafe_blocks();
        add(&mut self.all_unsafe, path, blocks.len());
        if needs_safety_comments(path) {
            add(&mut self.guarded_unsafe, path, blocks.len());
            for block in blocks {
                if !source.has_safety_comment(block) {
                    self.undocumented
                        .push((path.to_owned(), source.line_of(block)));
                }
            }
        }
        if test_file || product_crate(path).is_none() {
            return;
        }
        let tests = source.test_lines();
        let outside_tests = |lines: Vec<usize>| -> Vec<usize> {
            lines
                .into_iter()
                .filter(|line| !tests.iter().any(|range| range.contains(line)))
                .collect()
        };
        let at = |lines: Vec<usize>| lines.into_iter().map(|line| (path.to_owned(), line));
        self.string_results.extend(at(outside_tests(
            source.results_with_error("Result", &["String"]),
        )));
        if is_seam_file(path) {
            self.string_seam_errors.extend(at(outside_tests(
                source.results_with_error("RResult", &["RString"]),
            )));
        }
        if plugin_crate(path).is_some() {
            add(
                &mut self.json_macros,
                path,
                outside_tests(source.json_macros()).len(),
            );
            add(
                &mut self.key_lookups,
                path,
                outside_tests(source.key_lookups()).len(),
            );
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        per_crate(&mut out, "json! in plugin code", &self.json_macros);
        per_crate(
            &mut out,
            "[\"key\"] lookups in plugin code",
            &self.key_lookups,
        );
        per_crate_at(
            &mut out,
            "Result<_, String> in product code",
            &self.string_results,
        );
        per_crate_at(
            &mut out,
            "seam methods returning a bare string error (RResult<_, RString>)",
            &self.string_seam_errors,
        );
        let _ = writeln!(
            out,
            "lint: unsafe blocks in plugin-api/src and host/src (host/src/library aside): {}, \
             without a // SAFETY: comment: {}",
            total(&self.guarded_unsafe),
            self.undocumented.len()
        );
        top_files(&mut out, &self.guarded_unsafe);
        for (path, line) in &self.undocumented {
            let _ = writeln!(out, "lint:   no SAFETY comment: {path}:{line}");
        }
        let _ = writeln!(
            out,
            "lint: unsafe blocks in the whole workspace (for information): {}",
            total(&self.all_unsafe)
        );
        top_files(&mut out, &self.all_unsafe);
        let _ = writeln!(
            out,
            "lint: .rs files over {LONG_FILE} lines: {}",
            self.long_files.len()
        );
        for (path, lines) in &self.long_files {
            let _ = writeln!(out, "lint:   {path}: {lines} lines");
        }
        let _ = writeln!(
            out,
            "lint: functions over {LONG_FUNCTION} lines: {}",
            self.long_functions.len()
        );
        for (path, line, name, length) in &self.long_functions {
            let _ = writeln!(out, "lint:   {path}:{line} fn {name}: {length} lines");
        }
        out
    }

    /// Fails when an unsafe block that needs a SAFETY comment has none, when product code
    /// has a `Result<_, String>` or when a seam method answers a bare string error.
    fn gate(&self) -> Result<()> {
        let failures: Vec<String> = [
            (
                "unsafe block without a `// SAFETY:` comment on the 3 lines above it \
                 (plugin-api and host)",
                &self.undocumented,
            ),
            (
                "`Result<_, String>` in product code (give the error a type)",
                &self.string_results,
            ),
            (
                "seam method returning `RResult<_, RString>` (give the error a kind)",
                &self.string_seam_errors,
            ),
        ]
        .into_iter()
        .filter(|(_, places)| !places.is_empty())
        .map(|(what, places)| format!("{what}: {}", places_of(places)))
        .collect();
        if failures.is_empty() {
            return Ok(());
        }
        bail!("{}", failures.join("; "))
    }
}

fn places_of(places: &[(String, usize)]) -> String {
    let words: Vec<String> = places
        .iter()
        .map(|(path, line)| format!("{path}:{line}"))
        .collect();
    words.join(", ")
}

fn total(counts: &PerFile) -> usize {
    counts.values().sum()
}

/// `(name, count)` pairs, largest first, then by name.
fn ranked(counts: impl IntoIterator<Item = (String, usize)>) -> Vec<(String, usize)> {
    let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked
}

fn joined(pairs: &[(String, usize)]) -> String {
    let words: Vec<String> = pairs
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect();
    words.join(", ")
}

/// `per_crate`, then every place, since these fail the step.
fn per_crate_at(out: &mut String, label: &str, places: &[(String, usize)]) {
    let mut counts = PerFile::new();
    for (path, _) in places {
        add(&mut counts, path, 1);
    }
    per_crate(out, label, &counts);
    for (path, line) in places {
        let _ = writeln!(out, "lint:   at {path}:{line}");
    }
}

/// `lint: LABEL: TOTAL (crate n, ..)` and the files that contribute most.
fn per_crate(out: &mut String, label: &str, counts: &PerFile) {
    let mut crates: BTreeMap<String, usize> = BTreeMap::new();
    for (path, count) in counts {
        let name = product_crate(path).unwrap_or_else(|| path.clone());
        *crates.entry(name).or_default() += count;
    }
    let _ = write!(out, "lint: {label}: {}", total(counts));
    if !crates.is_empty() {
        let _ = write!(out, " ({})", joined(&ranked(crates)));
    }
    out.push('\n');
    top_files(out, counts);
}

fn top_files(out: &mut String, counts: &PerFile) {
    if counts.is_empty() {
        return;
    }
    let mut files = ranked(counts.iter().map(|(path, count)| (path.clone(), *count)));
    let more = files.len().saturating_sub(TOP_FILES);
    files.truncate(TOP_FILES);
    let _ = write!(out, "lint:   most: {}", joined(&files));
    if more > 0 {
        let _ = write!(out, " (and {more} more files)");
    }
    out.push('\n');
}
