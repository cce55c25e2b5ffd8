//! `--to jsonl`: every session row written as a log under the sessions root (a trashed one then
//! moved into the trash as `<id>-<trashed_at>`)
//! with the JSONL store's writer (its lines as stored, in one append), read back and verified;
//! the listing's files (the listing, the archived marker) beside it as the store keeps them.

use std::path::{Path, PathBuf};

use dsh_session_jsonl::{
    ARCHIVED_FILE, CommittedLine, Encoding, ListingFile, SessionHeader, SessionWriter,
    WriterOptions, find_session, read_session,
};
use dsh_session_log::SessionEvent;
use tokio_postgres::Client;

use super::{MigrateError, Migrated, db, report, stored_events, unreadable, verify, write_failed};
use crate::cli::session::SessionCliError;

/// A stored session's row, as the JSONL side needs it.
struct Row {
    id: String,
    header: String,
    active_at: Option<i64>,
    title: Option<String>,
    archived: bool,
    /// When it was put in the trash; `None` for a listed session.
    trashed_at: Option<i64>,
}

fn row_of(id: String, row: &tokio_postgres::Row) -> Result<Row, tokio_postgres::Error> {
    Ok(Row {
        id,
        header: row.try_get(1)?,
        active_at: row.try_get(2)?,
        title: row.try_get(3)?,
        archived: row.try_get(4)?,
        trashed_at: row.try_get(5)?,
    })
}

pub(super) async fn migrate(
    client: &Client,
    (root, trash): (&Path, &Path),
    encoding: Option<Encoding>,
) -> Result<(), SessionCliError> {
    // The encoding asked for, else the one the root holds, else the store's default.
    let encoding = match encoding {
        Some(encoding) => encoding,
        None => dsh_session_archive::root_encoding(root)?.unwrap_or(Encoding::Zstd),
    };
    let rows = client
        .query(
            "SELECT id, header, active_at, title, archived, trashed_at FROM dsh_sessions
             ORDER BY trashed_at IS NOT NULL, created_at, id",
            &[],
        )
        .await
        .map_err(db("*"))?;
    let mut outcomes = Vec::new();
    for row in rows {
        let id: String = row.try_get(0).map_err(db("*"))?;
        let (label, outcome) = match row_of(id.clone(), &row) {
            Ok(row) => (
                match row.trashed_at {
                    Some(_) => super::trash::in_trash(&id),
                    None => id,
                },
                session_to_jsonl(client, (root, trash), encoding, &row).await,
            ),
            Err(error) => (id.clone(), Err(db(&id)(error))),
        };
        outcomes.push((label, outcome));
    }
    report("JSONL", outcomes)
}

/// The log of session `id` already under `root`, in either encoding.
fn existing(root: &Path, encoding: Encoding, id: &str) -> Result<Option<PathBuf>, MigrateError> {
    for encoding in [encoding, encoding.opposite()] {
        match find_session(root, encoding, id) {
            Ok(Some(path)) => return Ok(Some(path)),
            Ok(None) => {}
            Err(error) => return Err(write_failed(id, error)),
        }
    }
    Ok(None)
}

/// One session written as a log (in one append, so one frame), read back and verified; a log
/// that does not verify is removed again. A trashed one is written, then moved into the trash.
async fn session_to_jsonl(
    client: &Client,
    (root, trash): (&Path, &Path),
    encoding: Encoding,
    row: &Row,
) -> Result<Migrated, MigrateError> {
    let id = row.id.as_str();
    let header = SessionHeader::parse(id, &row.header).map_err(|error| unreadable(id, error))?;
    if header.id != id {
        return Err(unreadable(
            id,
            format!("its header names session `{}`", header.id),
        ));
    }
    if let Some(path) = existing(root, encoding, id)? {
        return Err(MigrateError::AlreadyThere {
            id: id.to_owned(),
            place: path.display().to_string(),
        });
    }
    let trash_entry = row
        .trashed_at
        .map(|at| super::trash::free_entry(trash, id, at))
        .transpose()?;
    // A session a running host holds is mid-write: refused like the store refuses deleting it.
    let leased = client
        .query_opt(
            "SELECT owner FROM dsh_leases WHERE session = $1 AND expires_at > dsh_now_ms()",
            &[&id],
        )
        .await
        .map_err(db(id))?;
    if let Some(lease) = leased {
        let owner: String = lease.try_get(0).map_err(db(id))?;
        return Err(MigrateError::Open {
            id: id.to_owned(),
            holder: format!("host `{owner}`"),
        });
    }
    let stored = stored_events(client, id).await?;
    if stored.is_empty() {
        // The store writes a row with its first events; a log without events is never written.
        return Err(unreadable(id, "it has no events"));
    }
    let options = WriterOptions {
        encoding,
        pack_chunks: true,
    };
    let mut writer =
        SessionWriter::create(root, header, options).map_err(|error| write_failed(id, error))?;
    let lines: Vec<CommittedLine<'_>> = stored
        .iter()
        .map(|(line, event)| CommittedLine {
            seq: event.seq,
            kind: &event.kind,
            json: line,
        })
        .collect();
    writer
        .append_committed(&lines)
        .map_err(|error| write_failed(id, error))?;
    let path = writer.path().to_path_buf();
    let events: Vec<SessionEvent> = stored.into_iter().map(|(_, event)| event).collect();
    let verified = read_session(&path)
        .map_err(|error| unreadable(id, format!("the written log: {error}")))
        .and_then(|copy| verify(id, &events, copy.events));
    if let Err(error) = verified {
        let _ = std::fs::remove_file(&path);
        return Err(error);
    }
    if let Some(dir) = path.parent() {
        // The listing's files, as the store keeps them.
        let listing = ListingFile {
            active_at: row.active_at,
            title: row.title.clone(),
        };
        let written = match listing.active_at.is_some() || listing.title.is_some() {
            true => listing.write(dir),
            false => Ok(()),
        };
        let archived = dir.join(ARCHIVED_FILE);
        written
            .and_then(|()| match row.archived {
                true => std::fs::write(&archived, ""),
                false => Ok(()),
            })
            .map_err(|error| write_failed(id, format!("{}: {error}", dir.display())))?;
    }
    if let (Some(target), Some(dir)) = (trash_entry, path.parent()) {
        super::trash::move_in(dir, &target, id)?;
    }
    Ok(Migrated {
        events: events.len(),
        torn: None,
    })
}
