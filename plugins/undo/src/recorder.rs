//! The recorder: per working directory, the baseline (what every path held at the last scan,
//! its content in the store) and how many recorded calls are running in it.
//!
//! The first call in a workspace since the host started scans it before its body runs, which
//! copies every file's content into the store. Later calls do not scan before: the last
//! call's closing scan is the baseline, and whatever changed in between (a person's edits, an
//! undo) is told apart at the closing scan by the inode's change time (`ctime`, which no
//! program can set back): a path that changed before the call started is taken into the
//! baseline and is no change of the call's; a path removed is the call's when its nearest
//! surviving directory changed since the call started. The kernel stamps `ctime` from a
//! coarse clock (one tick behind at most), so "started" is taken a little early
//! (`clock`): an outside
//! edit made in that moment before a call counts as the call's.
//!
//! Calls that overlap in one workspace share the baseline and the start of the first, and the
//! last of them to end records everything they changed: a foreground subagent's calls run
//! inside its parent's call, so their changes are the parent's turn's and its `/undo` reverts
//! them; parallel calls of one step are one turn's anyway. Two sessions working in one
//! directory at once cannot be told apart: the session whose call ends last gets the changes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::lock;

use crate::clock::now_less_slack;
use crate::scan::{Change, Manifest, ScanError, Scope, meta_changed_since, scan};
use crate::store::Store;
use crate::watch::Watch;

#[derive(Debug, Default)]
struct Workspace {
    baseline: Manifest,
    /// Whether `baseline` is a scan (not the empty map of a workspace never seen).
    scanned: bool,
    active: usize,
    /// What changed since the last scan, where the kernel can say it.
    watch: Option<Watch>,
    /// What a quiet-end check read from `watch` and found not quiet, for the closing scan
    /// (`None` inside: the kernel could not say, scan everything).
    drained: Option<Option<HashSet<String>>>,
    /// When the running calls started (the first of them), less the slack.
    since: (i64, i64),
}

impl Workspace {
    /// One more recorded call runs here; the first of them sets when they started.
    fn enter(&mut self) {
        if self.active == 0 {
            self.since = now_less_slack();
        }
        self.active += 1;
    }

    /// The directories change notification says moved since the last scan, with what a
    /// quiet-end check read before (`None`: the kernel could not say, scan everything).
    fn dirty(&mut self) -> Option<HashSet<String>> {
        let fresh = self.watch.as_mut().and_then(Watch::drain);
        match self.drained.take() {
            Some(before) => union(before, fresh),
            None => fresh,
        }
    }
}

/// Limits every scan obeys.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) exclude: Vec<PathBuf>,
    /// Record what the workspace's `.gitignore` ignores too.
    pub(crate) record_ignored: bool,
    pub(crate) max_file_bytes: u64,
    pub(crate) max_entries: usize,
}

#[derive(Debug)]
pub(crate) struct Recorder {
    pub(crate) store: Store,
    pub(crate) limits: Limits,
    workspaces: Mutex<HashMap<PathBuf, Arc<Mutex<Workspace>>>>,
}

/// A call being recorded: ends the call's share of the workspace when dropped, so a call
/// whose future is dropped midway does not keep the baseline from moving on.
#[derive(Debug)]
pub(crate) struct Recording {
    workspace: Arc<Mutex<Workspace>>,
    root: PathBuf,
    open: bool,
}

impl Recording {
    fn new(workspace: Arc<Mutex<Workspace>>, root: &Path) -> Self {
        Self {
            workspace,
            root: root.to_path_buf(),
            open: true,
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if self.open {
            let mut workspace = lock(&self.workspace);
            workspace.active = workspace.active.saturating_sub(1);
        }
    }
}

/// The ignore rules git applies in `root`: `.git/info/exclude` and every `.gitignore` from the
/// repository's top down to `root`, shallowest first (just `root/.gitignore` outside a
/// repository); a broken line is skipped, as git skips it. A session working in a folder of a
/// checkout (`tests/` beside an ignored `node_modules` of 800 MB) copied all of it on its first
/// call when only the folder's own file counted.
fn gitignore_of(root: &Path) -> Option<Arc<Vec<ignore::gitignore::Gitignore>>> {
    // The repository's top: the nearest folder at or above the workspace holding `.git`.
    let top = root
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
    let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
    if let Some(top) = top {
        files.push((top.to_path_buf(), top.join(".git/info/exclude")));
    }
    let dirs: Vec<&Path> = match top {
        Some(top) => root
            .ancestors()
            .take_while(|dir| dir.starts_with(top))
            .collect(),
        None => vec![root],
    };
    for dir in dirs.into_iter().rev() {
        files.push((dir.to_path_buf(), dir.join(".gitignore")));
    }
    let rules: Vec<ignore::gitignore::Gitignore> = files
        .into_iter()
        .filter(|(_, file)| file.is_file())
        .filter_map(|(dir, file)| {
            let mut builder = ignore::gitignore::GitignoreBuilder::new(dir);
            let _ = builder.add(&file);
            builder.build().ok().filter(|rules| !rules.is_empty())
        })
        .collect();
    (!rules.is_empty()).then(|| Arc::new(rules))
}

impl Recorder {
    pub(crate) fn new(store: Store, limits: Limits) -> Self {
        Self {
            store,
            limits,
            workspaces: Mutex::default(),
        }
    }

    fn scope(&self, root: &Path) -> Scope {
        let mut exclude = self.limits.exclude.clone();
        exclude.push(self.store.root().to_path_buf());
        Scope {
            root: root.to_path_buf(),
            exclude,
            ignored: match self.limits.record_ignored {
                true => None,
                false => gitignore_of(root),
            },
            max_file_bytes: self.limits.max_file_bytes,
            max_entries: self.limits.max_entries,
        }
    }

    fn workspace(&self, root: &Path) -> Arc<Mutex<Workspace>> {
        lock(&self.workspaces)
            .entry(root.to_path_buf())
            .or_default()
            .clone()
    }

    /// A call starts in `root`, a workspace scanned before: nothing to read, so no trip to the
    /// blocking pool (`None` when it was never scanned: then [`Self::begin`]).
    pub(crate) fn begin_known(&self, root: &Path) -> Option<Recording> {
        let workspace = self.workspace(root);
        {
            let mut state = lock(&workspace);
            if !state.scanned {
                return None;
            }
            state.enter();
        }
        Some(Recording::new(workspace, root))
    }

    /// A call starts in `root` (blocking: the first call in a workspace scans it).
    pub(crate) fn begin(&self, root: &Path) -> Result<Recording, ScanError> {
        let workspace = self.workspace(root);
        {
            let mut state = lock(&workspace);
            if state.active == 0 && !state.scanned {
                let scope = self.scope(root);
                // Everything is new to a first scan: none of it is a change of a call's.
                // The watch starts before the walk, so nothing falls between them.
                let mut watch = Watch::new(root, &[String::new()]);
                let scanned = scan(&scope, &mut state.baseline, &self.store, None)?;
                if let Some(live) = &mut watch
                    && !live.add(root, &scanned.listed)
                {
                    watch = None;
                }
                state.watch = watch;
                state.scanned = true;
            }
            state.enter();
        }
        Ok(Recording::new(workspace, root))
    }

    /// The call ends and change notification says nothing moved in the workspace since the
    /// last scan (or other recorded calls are still running in it): nothing changed, and no
    /// trip to the blocking pool. Otherwise the recording comes back for [`Self::end`]. Most
    /// calls (a read, a command that changes nothing) end here.
    pub(crate) fn end_if_quiet(&self, mut recording: Recording) -> Result<Vec<Change>, Recording> {
        let quiet = {
            let mut state = lock(&recording.workspace);
            let state = &mut *state;
            let quiet = state.active > 1 || {
                let dirty = state.dirty();
                let quiet = dirty.as_ref().is_some_and(HashSet::is_empty);
                if !quiet {
                    state.drained = Some(dirty);
                }
                quiet
            };
            if quiet {
                state.active = state.active.saturating_sub(1);
            }
            quiet
        };
        if !quiet {
            return Err(recording);
        }
        recording.open = false;
        Ok(Vec::new())
    }

    /// The call ends: what it changed since it started (blocking: scans).
    pub(crate) fn end(&self, mut recording: Recording) -> Result<Vec<Change>, ScanError> {
        recording.open = false;
        let mut state = lock(&recording.workspace);
        state.active = state.active.saturating_sub(1);
        if state.active > 0 {
            // An enclosing or overlapping call is still running: the last to end records
            // everything, so a foreground subagent's changes are its parent's turn's.
            return Ok(Vec::new());
        }
        let state = &mut *state;
        let only = state.dirty();
        let scope = self.scope(&recording.root);
        let found = match scan(&scope, &mut state.baseline, &self.store, only.as_ref()) {
            Ok(found) => {
                let root = &scope.root;
                if let Some(live) = &mut state.watch
                    && !live.add(root, &found.listed)
                {
                    state.watch = None;
                }
                found.changes
            }
            Err(error) => {
                // The baseline can no longer be trusted: the next call scans before it runs.
                state.scanned = false;
                state.watch = None;
                return Err(error);
            }
        };
        let since = state.since;
        let root = &scope.root;
        let after = &state.baseline;
        // A path that appeared counts by its topmost ancestor that appeared with it: a
        // directory moved in is stamped by the rename, what it holds keeps older times.
        let appeared: HashSet<&str> = found
            .iter()
            .filter(|change| change.before.is_none())
            .map(|change| change.path.as_str())
            .collect();
        let top_of = |path: &'_ str| -> String {
            let mut top = path;
            while let Some((parent, _)) = top.rsplit_once('/') {
                if !appeared.contains(parent) {
                    break;
                }
                top = parent;
            }
            top.to_owned()
        };
        let changes: Vec<Change> = found
            .iter()
            .filter(|change| match (&change.before, &change.after) {
                (None, Some(_)) => after
                    .get(&top_of(&change.path))
                    .is_some_and(|entry| entry.changed_since(since)),
                (Some(_), Some(_)) => after
                    .get(&change.path)
                    .is_some_and(|entry| entry.changed_since(since)),
                (_, None) => removed_since(root, after, &change.path, since),
            })
            .cloned()
            .collect();
        Ok(changes)
    }
}

/// Two reads of change notification as one (`None`, "could not say", wins).
fn union(
    before: Option<HashSet<String>>,
    fresh: Option<HashSet<String>>,
) -> Option<HashSet<String>> {
    let (mut before, fresh) = (before?, fresh?);
    before.extend(fresh);
    Some(before)
}

/// Whether the removal of `path` happened since `since`: its nearest surviving directory (the
/// root at last) changed since then.
fn removed_since(root: &Path, after: &Manifest, path: &str, since: (i64, i64)) -> bool {
    let mut parent = path;
    while let Some((up, _)) = parent.rsplit_once('/') {
        if let Some(entry) = after.get(up) {
            return entry.changed_since(since);
        }
        parent = up;
    }
    std::fs::symlink_metadata(root).map_or(true, |meta| meta_changed_since(&meta, since))
}
