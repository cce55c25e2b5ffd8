//! The JSONL store's trash as a migration sees it: entries named as the store names them
//! (`dsh_session_jsonl::trash_entry_name`), each a deleted session's directory moved aside
//! whole. Going to PostgreSQL
//! the newest entry of each id becomes a row marked trashed at that time; coming back, a row
//! marked trashed becomes such an entry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dsh_session_jsonl::{
    Encoding, ListedSession, parse_trash_entry, read_header, trash_entry_name,
};

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

/// The newest entry of each id in `trash` (the stamps compared first, so only that entry is
/// read), by id; one whose log does not read is named among the failures. No trash: nothing.
pub(super) fn newest_entries(
    trash: &Path,
) -> (BTreeMap<String, Trashed>, Vec<(String, MigrateError)>) {
    let mut newest: BTreeMap<String, (i64, PathBuf)> = BTreeMap::new();
    for entry in std::fs::read_dir(trash).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((id, stamp)) = parse_trash_entry(&name) else {
            continue;
        };
        let Ok(trashed_at) = i64::try_from(stamp) else {
            continue;
        };
        if newest.get(id).is_none_or(|(kept, _)| *kept < trashed_at) {
            newest.insert(id.to_owned(), (trashed_at, entry.path()));
        }
    }
    let mut read = BTreeMap::new();
    let mut broken = Vec::new();
    for (id, (trashed_at, dir)) in newest {
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
                read.insert(id, Trashed { listed, trashed_at });
            }
            Ok(header) => {
                let problem = format!("{}: its header names `{}`", path.display(), header.id);
                broken.push((id.clone(), unreadable(&id, problem)));
            }
            Err(error) => {
                let problem = format!("{}: {error}", path.display());
                broken.push((id.clone(), unreadable(&id, problem)));
            }
        }
    }
    (read, broken)
}

/// Where session `id` deleted at `trashed_at` goes in `trash`; refused when it is there.
pub(super) fn free_entry(trash: &Path, id: &str, trashed_at: i64) -> Result<PathBuf, MigrateError> {
    let stamp = u64::try_from(trashed_at).unwrap_or_default();
    let target = trash.join(trash_entry_name(id, stamp));
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
