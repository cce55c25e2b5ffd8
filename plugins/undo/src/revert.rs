//! Reverting turns: the changes of every turn reverted are composed per path (what the
//! earliest change found, what the latest left), then checked before anything is touched:
//! a path whose content is no longer what the turns left was changed since by someone else
//! and is a conflict; a path whose earlier content has no object in the store (a file over the
//! size cap, an object removed) is a missing snapshot. Either refuses the whole undo, naming
//! the paths. Only then are the paths put back: what the turns created is removed (directories
//! only when empty), what they removed or changed is written again from the store through a
//! temporary name and a rename, with its permission bits.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::events::ChangeEvent;
use crate::scan::{Kind, ScanError, Snap, snap_of};
use crate::store::{Store, StoreError};

/// One path to put back: what it held before the first reverted change and after the last.
#[derive(Debug, Clone)]
struct Target {
    path: PathBuf,
    shown: String,
    before: Option<Snap>,
    after: Option<Snap>,
}

/// Why an undo did nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("nothing to undo: {0}")]
    Nothing(String),
    #[error("not undone: the changes of a call in these turns were not recorded ({0})")]
    Unrecorded(String),
    #[error("not undone: no snapshot of the earlier content of {0} (nothing was changed)")]
    Missing(String),
    #[error(
        "not undone: changed since by someone else: {0} (nothing was changed; put them back as the turn left them, or edit them by hand)"
    )]
    Conflict(String),
    #[error("the undo stopped partway: {0}")]
    Io(String),
}

/// The composed targets of `events` (in log order), keyed by absolute path.
fn compose(events: &[&ChangeEvent]) -> Vec<Target> {
    let mut targets: BTreeMap<PathBuf, Target> = BTreeMap::new();
    for event in events {
        for change in &event.changes {
            let path = Path::new(&event.root).join(&change.path);
            targets
                .entry(path.clone())
                .and_modify(|target| target.after = change.after.clone())
                .or_insert_with(|| Target {
                    path,
                    shown: change.path.clone(),
                    before: change.before.clone(),
                    after: change.after.clone(),
                });
        }
    }
    targets.into_values().collect()
}

/// Whether `now` is what `left` says the turns left.
fn matches(now: Option<&Snap>, left: Option<&Snap>) -> bool {
    match (now, left) {
        (None, None) => true,
        (Some(now), Some(left)) if now.kind == Kind::Dir && left.kind == Kind::Dir => true,
        (Some(now), Some(left)) => {
            now.kind == left.kind && now.hash == left.hash && now.unhashed == left.unhashed
        }
        // A directory the turns made and someone removed since: nothing of it to take back.
        (None, Some(left)) => left.kind == Kind::Dir,
        (Some(_), None) => false,
    }
}

fn now_of(path: &Path, max_file_bytes: u64) -> Result<Option<Snap>, ScanError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => snap_of(path, &meta, max_file_bytes, None).map(Some),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ScanError::Io {
            path: path.display().to_string(),
            source,
        }),
    }
}

fn listed(paths: &[String]) -> String {
    paths.join(", ")
}

/// Checks `events` against the workspace and the store, then puts every path back; answers
/// the paths put back.
pub(crate) fn revert(
    events: &[&ChangeEvent],
    store: &Store,
    max_file_bytes: u64,
) -> Result<Vec<String>, Refusal> {
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|event| event.unrecorded.clone())
        .collect();
    if !reasons.is_empty() {
        return Err(Refusal::Unrecorded(reasons.join("; ")));
    }
    let targets = compose(events);
    let missing: Vec<String> = targets
        .iter()
        .filter(|target| {
            target.before.as_ref().is_some_and(|before| {
                before.kind != Kind::Dir
                    && before.hash.as_deref().is_none_or(|hash| !store.has(hash))
            })
        })
        .map(|target| target.shown.clone())
        .collect();
    if !missing.is_empty() {
        return Err(Refusal::Missing(listed(&missing)));
    }
    let mut conflicts = Vec::new();
    let mut work = Vec::new();
    for target in targets {
        let now = now_of(&target.path, max_file_bytes).map_err(|e| Refusal::Io(e.to_string()))?;
        if !matches(now.as_ref(), target.after.as_ref()) {
            conflicts.push(target.shown.clone());
        } else if !same(now.as_ref(), target.before.as_ref()) {
            work.push((target, now));
        }
    }
    if !conflicts.is_empty() {
        return Err(Refusal::Conflict(listed(&conflicts)));
    }
    apply(&work, store).map_err(|error| Refusal::Io(error.to_string()))?;
    Ok(work.into_iter().map(|(target, _)| target.shown).collect())
}

/// Whether `now` already is `before` (nothing to do for the path).
fn same(now: Option<&Snap>, before: Option<&Snap>) -> bool {
    match (now, before) {
        (None, None) => true,
        (Some(now), Some(before)) => now == before,
        _ => false,
    }
}

#[derive(Debug, thiserror::Error)]
enum ApplyError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ApplyError + '_ {
    move |source| ApplyError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Puts each path of `work` back, in an order that lets each step succeed: what must go
/// first (deepest directories last of all), then directories to make (shallowest first),
/// then files and links.
fn apply(work: &[(Target, Option<Snap>)], store: &Store) -> Result<(), ApplyError> {
    let kind_of = |snap: &Option<Snap>| snap.as_ref().map(|snap| snap.kind);
    // Removals: a path the turns made, or one whose kind must change.
    let mut dirs_to_remove = Vec::new();
    for (target, now) in work {
        let Some(current) = kind_of(now) else {
            continue;
        };
        if kind_of(&target.before) == Some(current) {
            continue;
        }
        match current {
            Kind::Dir => dirs_to_remove.push(target.path.clone()),
            _ => fs::remove_file(&target.path).map_err(io(&target.path))?,
        }
    }
    dirs_to_remove.sort_by_key(|path| std::cmp::Reverse(path.components().count()));
    for dir in dirs_to_remove {
        // Not empty: it holds what someone else put there since; it stays.
        let _ = fs::remove_dir(&dir);
    }
    let mut ordered: Vec<&(Target, Option<Snap>)> = work.iter().collect();
    ordered.sort_by_key(|(target, _)| target.path.components().count());
    for (target, now) in &ordered {
        let Some(before) = &target.before else {
            continue;
        };
        let path = &target.path;
        match before.kind {
            Kind::Dir => {
                fs::create_dir_all(path).map_err(io(path))?;
                set_mode(path, before.mode)?;
            }
            Kind::File => {
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(io(parent))?;
                }
                let unchanged_content = now
                    .as_ref()
                    .is_some_and(|now| now.kind == Kind::File && now.hash == before.hash);
                if !unchanged_content {
                    let bytes = store.get(before.hash.as_deref().unwrap_or_default())?;
                    write_replacing(path, &bytes)?;
                }
                set_mode(path, before.mode)?;
            }
            Kind::Symlink => {
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(io(parent))?;
                }
                let bytes = store.get(before.hash.as_deref().unwrap_or_default())?;
                let target_path = PathBuf::from(String::from_utf8_lossy(&bytes).into_owned());
                if fs::symlink_metadata(path).is_ok() {
                    fs::remove_file(path).map_err(io(path))?;
                }
                std::os::unix::fs::symlink(&target_path, path).map_err(io(path))?;
            }
        }
    }
    Ok(())
}

fn set_mode(path: &Path, mode: u32) -> Result<(), ApplyError> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io(path))
}

/// Writes `bytes` at `path` through a temporary name beside it and a rename.
fn write_replacing(path: &Path, bytes: &[u8]) -> Result<(), ApplyError> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.dsh-undo-{}", std::process::id()));
    fs::write(&temporary, bytes).map_err(io(&temporary))?;
    fs::rename(&temporary, path).map_err(io(path))
}
