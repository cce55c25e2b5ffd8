//! The workspace as the recorder sees it: every file, symlink and directory under the root
//! (not following links), each with what it holds (a file's or a link target's content hash,
//! its permission bits) and the `lstat` fields that tell whether it may have changed. A scan
//! hashes only entries whose fields differ from the previous scan, storing their content, so
//! a scan of an unchanged workspace costs one `lstat` per entry. Directories named `.git` are
//! never entered (a repository is left as it is), nor the excluded paths (the dsh home).
//! Names that are not UTF-8 are skipped (they cannot be written in the JSON log).

use std::collections::BTreeMap;
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
}

/// Every path under a root (relative, `/`-separated) and what it holds.
pub(crate) type Manifest = BTreeMap<String, Entry>;

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

/// Scans `scope`, reusing `previous`'s snap for every entry whose `lstat` fields did not
/// change and storing the content of every other.
pub(crate) fn scan(
    scope: &Scope,
    previous: &Manifest,
    store: &Store,
) -> Result<Manifest, ScanError> {
    let mut manifest = Manifest::new();
    let mut pending = vec![(scope.root.clone(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let listing = match fs::read_dir(&dir) {
            Ok(listing) => listing,
            // Gone or unreadable while walking: what is under it is not the recorder's to know.
            Err(error) if dir != scope.root => {
                let _ = error;
                continue;
            }
            Err(error) => return Err(io(&dir)(error)),
        };
        for item in listing.flatten() {
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            if name == ".git" {
                continue;
            }
            let path = item.path();
            if scope
                .exclude
                .iter()
                .any(|excluded| path.starts_with(excluded))
            {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            let relative = format!("{prefix}{name}");
            let stat = stat_of(&meta);
            let snap = match previous.get(&relative) {
                Some(known) if known.stat == stat => known.snap.clone(),
                _ => match snap_of(&path, &meta, scope.max_file_bytes, Some(store)) {
                    Ok(snap) => snap,
                    // Removed between the listing and the read: absent, as it now is.
                    Err(ScanError::Io { .. }) => continue,
                    Err(other) => return Err(other),
                },
            };
            if snap.kind == Kind::Dir {
                pending.push((path, format!("{relative}/")));
            }
            manifest.insert(relative, Entry { snap, stat });
            if manifest.len() > scope.max_entries {
                return Err(ScanError::TooLarge {
                    root: scope.root.display().to_string(),
                    max: scope.max_entries,
                });
            }
        }
    }
    Ok(manifest)
}

/// The paths whose snap differs between `before` and `after`, in path order.
pub(crate) fn diff(before: &Manifest, after: &Manifest) -> Vec<Change> {
    let mut changes = Vec::new();
    for (path, entry) in before {
        match after.get(path) {
            Some(now) if now.snap == entry.snap => {}
            now => changes.push(Change {
                path: path.clone(),
                before: Some(entry.snap.clone()),
                after: now.map(|now| now.snap.clone()),
            }),
        }
    }
    for (path, entry) in after {
        if !before.contains_key(path) {
            changes.push(Change {
                path: path.clone(),
                before: None,
                after: Some(entry.snap.clone()),
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}
