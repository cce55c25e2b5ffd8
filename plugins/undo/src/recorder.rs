//! The recorder: per working directory, the baseline (the last scan) and how many recorded
//! calls are running in it. The first call to start in an idle workspace scans it, so that
//! whatever changed since the last call (a person's edits, an undo) becomes the baseline and
//! is never counted as the call's; each call's end scans again and answers what differs from
//! the baseline, which then moves on. Calls that overlap in one workspace share the baseline:
//! each change is counted once, by the call that ends first after it (both are of the same
//! session's turn unless two sessions share a directory).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::lock;

use crate::scan::{Change, Manifest, ScanError, Scope, diff, scan};
use crate::store::Store;

#[derive(Debug, Default)]
struct Workspace {
    baseline: Manifest,
    active: usize,
}

/// Limits every scan obeys.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) exclude: Vec<PathBuf>,
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
    scope: Scope,
    open: bool,
}

impl Drop for Recording {
    fn drop(&mut self) {
        if self.open {
            let mut workspace = lock(&self.workspace);
            workspace.active = workspace.active.saturating_sub(1);
        }
    }
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
            max_file_bytes: self.limits.max_file_bytes,
            max_entries: self.limits.max_entries,
        }
    }

    /// A call starts in `root` (blocking: may scan).
    pub(crate) fn begin(&self, root: &Path) -> Result<Recording, ScanError> {
        let workspace = lock(&self.workspaces)
            .entry(root.to_path_buf())
            .or_default()
            .clone();
        let scope = self.scope(root);
        {
            let mut state = lock(&workspace);
            if state.active == 0 {
                state.baseline = scan(&scope, &state.baseline, &self.store)?;
            }
            state.active += 1;
        }
        Ok(Recording {
            workspace,
            scope,
            open: true,
        })
    }

    /// The call ends: what changed since the baseline (blocking: scans).
    pub(crate) fn end(&self, mut recording: Recording) -> Result<Vec<Change>, ScanError> {
        recording.open = false;
        let mut state = lock(&recording.workspace);
        state.active = state.active.saturating_sub(1);
        let after = scan(&recording.scope, &state.baseline, &self.store)?;
        let changes = diff(&state.baseline, &after);
        state.baseline = after;
        Ok(changes)
    }
}
