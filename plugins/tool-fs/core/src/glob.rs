//! The `glob` tool: files (never directories) whose paths match one glob, in modification-time
//! order, oldest first, as `rg --files --sort=modified` lists them.
//!
//! Like the reference (`--no-ignore --hidden`), hidden and ignored files are listed and only
//! VCS metadata directories are excluded: the tool answers "which files exist", not "which
//! files matter". Glob semantics are ripgrep's override globs matched relative to the session
//! cwd: a pattern without `/` matches a basename at any depth.

use std::collections::HashMap;
use std::time::SystemTime;

use dsh_fs_local::WalkRequest;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ToolError;
use crate::path::Workspace;
use crate::search::{SearchOptions, SearchRoot, SpillRef, cap_meta_bytes, walk};

/// VCS metadata directories never listed.
pub const GLOB_VCS_EXCLUDES: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// `glob` arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GlobArgs {
    /// The glob pattern.
    pub pattern: String,
    /// Directory (or file) to search; defaults to the workspace.
    #[serde(default)]
    pub path: Option<String>,
}

/// A completed `glob`.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobOutput {
    /// The search root as displayed (`.` for the workspace).
    pub root: String,
    /// Every matching path, oldest first (the complete result, for a spill file).
    pub paths: Vec<String>,
    /// The model-facing text without a spill reference (re-render with [`render_glob`] once
    /// the complete result has been saved).
    pub text: String,
    /// The search-card `meta`.
    pub meta: Value,
}

fn parse_glob_args(args: &GlobArgs) -> Result<(), ToolError> {
    if args.pattern.trim().is_empty() {
        return Err(ToolError::plain("pattern must be a non-empty string"));
    }
    if args.path.as_ref().is_some_and(|p| p.trim().is_empty()) {
        return Err(ToolError::plain(
            "path must be a non-empty string when given",
        ));
    }
    Ok(())
}

/// The pattern, and the VCS metadata directories excluded.
fn overrides(pattern: &str) -> Vec<String> {
    let mut globs = vec![pattern.to_owned()];
    for name in GLOB_VCS_EXCLUDES {
        // The bare form prunes the directory during the walk; the `/**` form still excludes
        // the contents when the search root is at or inside the directory.
        globs.push(format!("!**/{name}"));
        globs.push(format!("!**/{name}/**"));
    }
    globs
}

/// List the files matching `args.pattern` under the workspace (or `args.path`).
pub fn glob(
    args: &GlobArgs,
    workspace: &Workspace,
    options: &SearchOptions,
) -> Result<GlobOutput, ToolError> {
    parse_glob_args(args)?;
    let root = SearchRoot::new(workspace.root(), args.path.as_deref());
    workspace.check_path_readable(&root.walk_root)?;
    let globs = overrides(&args.pattern);
    let request = WalkRequest {
        root: &root.walk_root,
        standard_filters: false,
        ignore_files: &[],
        globs: &globs,
        glob_base: &root.workdir,
        mtimes: true,
    };
    let mut found: Vec<(Option<SystemTime>, String)> = Vec::new();
    walk("glob", workspace, &root, options, &request, |entry, _| {
        if entry.is_file {
            found.push((entry.mtime, root.display(entry.path)));
        }
    })?;
    // Stable: equal times keep walk order. `None` (no mtime) sorts first, as ripgrep does.
    found.sort_by_key(|a| a.0);
    let paths: Vec<String> = found.into_iter().map(|(_, path)| path).collect();
    let root_display = root.display_root();
    let text = render_glob(&paths, options, &root_display, None);
    let meta = glob_meta(&paths, options, &root_display);
    Ok(GlobOutput {
        root: root_display,
        paths,
        text,
        meta,
    })
}

/// The inline page of an over-cap result and how much of the top level it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobSample {
    /// The shown paths, grouped by top-level entry.
    pub items: Vec<String>,
    /// Top-level entries the shown paths reach.
    pub shown: usize,
    /// Top-level entries of the complete result.
    pub total: usize,
}

fn relative_to_search_root<'a>(path: &'a str, root: &str) -> &'a str {
    if root == "." {
        return path.strip_prefix("./").unwrap_or(path);
    }
    let trimmed = root.trim_end_matches('/');
    if trimmed.is_empty() {
        return path.trim_start_matches('/');
    }
    if path == trimmed {
        return "";
    }
    path.strip_prefix(trimmed)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(path)
}

fn top_level_segment(path: &str) -> &str {
    let trimmed = path.trim_start_matches('/');
    trimmed.split('/').next().unwrap_or(trimmed)
}

/// Round-robin over the complete result's top-level entries: every entry gets a slot before
/// any gets a second; group order and in-group order follow `paths`.
pub fn sample_across_top_level(paths: &[String], max_items: usize, root: &str) -> GlobSample {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, Vec<&String>> = HashMap::new();
    for path in paths {
        let key = top_level_segment(relative_to_search_root(path, root));
        groups.entry(key).or_insert_with(|| {
            order.push(key);
            Vec::new()
        });
        if let Some(group) = groups.get_mut(key) {
            group.push(path);
        }
    }
    let mut taken: Vec<Vec<&String>> = vec![Vec::new(); order.len()];
    let mut count = 0;
    let mut round = 0;
    while count < max_items {
        let mut progressed = false;
        for (index, key) in order.iter().enumerate() {
            if count >= max_items {
                break;
            }
            if let Some(path) = groups.get(key).and_then(|g| g.get(round)) {
                taken[index].push(path);
                count += 1;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
        round += 1;
    }
    let shown = taken.iter().filter(|t| !t.is_empty()).count();
    GlobSample {
        items: taken.into_iter().flatten().cloned().collect(),
        shown,
        total: order.len(),
    }
}

fn format_glob_page(
    items: &[String],
    seen: usize,
    spill: Option<&SpillRef>,
    basis: &str,
) -> String {
    let recovery = match spill {
        Some(spill) => format!(
            "Full sorted result stored at: {}. {}",
            spill.locator, spill.retrieval_hint
        ),
        None => {
            "The complete result could not be saved; narrow pattern or path to see more.".to_owned()
        }
    };
    format!(
        "{}\n\n(Showing {} of {seen} paths{basis} {recovery})",
        items.join("\n"),
        items.len()
    )
}

/// Format a sampled over-cap page; a flat result (one path per top-level entry) keeps the plain
/// footer because its sample is the modification-time head.
pub fn format_glob_sample(sample: &GlobSample, seen: usize, spill: Option<&SpillRef>) -> String {
    let basis = if sample.total == seen {
        ".".to_owned()
    } else {
        let narrow = if sample.shown < sample.total {
            " Narrow path to inspect a specific subtree."
        } else {
            ""
        };
        format!(
            ", sampled across {} of the {} top-level entries this pattern matched instead of taken in modification-time order.{narrow}",
            sample.shown, sample.total
        )
    };
    format_glob_page(&sample.items, seen, spill, &basis)
}

/// The model-facing `glob` text for a complete path list (`spill`: where the complete sorted
/// list was saved, when it was).
pub fn render_glob(
    paths: &[String],
    options: &SearchOptions,
    root: &str,
    spill: Option<&SpillRef>,
) -> String {
    if paths.is_empty() {
        return "No files found".to_owned();
    }
    let max = options.glob_max_results;
    if paths.len() <= max {
        return paths.join("\n");
    }
    if !options.sample_over_cap_glob_results {
        return format_glob_page(&paths[..max], paths.len(), spill, ".");
    }
    format_glob_sample(
        &sample_across_top_level(paths, max, root),
        paths.len(),
        spill,
    )
}

/// The search-card `meta` for a complete path list: the same page the text shows.
pub fn glob_meta(paths: &[String], options: &SearchOptions, root: &str) -> Value {
    let max = options.glob_max_results;
    let (items, truncated) = if paths.len() <= max {
        (paths.to_vec(), false)
    } else if options.sample_over_cap_glob_results {
        (sample_across_top_level(paths, max, root).items, true)
    } else {
        (paths[..max].to_vec(), true)
    };
    let meta =
        json!({ "shape": "paths", "paths": items, "truncated": truncated, "total": paths.len() });
    cap_meta_bytes(meta, "paths", options.meta_max_bytes)
}

/// The complete formatted result a wrapper saves when the result is over the cap
/// (`glob-results.txt`).
pub fn glob_spill_text(paths: &[String]) -> String {
    paths.join("\n")
}
