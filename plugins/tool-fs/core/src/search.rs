//! What `glob` and `grep` share: caps, the spill reference of a capped result, display paths,
//! line previews, the bounded search-card `meta`, walk errors and cancellation.
//!
//! The reference runs the `rg` binary; here ripgrep's own libraries run in-process, the walk
//! through the workspace's file system (the `fs` service, so a confined provider confines the
//! searches too), the matching in the tool. The texts
//! the model sees for walk failures are shaped like ripgrep's stderr (`rg: <path>: <error>`),
//! wrapped the way the reference wraps a non-zero exit.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_fs_local::{WalkEntry, WalkRequest, Walked};
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};
use crate::path::Workspace;

/// Default inline path cap of `glob`.
pub const GLOB_MAX_RESULTS: usize = 100;
/// Default inline match cap of `grep`.
pub const GREP_MAX_MATCHES: usize = 250;
/// Default byte cap of one matched-line preview.
pub const GREP_MAX_LINE_BYTES: usize = 2000;
/// Default byte cap of one search's serialized `meta`.
pub const SEARCH_META_MAX_BYTES: usize = 65_536;

/// Search caps (the reference plugin's config after defaulting).
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Paths one `glob` call shows inline.
    pub glob_max_results: usize,
    /// Whether an over-cap `glob` page is sampled across top-level entries (the shipped
    /// presets say `false`: keep the modification-time head).
    pub sample_over_cap_glob_results: bool,
    /// Matches one `grep` call shows inline.
    pub grep_max_matches: usize,
    /// Bytes kept of one matched line.
    pub grep_max_line_bytes: usize,
    /// Bytes of serialized `meta`; trailing groups/paths are dropped past it.
    pub meta_max_bytes: usize,
    /// Set to stop a running search (tool timeout or caller cancellation).
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            glob_max_results: GLOB_MAX_RESULTS,
            sample_over_cap_glob_results: false,
            grep_max_matches: GREP_MAX_MATCHES,
            grep_max_line_bytes: GREP_MAX_LINE_BYTES,
            meta_max_bytes: SEARCH_META_MAX_BYTES,
            cancel: None,
        }
    }
}

impl SearchOptions {
    pub(crate) fn check_cancel(&self, tool: &str) -> Result<(), ToolError> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
        {
            return Err(ToolError::new(
                ErrorCode::SearchAborted,
                format!(
                    "{tool} was aborted before completion (tool timeout or caller cancellation)"
                ),
            ));
        }
        Ok(())
    }
}

/// Where the complete result of a capped search was saved (the spill store's answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillRef {
    /// The saved file's locator (a path).
    pub locator: String,
    /// How the model can read it back.
    pub retrieval_hint: String,
}

/// Where a search starts, and how its results are displayed.
pub(crate) struct SearchRoot {
    /// The session cwd: the display base and the glob-matching base.
    pub(crate) workdir: PathBuf,
    /// The absolute walk root.
    pub(crate) walk_root: PathBuf,
    /// The `path` argument as given, which prefixes every displayed result (as `rg` prints it).
    pub(crate) given: Option<String>,
}

impl SearchRoot {
    pub(crate) fn new(workdir: &Path, given: Option<&str>) -> Self {
        let walk_root = given.map_or_else(|| workdir.to_path_buf(), |path| workdir.join(path));
        Self {
            workdir: workdir.to_path_buf(),
            walk_root,
            given: given.map(str::to_owned),
        }
    }

    /// The display form of a walked path: relative to the walk root, prefixed with the `path`
    /// argument as given, then made workdir-relative when absolute and inside the workdir.
    pub(crate) fn display(&self, walked: &Path) -> String {
        let relative = walked.strip_prefix(&self.walk_root).unwrap_or(walked);
        let shown = match &self.given {
            None => relative.to_path_buf(),
            Some(given) if relative.as_os_str().is_empty() => PathBuf::from(given),
            Some(given) => Path::new(given).join(relative),
        };
        to_workdir_relative(&shown.to_string_lossy(), &self.workdir)
    }

    /// A walk error as ripgrep prints it: paths shown the way results are shown.
    pub(crate) fn error_text(&self, error: &impl std::fmt::Display) -> String {
        let text = error.to_string();
        let root = self.walk_root.to_string_lossy();
        let (prefix, bare) = match &self.given {
            Some(given) => (format!("{given}/"), given.clone()),
            None => (String::new(), ".".to_owned()),
        };
        text.replace(&format!("{root}/"), &prefix)
            .replace(&*root, &bare)
    }

    /// How the walk root itself displays (the glob sampling base).
    pub(crate) fn display_root(&self) -> String {
        self.given.as_deref().map_or_else(
            || ".".to_owned(),
            |given| to_workdir_relative(given, &self.workdir),
        )
    }
}

/// An absolute path inside `workdir` becomes workdir-relative (`.` for the workdir itself);
/// anything else is unchanged.
pub fn to_workdir_relative(path: &str, workdir: &Path) -> String {
    let candidate = Path::new(path);
    if !candidate.is_absolute() {
        return path.to_owned();
    }
    match candidate.strip_prefix(workdir) {
        Ok(rest) if rest.as_os_str().is_empty() => ".".to_owned(),
        Ok(rest) if !rest.components().any(|c| matches!(c, Component::ParentDir)) => {
            rest.to_string_lossy().into_owned()
        }
        _ => path.to_owned(),
    }
}

/// Keep at most `max_bytes` of `line` on a UTF-8 boundary, marking a cut.
pub fn preview_line(line: &str, max_bytes: usize) -> String {
    if line.len() <= max_bytes {
        return line.to_owned();
    }
    format!(
        "{} (line truncated)",
        &line[..line.floor_char_boundary(max_bytes)]
    )
}

/// Serialized size of a `meta` value, as persisted.
fn meta_bytes(meta: &Value) -> usize {
    serde_json::to_string(meta).map_or(usize::MAX, |s| s.len())
}

/// Drop trailing items of `meta[list_key]` until the serialized meta fits, marking it
/// truncated; a single oversized item is kept so a real result never shows as empty.
pub(crate) fn cap_meta_bytes(mut meta: Value, list_key: &str, max_bytes: usize) -> Value {
    if meta_bytes(&meta) <= max_bytes {
        return meta;
    }
    if let Some(object) = meta.as_object_mut() {
        object.insert("truncated".to_owned(), Value::Bool(true));
    }
    loop {
        let len = meta
            .get(list_key)
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if len <= 1 || meta_bytes(&meta) <= max_bytes {
            return meta;
        }
        if let Some(items) = meta.get_mut(list_key).and_then(Value::as_array_mut) {
            items.pop();
        }
    }
}

/// Collects walk/search errors the way ripgrep reports them on stderr.
#[derive(Default)]
pub(crate) struct WalkErrors(Vec<String>);

impl WalkErrors {
    pub(crate) fn push(&mut self, message: impl std::fmt::Display) {
        self.0.push(format!("rg: {message}"));
    }

    /// A run with any error exits 2 in ripgrep, which the reference reports as a failure.
    pub(crate) fn into_result(self, tool: &str) -> Result<(), ToolError> {
        if self.0.is_empty() {
            return Ok(());
        }
        Err(ToolError::new(
            ErrorCode::SearchFailed,
            format!("{tool} search failed (exit 2): {}", self.0.join("\n")),
        ))
    }
}

/// Walks `request` through the workspace's file system, handing each entry to `on_entry` with
/// the run's error list, and stops when the search is cancelled. Walk errors are collected the
/// way ripgrep reports them; a glob that does not parse is ripgrep's pattern error.
pub(crate) fn walk(
    tool: &str,
    workspace: &Workspace,
    root: &SearchRoot,
    options: &SearchOptions,
    request: &WalkRequest<'_>,
    mut on_entry: impl FnMut(&WalkEntry<'_>, &mut WalkErrors),
) -> Result<(), ToolError> {
    let mut errors = WalkErrors::default();
    let walked = workspace.fs().walk(request, &mut |walked| {
        if options.check_cancel(tool).is_err() {
            return false;
        }
        match walked {
            Walked::Entry(entry) => on_entry(&entry, &mut errors),
            Walked::Error(message) => errors.push(root.error_text(&message)),
        }
        true
    });
    if let Err(error) = walked {
        return Err(pattern_error(tool, &error.to_string()));
    }
    options.check_cancel(tool)?;
    errors.into_result(tool)
}

/// Classify a matcher/glob construction failure the way the reference classifies `rg` stderr.
pub(crate) fn pattern_error(tool: &str, message: &str) -> ToolError {
    let stderr = format!("rg: {message}");
    let lower = stderr.to_lowercase();
    if lower.contains("regex parse error") || lower.contains("error parsing glob") {
        ToolError::new(
            ErrorCode::SearchInvalidPattern,
            format!("{tool} pattern rejected by ripgrep: {stderr}"),
        )
    } else {
        ToolError::new(
            ErrorCode::SearchFailed,
            format!("{tool} search failed (exit 2): {stderr}"),
        )
    }
}
