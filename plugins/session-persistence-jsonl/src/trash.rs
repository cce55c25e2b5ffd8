//! The store's trash: a deleted session's directory moved aside whole (nothing is erased), and
//! moved back where it was on a restore. Entries are `<id>-<milliseconds>`, so a session
//! deleted, restored and deleted again leaves one entry per deletion, and a restore takes the
//! newest.

use std::path::{Path, PathBuf};

use dsh_session_jsonl::{
    ARCHIVED_FILE, Encoding, check_session_id, find_session, parse_trash_entry, read_header,
    session_dir, trash_entry_name,
};
use dsh_sessions_seam::{SessionError, SessionErrorKind};

use crate::store::{error, lookup, storage};

/// The log of stored session `id` under `root` (`NotFound` when there is none).
pub(crate) fn stored_log(
    root: &Path,
    encoding: Encoding,
    id: &str,
) -> Result<PathBuf, SessionError> {
    find_session(root, encoding, id)
        .map_err(lookup)?
        .ok_or_else(|| {
            error(
                SessionErrorKind::NotFound,
                format!("no session `{id}` under {}", root.display()),
            )
        })
}

/// The directory of stored session `id` under `root`, its log's.
pub(crate) fn stored_dir(
    root: &Path,
    encoding: Encoding,
    id: &str,
) -> Result<PathBuf, SessionError> {
    let path = stored_log(root, encoding, id)?;
    Ok(path.parent().map_or_else(|| root.to_owned(), PathBuf::from))
}

/// Marks session `id` under `root` archived, or not.
pub(crate) fn set_archived(
    root: &Path,
    encoding: Encoding,
    id: &str,
    archived: bool,
) -> Result<(), SessionError> {
    let marker = stored_dir(root, encoding, id)?.join(ARCHIVED_FILE);
    let done = match archived {
        true => std::fs::write(&marker, ""),
        false => std::fs::remove_file(&marker).or_else(|problem| match problem.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(problem),
        }),
    };
    done.map_err(|problem| storage(format!("cannot mark {}: {problem}", marker.display())))
}

/// Moves session `id`'s directory under `root` into `trash`.
pub(crate) fn move_to_trash(
    root: &Path,
    trash: &Path,
    encoding: Encoding,
    id: &str,
) -> Result<(), SessionError> {
    let dir = stored_dir(root, encoding, id)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        });
    // `find_session` refused any id that is not a plain name, so this stays one entry of the
    // trash.
    let target = trash.join(trash_entry_name(id, stamp));
    std::fs::create_dir_all(trash)
        .and_then(|()| std::fs::rename(&dir, &target))
        .map_err(|problem| {
            storage(format!(
                "cannot move {} to {}: {problem}",
                dir.display(),
                target.display()
            ))
        })
}

/// Moves the newest trashed copy of session `id` back to where its header says it belongs.
pub(crate) fn restore(
    root: &Path,
    trash: &Path,
    encoding: Encoding,
    id: &str,
) -> Result<(), SessionError> {
    check_session_id(id)
        .map_err(|problem| error(SessionErrorKind::Invalid, problem.to_string()))?;
    let newest = newest_entry(trash, id)?.ok_or_else(|| {
        error(
            SessionErrorKind::NotFound,
            format!("no session `{id}` in the trash ({})", trash.display()),
        )
    })?;
    let log = newest.join(encoding.file_name());
    let header = read_header(&log).map_err(|problem| {
        error(
            SessionErrorKind::Unreadable,
            format!("the trashed session `{id}` does not read: {problem}"),
        )
    })?;
    let target = session_dir(root, header.cwd.as_deref(), id)
        .map_err(|problem| error(SessionErrorKind::Invalid, problem.to_string()))?;
    if target.exists() {
        return Err(error(
            SessionErrorKind::Invalid,
            format!("a session `{id}` is there already ({})", target.display()),
        ));
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|problem| storage(format!("cannot create {}: {problem}", parent.display())))?;
    }
    std::fs::rename(&newest, &target).map_err(|problem| {
        storage(format!(
            "cannot move {} back to {}: {problem}",
            newest.display(),
            target.display()
        ))
    })
}

/// The trash entry of `id` with the latest stamp.
fn newest_entry(trash: &Path, id: &str) -> Result<Option<PathBuf>, SessionError> {
    let entries = match std::fs::read_dir(trash) {
        Ok(entries) => entries,
        Err(problem) if problem.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(problem) => {
            return Err(storage(format!(
                "cannot read {}: {problem}",
                trash.display()
            )));
        }
    };
    let newest = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let (of, stamp) = parse_trash_entry(&name)?;
            (of == id).then(|| (stamp, entry.path()))
        })
        .max_by_key(|(stamp, _)| *stamp)
        .map(|(_, path)| path);
    Ok(newest)
}
