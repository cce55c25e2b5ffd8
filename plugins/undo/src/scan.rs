//! The workspace as the recorder sees it: every file, symlink and directory under the root
//! (not following links), each with what it holds (a file's or a link target's content hash,
//! its permission bits) and the `lstat` fields that tell whether it may have changed. A scan
//! hashes only entries whose fields differ from the previous scan, storing their content, so
//! a scan of an unchanged workspace costs one `lstat` per entry. Directories named `.git` are
//! never entered (a repository is left as it is), nor the excluded paths (the dsh home).
//! Names that are not UTF-8 are skipped (they cannot be written in the JSON log).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use dsh_plugin_api::{Deserialize, Serialize};

use crate::store::{Store, StoreError, digest};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "lowercase")]
pub(crate) enum Kind {
    File,
    Symlink,
    Dir,
}

/// What a path holds: enough to tell a change and, with the store, to bring it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Snap {
    pub(crate) kind: Kind,
    /// The content's object (a file's bytes, a link's target); none for a directory, and
    /// none for a file over the size cap, which has no snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hash: Option<String>,
    /// A file over the size cap: its size and times, so that a change to it still shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unhashed: Option<String>,
    /// Permission bits.
    pub(crate) mode: u32,
}

/// The `lstat` fields that change when a path's content or mode does (ctime cannot be set
/// from user space, so a tool that restores an old mtime still shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    dev: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) snap: Snap,
    stat: Stat,
    seen: u64,
}

impl Entry {
    /// Whether its inode changed (content, mode, links, a rename) at or after `since`
    /// (seconds and nanoseconds of the real-time clock).
    pub(crate) fn changed_since(&self, since: (i64, i64)) -> bool {
        self.stat.ctime >= since
    }
}

/// Whether `meta`'s inode changed at or after `since`.
pub(crate) fn meta_changed_since(meta: &fs::Metadata, since: (i64, i64)) -> bool {
    (meta.ctime(), meta.ctime_nsec()) >= since
}

/// Every path under a root (relative, `/`-separated) and what it holds, as of the last scan.
#[derive(Debug, Default)]
pub(crate) struct Manifest {
    entries: HashMap<String, Entry>,
    /// The number of the last scan; each entry carries the number of the scan that saw it.
    generation: u64,
    /// When the last scan started, less the clock's slack: an entry whose inode changed
    /// after that may have changed again within the same timestamp tick without its `lstat`
    /// fields showing it (git's "racily clean" entries), so it is read again.
    trusted_before: (i64, i64),
    /// How many entries each directory held when it was last listed (`""`: the root).
    children: HashMap<String, usize>,
}

impl Manifest {
    pub(crate) fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.get(path)
    }

    /// Removes the entries scan `generation` did not see where it looked (everywhere, or in
    /// the `listed` directories and under what was removed from them): their changes.
    fn sweep(&mut self, generation: u64, listed: Option<&[String]>) -> Vec<Change> {
        let unseen = |entry: &Entry| entry.seen != generation;
        let gone: Vec<String> = match listed {
            None => self
                .entries
                .iter()
                .filter(|(_, entry)| unseen(entry))
                .map(|(path, _)| path.clone())
                .collect(),
            Some(listed) => {
                let listed: HashSet<&str> = listed.iter().map(String::as_str).collect();
                let direct: Vec<String> = self
                    .entries
                    .iter()
                    .filter(|(path, entry)| unseen(entry) && listed.contains(parent_of(path)))
                    .map(|(path, _)| path.clone())
                    .collect();
                let dirs: HashSet<&str> = direct
                    .iter()
                    .filter(|path| {
                        self.entries
                            .get(*path)
                            .is_some_and(|e| e.snap.kind == Kind::Dir)
                    })
                    .map(String::as_str)
                    .collect();
                let under = |path: &str| {
                    let mut up = path;
                    while let Some((parent, _)) = up.rsplit_once('/') {
                        if dirs.contains(parent) {
                            return true;
                        }
                        up = parent;
                    }
                    false
                };
                let mut gone: Vec<String> = self
                    .entries
                    .iter()
                    .filter(|(path, entry)| {
                        unseen(entry) && !dirs.contains(path.as_str()) && under(path)
                    })
                    .map(|(path, _)| path.clone())
                    .collect();
                gone.extend(direct);
                gone
            }
        };
        gone.into_iter()
            .filter_map(|path| {
                let entry = self.entries.remove(&path)?;
                Some(Change {
                    path,
                    before: Some(entry.snap),
                    after: None,
                })
            })
            .collect()
    }

    /// Puts `entry` at `path`: the change, when what the path holds differs.
    fn put(&mut self, path: &str, entry: Entry) -> Option<Change> {
        let after = entry.snap.clone();
        let before = self
            .entries
            .insert(path.to_owned(), entry)
            .map(|old| old.snap);
        (before.as_ref() != Some(&after)).then(|| Change {
            path: path.to_owned(),
            before,
            after: Some(after),
        })
    }
}

/// Whether `item` is one of (or under) the scope's excluded paths.
fn excluded(scope: &Scope, item: &fs::DirEntry) -> bool {
    if scope.exclude.is_empty() {
        return false;
    }
    let path = item.path();
    scope
        .exclude
        .iter()
        .any(|excluded| path.starts_with(excluded))
}

/// Whether the workspace's `.gitignore` ignores `item` (under `prefix`, relative to the root).
/// An ignored folder is not entered, so what is under it is never read.
fn ignored(scope: &Scope, prefix: &str, item: &fs::DirEntry) -> bool {
    let Some(rules) = &scope.ignored else {
        return false;
    };
    let is_dir = item.file_type().is_ok_and(|kind| kind.is_dir());
    let path = scope.root.join(prefix).join(item.file_name());
    // The deepest file with a rule for the path decides, as in git (a `!` there keeps it).
    for file in rules.iter().rev() {
        match file.matched(&path, is_dir) {
            ignore::Match::None => continue,
            decided => return decided.is_ignore(),
        }
    }
    false
}

/// Why a scan could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScanError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the workspace {root} holds more than {max} entries (the undo row's maxEntries): its changes are not recorded"
    )]
    TooLarge { root: String, max: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where and how far a scan goes.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub(crate) root: PathBuf,
    pub(crate) exclude: Vec<PathBuf>,
    /// What git ignores in the workspace (a build folder, `node_modules`): not recorded, as
    /// git would not keep it either. The rules of each `.gitignore` from the repository's top
    /// down to the workspace, and `.git/info/exclude`, shallowest first.
    pub(crate) ignored: Option<std::sync::Arc<Vec<ignore::gitignore::Gitignore>>>,
    pub(crate) max_file_bytes: u64,
    pub(crate) max_entries: usize,
}

/// One changed path: what it held before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Change {
    pub(crate) path: String,
    pub(crate) before: Option<Snap>,
    pub(crate) after: Option<Snap>,
}

fn stat_of(meta: &fs::Metadata) -> Stat {
    Stat {
        size: meta.size(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
        ino: meta.ino(),
        dev: meta.dev(),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ScanError + '_ {
    move |source| ScanError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// What `path` holds now, its content hashed (and stored when `store` is given).
pub(crate) fn snap_of(
    path: &Path,
    meta: &fs::Metadata,
    max_file_bytes: u64,
    store: Option<&Store>,
) -> Result<Snap, ScanError> {
    let mode = meta.permissions().mode() & 0o7777;
    let kind = if meta.file_type().is_symlink() {
        Kind::Symlink
    } else if meta.is_dir() {
        Kind::Dir
    } else {
        Kind::File
    };
    let keep = |bytes: &[u8]| -> Result<String, ScanError> {
        Ok(match store {
            Some(store) => store.put(bytes)?,
            None => digest(bytes),
        })
    };
    let (hash, unhashed) = match kind {
        Kind::Dir => (None, None),
        Kind::Symlink => {
            let target = fs::read_link(path).map_err(io(path))?;
            (Some(keep(target.as_os_str().as_encoded_bytes())?), None)
        }
        Kind::File if meta.size() > max_file_bytes => {
            let stat = stat_of(meta);
            (
                None,
                Some(format!("{}:{:?}:{:?}", stat.size, stat.mtime, stat.ctime)),
            )
        }
        Kind::File => (Some(keep(&fs::read(path).map_err(io(path))?)?), None),
    };
    Ok(Snap {
        kind,
        hash,
        unhashed,
        mode,
    })
}

/// What one scan found: the changes, in path order, and the directories it listed.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    pub(crate) changes: Vec<Change>,
    pub(crate) listed: Vec<String>,
}

/// The directory holding `path` (`""`: the root).
fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// Where a scan starts: the root and all under it, or each of `only` alone, as
/// `(directory, its prefix, whether to go down)`.
fn starts(scope: &Scope, only: Option<&HashSet<String>>) -> Vec<(PathBuf, String, bool)> {
    match only {
        None => vec![(scope.root.clone(), String::new(), true)],
        Some(dirs) => dirs
            .iter()
            .map(|dir| {
                let prefix = match dir.is_empty() {
                    true => String::new(),
                    false => format!("{dir}/"),
                };
                (scope.root.join(dir), prefix, false)
            })
            .collect(),
    }
}

/// Scans `scope` into `manifest` in place: an entry whose `lstat` fields did not change is
/// only marked seen (no allocation, no read); every other is read, its content stored, and
/// answered as a change, as is every entry no longer there. With `only`, just those
/// directories are listed (what change notification said moved), and the directories that
/// appeared in them whole; every other entry is taken as it was.
pub(crate) fn scan(
    scope: &Scope,
    manifest: &mut Manifest,
    store: &Store,
    only: Option<&HashSet<String>>,
) -> Result<Scanned, ScanError> {
    manifest.generation += 1;
    let generation = manifest.generation;
    let trusted_before =
        std::mem::replace(&mut manifest.trusted_before, crate::clock::now_less_slack());
    let mut changes = Vec::new();
    let mut listed = Vec::new();
    let mut shrank = false;
    let mut count = 0usize;
    let mut relative = String::new();
    let mut pending = starts(scope, only);
    while let Some((dir, prefix, recursive)) = pending.pop() {
        let listing = match fs::read_dir(&dir) {
            Ok(listing) => listing,
            // Gone or unreadable while walking: what is under it is not the recorder's to know.
            Err(_) if dir != scope.root => continue,
            Err(error) => return Err(io(&dir)(error)),
        };
        let listed_dir = prefix.trim_end_matches('/').to_owned();
        // How many entries it holds now, and how many of those it held before: fewer known
        // than it held means something under it went away (and the sweep must look).
        let (mut present, mut known_present) = (0usize, 0usize);
        for item in listing.flatten() {
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            if name == ".git" || excluded(scope, &item) || ignored(scope, &prefix, &item) {
                continue;
            }
            // From the open directory (`fstatat`), not resolving the whole path again.
            let Ok(meta) = item.metadata() else {
                continue;
            };
            count += 1;
            if count > scope.max_entries {
                return Err(ScanError::TooLarge {
                    root: scope.root.display().to_string(),
                    max: scope.max_entries,
                });
            }
            relative.clear();
            relative.push_str(&prefix);
            relative.push_str(name);
            let stat = stat_of(&meta);
            let known = manifest.entries.get_mut(relative.as_str());
            let was_dir = known
                .as_ref()
                .is_some_and(|known| known.snap.kind == Kind::Dir);
            let was_known = known.is_some();
            if let Some(known) = known
                && known.stat == stat
                && known.stat.ctime < trusted_before
            {
                known.seen = generation;
                (present, known_present) = (present + 1, known_present + 1);
                if was_dir && recursive {
                    pending.push((item.path(), format!("{relative}/"), true));
                }
                continue;
            }
            let snap = match snap_of(&item.path(), &meta, scope.max_file_bytes, Some(store)) {
                Ok(snap) => snap,
                // Removed between the listing and the read: absent, as it now is.
                Err(ScanError::Io { .. }) => continue,
                Err(other) => return Err(other),
            };
            if snap.kind == Kind::Dir && (recursive || !was_dir) {
                pending.push((item.path(), format!("{relative}/"), true));
            }
            let entry = Entry {
                snap,
                stat,
                seen: generation,
            };
            changes.extend(manifest.put(&relative, entry));
            present += 1;
            known_present += usize::from(was_known);
        }
        let held = manifest.children.insert(listed_dir.clone(), present);
        shrank |= held.is_some_and(|held| known_present < held);
        listed.push(listed_dir);
    }
    // A partial scan in which no listed directory lost an entry has nothing to sweep (and
    // skips a pass over every entry of the workspace).
    if only.is_none() || shrank {
        changes.extend(manifest.sweep(generation, only.map(|_| listed.as_slice())));
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Scanned { changes, listed })
}
