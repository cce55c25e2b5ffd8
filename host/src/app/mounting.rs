//! The mounted application: a config tree (rows from `dsh-loader`) turned into fibers, kept in
//! step with later versions of the tree and with changed plugin libraries.
//!
//! Rows map to fibers by id. A config edit remounts only the rows whose fields changed; a changed
//! library remounts the rows that run it once the new copy loaded and checked; a library that
//! appears activates the rows that were waiting for it.

use dsh_plugin_api::lock;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_loader::{IsolateTarget, ResolvedRow, RowDiff};

use crate::fast_map::FastMap;
use crate::library::{
    FileIdentity, Libraries, LoadError, library_file_name, select_export, split_spec,
};
use crate::runtime::{FiberId, MountSpec, Runtime, Scope, Source};

/// A row that has a fiber.
struct Mounted {
    fiber: FiberId,
    parent: Option<FiberId>,
    /// The scope the row was mounted in.
    scope: Arc<Scope>,
    /// The scope its children see (the group's isolation applied).
    children_scope: Arc<Scope>,
    kept: Kept,
}

/// What a mounted row keeps of its row.
enum Kept {
    /// A plugin row, whole: a changed library mounts it again from it.
    Plugin(ResolvedRow),
    /// A group: the ids of the rows below it, which go with it. Not the rows themselves: each
    /// is kept by its own entry, and copying a group's subtree for every group was a sixth of
    /// a mount's allocations.
    Group { below: Vec<String> },
}

/// Why a changed library was not taken up; the rows running it keep their version.
#[derive(Debug, thiserror::Error)]
pub enum LibraryChangeError {
    /// The file could not be looked at again (it went away or is unreadable).
    #[error("{}: {source}", path.display())]
    Identity {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Load(#[from] LoadError),
}

pub struct App {
    runtime: Runtime,
    libraries: Arc<Libraries>,
    /// The last tree that was mounted (the "last good" one).
    tree: Mutex<Vec<ResolvedRow>>,
    mounted: Mutex<FastMap<String, Mounted>>,
}

impl App {
    pub fn new(runtime: Runtime, libraries: Arc<Libraries>) -> Self {
        runtime.set_resolver(libraries.clone());
        Self {
            runtime,
            libraries,
            tree: Mutex::new(Vec::new()),
            mounted: Mutex::default(),
        }
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub fn libraries(&self) -> &Arc<Libraries> {
        &self.libraries
    }

    /// Mounts every row of `rows` (the first tree). The libraries are loaded on a blocking
    /// thread, in row order, while the rows whose library is already loaded start on this
    /// one: a row's start (a sandbox probe, a store read) overlaps the loading of the rows
    /// after it instead of waiting for the last library. The tree is not settled before
    /// every row is mounted.
    pub async fn mount_tree(&self, rows: Vec<ResolvedRow>) {
        let _mounting = self.runtime.mounting();
        let root = Scope::root();
        let names = plugin_names_by_row(&rows);
        // The HTTP client reads the system's trust store (some 300 files) on a thread of its
        // own; a tree without the `http` row does not pay for it (some 1.3 ms of the 8 ms to
        // start 100 rows, on two cores).
        if names
            .iter()
            .flatten()
            .any(|name| name == crate::builtin::HTTP_ROW)
        {
            crate::builtin::prewarm_http();
        }
        // Each library asked once (finding one looks at the plugin folders): a tree names
        // few libraries in many rows.
        let all_loaded = {
            let distinct: HashSet<&str> = names.iter().flatten().map(String::as_str).collect();
            distinct.iter().all(|name| self.libraries.is_loaded(name))
        };
        // Nothing to load (a tree mounted again in this process): no thread, no waits.
        let mut loading = (!all_loaded).then(|| self.preload(names));
        for row in &rows {
            let Some(loaded) = &mut loading else {
                self.mount_row(row, None, &root);
                continue;
            };
            // One message per top-level row once its libraries (and its children's) are
            // loaded; a closed channel (the thread gone) leaves the loading to `mount_row`.
            let _ = loaded.recv().await;
            self.mount_row(row, None, &root);
            // The rows just mounted start before the next library is awaited.
            tokio::task::yield_now().await;
        }
        *lock(&self.tree) = rows;
    }

    /// Loads the libraries `names` lists (by top-level row) on a blocking thread, telling
    /// after each top-level row. Resolving a row's library again afterwards finds it loaded;
    /// what fails to load is reported by the mount, which tries it once more.
    fn preload(&self, names: Vec<Vec<String>>) -> tokio::sync::mpsc::UnboundedReceiver<()> {
        let (done, loaded) = tokio::sync::mpsc::unbounded_channel();
        let libraries = self.libraries.clone();
        tokio::task::spawn_blocking(move || {
            for row in names {
                for name in row {
                    let _ = libraries.resolve_spec(&name);
                }
                if done.send(()).is_err() {
                    return;
                }
            }
        });
        loaded
    }

    fn mount_row(&self, row: &ResolvedRow, parent: Option<FiberId>, scope: &Arc<Scope>) {
        if row.disabled {
            return;
        }
        if row.children.is_some() && !row.inject.is_empty() {
            // A group that waited on a service would drop its children whenever the service
            // went away and could not bring them back on its own; the rows that need the
            // service wait for it themselves.
            tracing::warn!(
                "row `{}`: `inject` on a group row is ignored; put it on the rows inside the group",
                row.id
            );
        }
        let (source, label, row_scope) = match &row.children {
            Some(_) => {
                let isolated = row
                    .isolate
                    .iter()
                    .map(|(name, target)| {
                        let realm = match target {
                            IsolateTarget::Private => self.runtime.realm(None),
                            IsolateTarget::Named(label) => self.runtime.realm(Some(label)),
                        };
                        (name.clone(), realm)
                    })
                    .collect();
                (
                    Source::Group,
                    "group".to_owned(),
                    Scope::isolate(scope, isolated),
                )
            }
            None => (
                self.libraries.resolve_spec(&row.name),
                row.name.clone(),
                scope.clone(),
            ),
        };
        match &source {
            Source::Missing(reason) => tracing::warn!("row `{}` waits (PENDING): {reason}", row.id),
            Source::Broken(reason) => {
                tracing::error!("row `{}` cannot load its plugin: {reason}", row.id)
            }
            _ => {}
        }
        let config = if row.config.is_null() {
            "{}".to_owned()
        } else {
            row.config.to_string()
        };
        let spec = MountSpec {
            row_id: row.id.clone(),
            label,
            source,
            config,
            inject: if row.children.is_some() {
                Vec::new()
            } else {
                row.inject.clone()
            },
        };
        let fiber = self.runtime.mount(parent, scope.clone(), spec);
        lock(&self.mounted).insert(
            row.id.clone(),
            Mounted {
                fiber,
                parent,
                scope: scope.clone(),
                children_scope: row_scope.clone(),
                kept: match &row.children {
                    Some(_) => {
                        let mut below = Vec::new();
                        each_below(row, &mut |id| below.push(id.to_owned()));
                        Kept::Group { below }
                    }
                    None => Kept::Plugin(row.clone()),
                },
            },
        );
        if let Some(children) = &row.children {
            for child in children {
                self.mount_row(child, Some(fiber), &row_scope);
            }
        }
    }

    /// Disposes the fiber of row `id` (and, for a group, its children).
    async fn unmount_row(&self, id: &str) -> Option<Mounted> {
        let mounted = {
            let mut table = lock(&self.mounted);
            let mounted = table.remove(id)?;
            if let Kept::Group { below } = &mounted.kept {
                for id in below {
                    table.remove(id);
                }
            }
            mounted
        };
        self.runtime.dispose(mounted.fiber).await;
        Some(mounted)
    }

    /// Disposes and mounts row `id` again from `row` (with a freshly resolved plugin), in the
    /// place it had; used when only its library changed, so the place is still right.
    async fn remount_row(&self, id: &str, row: &ResolvedRow) {
        let Some(old) = self.unmount_row(id).await else {
            return;
        };
        self.mount_row(row, old.parent, &old.scope);
    }

    /// Moves the running tree to `rows`: removed and changed rows are disposed first, then
    /// changed and added rows are mounted parents first at their place in the new tree (a row
    /// may have moved to another group, or its group may have new isolation); rows that did
    /// not change are left alone unless a remounted group holds them.
    pub async fn apply_tree(&self, rows: Vec<ResolvedRow>) -> RowDiff {
        let old = lock(&self.tree).clone();
        let diff = dsh_loader::diff(&old, &rows);
        for id in diff.removed.iter().chain(&diff.changed) {
            self.unmount_row(id).await;
        }
        let by_id = index(&rows);
        let to_mount: std::collections::HashSet<&str> = diff
            .changed
            .iter()
            .chain(&diff.added)
            .map(String::as_str)
            .collect();
        // A mounted group brings its current children with it.
        let mut done = std::collections::HashSet::new();
        for row in preorder(&rows) {
            let id = row.id.as_str();
            if !to_mount.contains(id) || done.contains(id) || lock(&self.mounted).contains_key(id) {
                continue;
            }
            self.mount_in_place(id, row, &by_id);
            each_below(row, &mut |id| {
                done.insert(id);
            });
        }
        *lock(&self.tree) = rows;
        diff
    }

    /// Mounts a row under its group (when the group is mounted) or at the root.
    fn mount_in_place(
        &self,
        id: &str,
        row: &ResolvedRow,
        by_id: &FastMap<&str, (&ResolvedRow, Option<&str>)>,
    ) {
        let parent_group = by_id.get(id).and_then(|(_, parent)| *parent);
        let placement = match parent_group {
            Some(group) => {
                let mounted = lock(&self.mounted);
                mounted
                    .get(group)
                    .map(|group_row| (Some(group_row.fiber), group_row.children_scope.clone()))
            }
            None => Some((None, Scope::root())),
        };
        if let Some((parent, scope)) = placement {
            self.mount_row(row, parent, &scope);
        }
    }

    /// Handles a changed or new library file: loads it (a unique copy when a version is already
    /// loaded), and only if that succeeds remounts the rows that name it.
    pub async fn library_changed(&self, path: &Path) -> Result<usize, LibraryChangeError> {
        let Some(file) = path.file_name().and_then(|name| name.to_str()) else {
            return Ok(0);
        };
        let rows = self.rows_naming(file);
        if rows.is_empty() {
            return Ok(0);
        }
        // Only the first match in lookup order counts for those rows.
        let library_name = rows
            .first()
            .map(|(_, row)| split_spec(&row.name).0.to_owned())
            .unwrap_or_default();
        match self.libraries.find(&library_name) {
            Ok(first) if first == path => {}
            _ => return Ok(0),
        }
        let loaded = match self.libraries.loaded(path) {
            Some(previous) => {
                let current =
                    FileIdentity::of(path).map_err(|source| LibraryChangeError::Identity {
                        path: path.to_owned(),
                        source,
                    })?;
                if current == previous.identity {
                    return Ok(0);
                }
                self.libraries.reload(path)?
            }
            None => self.libraries.get_or_load(path)?,
        };
        tracing::info!(
            "loaded {} (plugin-api {})",
            loaded.loaded_from.display(),
            loaded.api_version
        );
        let mut count = 0;
        for (id, row) in rows {
            let (_, export) = split_spec(&row.name);
            if let Source::Broken(reason) = select_export(&loaded, export) {
                tracing::error!("row `{id}` keeps its previous version: {reason}");
                continue;
            }
            self.remount_row(&id, &row).await;
            count += 1;
        }
        Ok(count)
    }

    /// Mounted plugin rows whose library file is `file`.
    fn rows_naming(&self, file: &str) -> Vec<(String, ResolvedRow)> {
        let mounted = lock(&self.mounted);
        let mut rows: Vec<(String, ResolvedRow)> = mounted
            .iter()
            .filter_map(|(id, mounted)| match &mounted.kept {
                Kept::Plugin(row) if library_file_name(split_spec(&row.name).0) == file => {
                    Some((id.clone(), row.clone()))
                }
                _ => None,
            })
            .collect();
        rows.sort_by_key(|(_, row)| row.id.clone());
        rows
    }

    /// Row ids with their fibers, for diagnostics.
    pub fn row_fibers(&self) -> BTreeMap<String, FiberId> {
        lock(&self.mounted)
            .iter()
            .map(|(id, mounted)| (id.clone(), mounted.fiber))
            .collect()
    }

    /// Rows that are disabled in the current tree (not mounted).
    pub fn disabled_rows(&self) -> Vec<String> {
        self.disabled_row_names()
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    /// The disabled rows' ids and plugin names (a disabled group's own, not its rows').
    pub fn disabled_row_names(&self) -> Vec<(String, String)> {
        let tree = lock(&self.tree);
        let mut out = Vec::new();
        collect_disabled(&tree, &mut out);
        out
    }

    /// The plugin directories the host watches, in lookup order.
    pub fn plugin_dirs(&self) -> Vec<PathBuf> {
        self.libraries.dirs().to_vec()
    }
}

/// Calls `found` with the id of every row below `row`.
fn each_below<'a>(row: &'a ResolvedRow, found: &mut impl FnMut(&'a str)) {
    for child in row.children.iter().flatten() {
        found(child.id.as_str());
        each_below(child, found);
    }
}

fn collect_disabled(rows: &[ResolvedRow], out: &mut Vec<(String, String)>) {
    for row in rows {
        if row.disabled {
            out.push((row.id.clone(), row.name.clone()));
        } else if let Some(children) = &row.children {
            collect_disabled(children, out);
        }
    }
}

/// Every row of the tree, each group before its children, in file order.
fn preorder(rows: &[ResolvedRow]) -> Vec<&ResolvedRow> {
    let mut out = Vec::new();
    let mut stack: Vec<&ResolvedRow> = rows.iter().rev().collect();
    while let Some(row) = stack.pop() {
        out.push(row);
        if let Some(children) = &row.children {
            stack.extend(children.iter().rev());
        }
    }
    out
}

/// The plugins each top-level row of `rows` mounts.
fn plugin_names_by_row(rows: &[ResolvedRow]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|row| {
            let mut names = Vec::new();
            each_plugin(row, &mut |name| names.push(name.to_owned()));
            names
        })
        .collect()
}

/// Calls `found` with each plugin `row` mounts: its own, or its group's enabled rows' (a
/// disabled row mounts nothing, a disabled group none of its rows).
fn each_plugin<'a>(row: &'a ResolvedRow, found: &mut impl FnMut(&'a str)) {
    if row.disabled {
        return;
    }
    match &row.children {
        Some(children) => children.iter().for_each(|child| each_plugin(child, found)),
        None => found(&row.name),
    }
}

/// Every row of the tree by id, with the id of the group holding it.
fn index(rows: &[ResolvedRow]) -> FastMap<&str, (&ResolvedRow, Option<&str>)> {
    let mut out = FastMap::default();
    let mut stack: Vec<(&ResolvedRow, Option<&str>)> = rows.iter().map(|row| (row, None)).collect();
    while let Some((row, parent)) = stack.pop() {
        out.insert(row.id.as_str(), (row, parent));
        if let Some(children) = &row.children {
            stack.extend(children.iter().map(|child| (child, Some(row.id.as_str()))));
        }
    }
    out
}
