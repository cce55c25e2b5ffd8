//! The hook files of one row: found per working directory (a relative path under it, `~/`
//! under the user's home) and read again when their size or modification time changed, so an
//! edit applies from the next hook on and a broken edit is reported once.
//!
//! Looking costs a stat of every file, and every hook point of every tool call asks (most
//! sessions have no hook file at all), so what a working directory found is kept while the
//! host's `fs_watch` follows the files' folders (`watch`): a change there that could touch one
//! of them makes the next point look again, and so does a call of the agent's that may have
//! written one (a `write` or `edit` of one, any `bash` command), without waiting for the watch
//! to report it. Without the watch, or for a file that is a symbolic link (an edit of its
//! target is not seen in its folder), every point looks again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use dsh_doc_limits::Limits;
use dsh_plugin_api::{Context, lock};
use dsh_trust_seam::is_trusted;

use crate::config::{ConfigError, Format, HookTable, Point, parse};

type Stamp = (SystemTime, u64);

/// A file as last read.
type Read = Arc<Result<HookTable, ConfigError>>;

/// At most this many working directories keep what they found: a host serves a handful of
/// workspaces.
const MAX_WORKSPACES: usize = 64;
/// At most this many folders are followed; past them, the files of new folders are looked at
/// every time.
const MAX_FOLDERS: usize = 128;

/// The files a session in one working directory has, in the configured order.
#[derive(Default)]
pub(crate) struct Tables {
    reads: Vec<Read>,
}

impl Tables {
    /// The files that read, in order.
    pub(crate) fn readable(&self) -> impl Iterator<Item = &HookTable> {
        self.reads
            .iter()
            .filter_map(|read| read.as_ref().as_ref().ok())
    }

    /// Whether any of them has hooks for `point`.
    pub(crate) fn has(&self, point: Point) -> bool {
        self.readable()
            .any(|table| table.groups.iter().any(|(at, _)| *at == point))
    }
}

struct Found {
    generation: u64,
    tables: Arc<Tables>,
}

/// The hook files of one row, found per working directory and read again when they change.
pub(crate) struct HookFiles {
    ctx: Context,
    format: Format,
    files: Vec<String>,
    read: Mutex<HashMap<PathBuf, (Stamp, Read)>>,
    /// Moves at every change a watch reports, so a kept look is looked again.
    generation: AtomicU64,
    /// The watch service is there and its watches hold: a kept look stays true until the
    /// generation moves.
    followed: AtomicBool,
    found: Mutex<HashMap<String, Found>>,
    /// Every file looked at, to tell a watch's changes that concern one.
    tracked: Mutex<HashSet<PathBuf>>,
    /// The folders a watch was started for.
    watched: Mutex<HashSet<PathBuf>>,
}

impl HookFiles {
    pub(crate) fn new(ctx: Context, format: Format, files: Vec<String>, followed: bool) -> Self {
        Self {
            ctx,
            format,
            files,
            read: Mutex::default(),
            generation: AtomicU64::new(0),
            followed: AtomicBool::new(followed),
            found: Mutex::default(),
            tracked: Mutex::default(),
            watched: Mutex::default(),
        }
    }

    /// Something that could be a hook file changed: the next point looks again.
    pub(crate) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// A watch could not be kept: nothing found is kept any more.
    pub(crate) fn unfollowed(&self) {
        self.followed.store(false, Ordering::Release);
    }

    /// Whether `path` is a hook file looked at, or a folder on the way to one.
    pub(crate) fn concerns(&self, path: &Path) -> bool {
        lock(&self.tracked)
            .iter()
            .any(|file| file.starts_with(path))
    }

    /// The tables of the files that exist for a session working in `cwd`, in the configured
    /// order; `report` hears once about each version of a file that does not read or skips
    /// something.
    pub(crate) fn tables(self: &Arc<Self>, cwd: &str, report: &dyn Fn(String)) -> Arc<Tables> {
        let generation = self.generation.load(Ordering::Acquire);
        let followed = self.followed.load(Ordering::Acquire);
        if followed
            && let Some(found) = lock(&self.found).get(cwd)
            && found.generation == generation
        {
            return found.tables.clone();
        }
        let mut paths: Vec<PathBuf> = Vec::new();
        let mut tables = Tables::default();
        let mut linked = false;
        // A project's own files (relative to its working directory) count once the person
        // trusts the project; a trust given later bumps the generation (`invalidate`).
        let trusted = is_trusted(&self.ctx, cwd);
        for file in &self.files {
            if is_projects(file) && !trusted {
                continue;
            }
            let Some(path) = resolve(file, Path::new(cwd)) else {
                continue;
            };
            if paths.contains(&path) {
                continue;
            }
            linked |= std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_symlink());
            if let Some(table) = self.table(&path, report) {
                tables.reads.push(table);
            }
            paths.push(path);
        }
        let tables = Arc::new(tables);
        if followed && !linked && self.follow(&paths) {
            let mut found = lock(&self.found);
            if found.len() >= MAX_WORKSPACES && !found.contains_key(cwd) {
                found.clear();
            }
            found.insert(
                cwd.to_owned(),
                Found {
                    generation,
                    tables: tables.clone(),
                },
            );
        }
        tables
    }

    /// Follows the folders of `paths`; false when one of them cannot be.
    fn follow(self: &Arc<Self>, paths: &[PathBuf]) -> bool {
        lock(&self.tracked).extend(paths.iter().cloned());
        for path in paths {
            let Some(folder) = path.parent() else {
                return false;
            };
            let mut watched = lock(&self.watched);
            if watched.contains(folder) {
                continue;
            }
            if watched.len() >= MAX_FOLDERS {
                return false;
            }
            watched.insert(folder.to_path_buf());
            drop(watched);
            dsh_path_follow::follow(self, folder.to_path_buf(), false, "hook-scripts");
        }
        true
    }

    fn table(&self, path: &Path, report: &dyn Fn(String)) -> Option<Read> {
        let meta = std::fs::metadata(path).ok().filter(|meta| meta.is_file())?;
        let stamp = (
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
        );
        if let Some((seen, table)) = lock(&self.read).get(path)
            && *seen == stamp
        {
            return Some(table.clone());
        }
        let shown = path.display().to_string();
        let table = dsh_doc_limits::read_capped(path, Limits::DOCUMENT.max_bytes)
            .map_err(|error| ConfigError::Read {
                path: shown.clone(),
                error,
            })
            .and_then(|text| parse(self.format, &shown, &text));
        match &table {
            Err(error) => report(format!("{error}")),
            Ok(table) => {
                for skipped in &table.skipped {
                    report(format!("{shown}: skipping {skipped}"));
                }
            }
        }
        let table = Arc::new(table);
        lock(&self.read).insert(path.to_path_buf(), (stamp, table.clone()));
        Some(table)
    }
}

/// Whether `file` is the project's (a path relative to the working directory).
fn is_projects(file: &str) -> bool {
    !file.starts_with("~/") && !Path::new(file).is_absolute()
}

/// `~/x` under the user's home, a relative path under `cwd`.
fn resolve(file: &str, cwd: &Path) -> Option<PathBuf> {
    if let Some(rest) = file.strip_prefix("~/") {
        let home = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
        return Some(Path::new(&home).join(rest));
    }
    let path = Path::new(file);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    })
}

impl dsh_path_follow::Followed for HookFiles {
    fn context(&self) -> &Context {
        &self.ctx
    }

    /// A hook file looked at, or a folder on the way to one.
    fn concerns(&self, _folder: &Path, changed: &Path) -> bool {
        HookFiles::concerns(self, changed)
    }

    fn invalidate(&self) {
        HookFiles::invalidate(self);
    }

    fn unfollowed(&self) {
        HookFiles::unfollowed(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_files_are_the_projects_and_tilde_the_users() {
        let cwd = Path::new("/work/project");
        assert_eq!(
            resolve(".claude/settings.json", cwd),
            Some(cwd.join(".claude/settings.json"))
        );
        assert_eq!(
            resolve("/etc/hooks.json", cwd),
            Some("/etc/hooks.json".into())
        );
    }
}
