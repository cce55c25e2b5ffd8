//! The `grep` tool: a ripgrep regular expression over file contents, matches grouped by file
//! as `Line N: text` rows.
//!
//! Filtering is ripgrep's default: `.gitignore`/`.ignore`/`.rgignore` respected (git rules only
//! inside a git repository, as ripgrep does), hidden files skipped, binary files skipped, an
//! explicitly named file always searched. Unlike the reference's parallel `rg`, files are
//! searched in name order so the output is deterministic.

use dsh_fs_local::{FileReader, WalkRequest};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ToolError;
use crate::path::Workspace;
use crate::search::{
    SearchOptions, SearchRoot, SpillRef, cap_meta_bytes, pattern_error, preview_line, walk,
};

/// `grep` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GrepArgs {
    /// The regular expression (ripgrep syntax).
    pub pattern: String,
    /// File or directory to search; defaults to the workspace.
    #[serde(default)]
    pub path: Option<String>,
    /// One glob filter for which files to search.
    #[serde(default)]
    pub include: Option<String>,
}

/// One matched line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrepMatch {
    /// The file as displayed.
    pub path: String,
    /// 1-based line number.
    #[serde(rename = "lineNumber")]
    pub line_number: u64,
    /// The line without its terminator.
    pub line: String,
}

/// A completed `grep`.
#[derive(Debug, Clone, PartialEq)]
pub struct GrepOutput {
    /// Every match (full lines), in output order.
    pub matches: Vec<GrepMatch>,
    /// The model-facing text without a spill reference.
    pub text: String,
    /// The search-card `meta`.
    pub meta: Value,
}

/// Reject an `include` that is not one positive glob (a comma inside braces is alternation).
fn validate_include(include: &str) -> Result<(), ToolError> {
    if include.trim().is_empty() {
        return Err(ToolError::plain(
            "include must be a non-empty glob when given",
        ));
    }
    if include.starts_with('!') {
        return Err(ToolError::plain(
            "include must be a positive glob filter; negated patterns (\"!…\") are not supported",
        ));
    }
    let mut depth = 0usize;
    for ch in include.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                return Err(ToolError::plain(
                    "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn parse_grep_args(args: &GrepArgs) -> Result<(), ToolError> {
    if args.pattern.is_empty() {
        return Err(ToolError::plain("pattern must be a non-empty string"));
    }
    if args.path.as_ref().is_some_and(|p| p.trim().is_empty()) {
        return Err(ToolError::plain(
            "path must be a non-empty string when given",
        ));
    }
    args.include.as_deref().map_or(Ok(()), validate_include)
}

struct Collect<'a> {
    path: &'a str,
    out: &'a mut Vec<GrepMatch>,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        let bytes = found.bytes();
        // `\r` goes only together with the `\n` it precedes, as the reference strips `\r?\n$`.
        let bytes = match bytes.strip_suffix(b"\n") {
            Some(rest) => rest.strip_suffix(b"\r").unwrap_or(rest),
            None => bytes,
        };
        let line = match std::str::from_utf8(bytes) {
            Ok(text) => text.to_owned(),
            Err(_) => "(line is not valid UTF-8)".to_owned(),
        };
        self.out.push(GrepMatch {
            path: self.path.to_owned(),
            line_number: found.line_number().unwrap_or(0),
            line,
        });
        Ok(true)
    }
}

/// Search file contents under the workspace (or `args.path`).
pub fn grep(
    args: &GrepArgs,
    workspace: &Workspace,
    options: &SearchOptions,
) -> Result<GrepOutput, ToolError> {
    parse_grep_args(args)?;
    let root = SearchRoot::new(workspace.root(), args.path.as_deref());
    workspace.check_path_readable(&root.walk_root)?;
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| pattern_error("grep", &e.to_string()))?;
    let globs: Vec<String> = args.include.iter().cloned().collect();
    let ignore_files = [".rgignore".to_owned()];
    let request = WalkRequest {
        root: &root.walk_root,
        standard_filters: true,
        ignore_files: &ignore_files,
        globs: &globs,
        glob_base: &root.workdir,
        mtimes: false,
    };
    // Implicit files stop at the first NUL (skipped as binary); an explicitly named file is
    // searched with NULs treated as line breaks, as ripgrep does.
    let mut implicit = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut explicit = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::convert(0))
        .build();
    let mut matches = Vec::new();
    walk(
        "grep",
        workspace,
        &root,
        options,
        &request,
        |entry, errors| {
            if !entry.is_file {
                return;
            }
            // What the sandbox hides is not searched either: a match would show its content.
            if workspace.is_hidden(entry.path) {
                return;
            }
            let searcher = if entry.depth == 0 {
                &mut explicit
            } else {
                &mut implicit
            };
            let shown = root.display(entry.path);
            let sink = Collect {
                path: &shown,
                out: &mut matches,
            };
            let file = FileReader::new(workspace.fs(), entry.path);
            if let Err(error) = searcher.search_reader(&matcher, file, sink) {
                errors.push(format!("{shown}: {error}"));
            }
        },
    )?;
    let text = render_grep(&matches, options, None);
    let meta = grep_meta(&matches, options);
    Ok(GrepOutput {
        matches,
        text,
        meta,
    })
}

/// Group matches by file (first-seen order): the path, then one `Line N: text` row per match.
pub fn format_grep_matches(matches: &[GrepMatch]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut rows: std::collections::HashMap<&str, Vec<String>> = std::collections::HashMap::new();
    for m in matches {
        let group = rows.entry(m.path.as_str()).or_insert_with(|| {
            order.push(m.path.as_str());
            Vec::new()
        });
        group.push(format!("Line {}: {}", m.line_number, m.line));
    }
    order
        .iter()
        .map(|path| {
            format!(
                "{path}\n{}",
                rows.get(path).map(|r| r.join("\n")).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn noun(count: usize) -> &'static str {
    if count == 1 { "match" } else { "matches" }
}

/// The previewed, capped page of a complete match list: what the text and the card show.
fn retain(matches: &[GrepMatch], options: &SearchOptions) -> Vec<GrepMatch> {
    matches
        .iter()
        .take(options.grep_max_matches)
        .map(|m| GrepMatch {
            line: preview_line(&m.line, options.grep_max_line_bytes),
            ..m.clone()
        })
        .collect()
}

/// The model-facing `grep` text for a complete match list (`spill`: where the complete result
/// was saved, when it was).
pub fn render_grep(
    matches: &[GrepMatch],
    options: &SearchOptions,
    spill: Option<&SpillRef>,
) -> String {
    if matches.is_empty() {
        return "No matches found".to_owned();
    }
    let kept = retain(matches, options);
    let truncated = kept.len() < matches.len();
    let header = if truncated {
        format!("Found {} of {} matches", kept.len(), matches.len())
    } else {
        format!("Found {} {}", matches.len(), noun(matches.len()))
    };
    let body = format_grep_matches(&kept);
    if !truncated {
        return format!("{header}\n\n{body}");
    }
    let recovery = match spill {
        Some(spill) => format!(
            "Full grep result stored at: {}. {}",
            spill.locator, spill.retrieval_hint
        ),
        None => {
            "The complete result could not be saved; narrow pattern, path, or include to see more."
                .to_owned()
        }
    };
    format!("{header}\n\n{body}\n\n({recovery})")
}

/// The search-card `meta`: the retained matches grouped by file.
pub fn grep_meta(matches: &[GrepMatch], options: &SearchOptions) -> Value {
    let kept = retain(matches, options);
    let mut files: Vec<Value> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for m in &kept {
        let row = json!({ "lineNumber": m.line_number, "line": m.line });
        match index.get(m.path.as_str()) {
            Some(&at) => {
                if let Some(list) = files[at].get_mut("matches").and_then(Value::as_array_mut) {
                    list.push(row);
                }
            }
            None => {
                index.insert(m.path.as_str(), files.len());
                files.push(json!({ "path": m.path, "matches": [row] }));
            }
        }
    }
    let meta = json!({ "shape": "matches", "files": files, "truncated": kept.len() < matches.len(), "total": matches.len() });
    cap_meta_bytes(meta, "files", options.meta_max_bytes)
}

/// The complete formatted result a wrapper saves when over the cap (`grep-results.txt`): every
/// match, each line previewed.
pub fn grep_spill_text(matches: &[GrepMatch], options: &SearchOptions) -> String {
    let previewed: Vec<GrepMatch> = matches
        .iter()
        .map(|m| GrepMatch {
            line: preview_line(&m.line, options.grep_max_line_bytes),
            ..m.clone()
        })
        .collect();
    format!(
        "Found {} {}\n\n{}",
        matches.len(),
        noun(matches.len()),
        format_grep_matches(&previewed)
    )
}
