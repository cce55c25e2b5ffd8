//! The JSONL store's trash as a migration sees it: entries `<id>-<milliseconds>`, each a
//! deleted session's directory moved aside whole (see the store's trash). Going to PostgreSQL
//! the newest entry of each id becomes a row marked trashed at that time; coming back, a row
//! marked trashed becomes such an entry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dsh_session_jsonl::{Encoding, ListedSession, read_header};

use super::{MigrateError, unreadable, write_failed};

/// The trash beside the sessions of `home` (the shipped profiles' `trash: !home trash`).
pub(super) fn trash_root(home: &Path) -> PathBuf {
    home.join("trash")
}

/// How a trashed session is named in the report.
pub(super) fn in_trash(id: &str) -> String {
    format!("{id} (in the trash)")
}

/// A trashed session: its log, and when it was deleted.
pub(super) struct Trashed {
    pub(super) listed: ListedSession,
    pub(super) trashed_at: i64,
}

/// The newest entry of each id in `trash`, by id; an entry whose log does not read is named
/// among the failures. No trash: nothing.
pub(super) fn newest_entries(
    trash: &Path,
) -> (BTreeMap<String, Trashed>, Vec<(String, MigrateError)>) {
    let mut newest: BTreeMap<String, Trashed> = BTreeMap::new();
    let mut broken = Vec::new();
    let Ok(entries) = std::fs::read_dir(trash) else {
        return (newest, broken);
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((id, stamp)) = name.rsplit_once('-') else {
            continue;
        };
        let Ok(trashed_at) = stamp.parse::<i64>() else {
            continue;
        };
        if newest
            .get(id)
            .is_some_and(|kept| kept.trashed_at >= trashed_at)
        {
            continue;
        }
        let dir = entry.path();
        let Some(path) = [Encoding::Zstd, Encoding::Raw]
            .map(|encoding| dir.join(encoding.file_name()))
            .into_iter()
            .find(|path| path.is_file())
        else {
            continue;
        };
        match read_header(&path) {
            Ok(header) if header.id == id => {
                let listed = ListedSession { path, header };
                newest.insert(id.to_owned(), Trashed { listed, trashed_at });
            }
            Ok(header) => broken.push((
                id.to_owned(),
                unreadable(
                    id,
                    format!("{}: its header names `{}`", path.display(), header.id),
                ),
            )),
            Err(error) => broken.push((
                id.to_owned(),
                unreadable(id, format!("{}: {error}", path.display())),
            )),
        }
    }
    (newest, broken)
}

/// Where session `id` deleted at `trashed_at` goes in `trash`; refused when it is there.
pub(super) fn free_entry(trash: &Path, id: &str, trashed_at: i64) -> Result<PathBuf, MigrateError> {
    let target = trash.join(format!("{id}-{trashed_at}"));
    match target.exists() {
        true => Err(MigrateError::AlreadyThere {
            id: id.to_owned(),
            place: target.display().to_string(),
        }),
        false => Ok(target),
    }
}

/// Moves the session directory `dir` just written for `id` to `target` in the trash; when it
/// cannot, the directory is removed again (a trashed session must not come back as a live one).
pub(super) fn move_in(dir: &Path, target: &Path, id: &str) -> Result<(), MigrateError> {
    let moved = target
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::rename(dir, target));
    moved.map_err(|error| {
        let _ = std::fs::remove_dir_all(dir);
        write_failed(id, format!("into {}: {error}", target.display()))
    })
}
