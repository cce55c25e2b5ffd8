//! `--to postgres`: every log under the sessions root inserted, one transaction a session (its
//! row with the listing columns the JSONL store kept, then its events), read back inside the
//! transaction and committed only when the history it derives is the log's; then the newest
//! trashed copy of each session not migrated already, as a row marked trashed.

use std::path::Path;

use dsh_session_jsonl::{
    ARCHIVED_FILE, ListedSession, ListingFile, last_message_time, list_sessions_any, read_session,
};
use dsh_session_log::SessionEvent;
use tokio_postgres::Client;

use super::{
    MigrateError, Migrated, db, driver_message, report, stored_events, unreadable, verify,
};
use crate::cli::session::{SessionCliError, title_of};

/// When `path` last changed, in milliseconds since the epoch.
fn modified_ms(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

/// The listing columns of a JSONL session: its title and last activity from the files beside
/// the log (else from the events), archived when marked.
struct Listed {
    updated_at: i64,
    active_at: Option<i64>,
    title: Option<String>,
    archived: bool,
}

fn listed_of(listed: &ListedSession, events: &[SessionEvent]) -> Listed {
    let dir = listed
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let listing = ListingFile::read(&dir);
    let title = listing
        .as_ref()
        .and_then(|listing| listing.title.clone())
        .or_else(|| title_of(events));
    let active_at = match listing {
        Some(listing) => listing.active_at,
        None => last_message_time(events),
    };
    Listed {
        updated_at: modified_ms(&listed.path).unwrap_or(listed.header.created_at),
        active_at,
        title,
        archived: dir.join(ARCHIVED_FILE).exists(),
    }
}

pub(super) async fn migrate(
    client: &mut Client,
    url: &str,
    root: &Path,
    trash: &Path,
) -> Result<(), SessionCliError> {
    let schema = async {
        let transaction = client.transaction().await?;
        for statement in dsh_session_pg::STATEMENTS {
            transaction.batch_execute(statement).await?;
        }
        transaction.commit().await
    };
    schema.await.map_err(|error| MigrateError::Schema {
        url: url.to_owned(),
        message: driver_message(&error),
    })?;
    let listing = list_sessions_any(root)?;
    let mut outcomes = Vec::new();
    // A log whose header does not read is named with why, and the others go on.
    for broken in listing.broken {
        let error = unreadable(
            &broken.id,
            format!("{}: {}", broken.path.display(), broken.reason),
        );
        outcomes.push((broken.id, Err(error)));
    }
    for listed in &listing.sessions {
        let id = listed.header.id.clone();
        let outcome = session_to_postgres(client, listed, None).await;
        outcomes.push((id, outcome));
    }
    let (trashed, broken) = super::trash::newest_entries(trash);
    outcomes.extend(
        broken
            .into_iter()
            .map(|(id, error)| (super::trash::in_trash(&id), Err(error))),
    );
    for (id, trashed) in trashed {
        if listing.sessions.iter().any(|listed| listed.header.id == id) {
            // An older copy of a session deleted and restored: the session itself went over.
            println!("kept in the trash: an older copy of {id}");
            continue;
        }
        let outcome = session_to_postgres(client, &trashed.listed, Some(trashed.trashed_at)).await;
        outcomes.push((super::trash::in_trash(&id), outcome));
    }
    report("PostgreSQL", outcomes)
}

/// The JSONL store's lock of the session whose log is `path` (an exclusive `flock` on
/// `session.lock` beside it, holding its owner's pid), taken; refused while a process holds it.
/// A log without a lock file was never opened for writing since it was made: nothing to take.
fn lock_log(id: &str, path: &Path) -> Result<Option<std::fs::File>, MigrateError> {
    let Some(lock) = path.parent().map(|dir| dir.join("session.lock")) else {
        return Ok(None);
    };
    let mut file = match std::fs::File::open(&lock) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unreadable(id, format!("{}: {error}", lock.display()))),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut owner = String::new();
            let _ = std::io::Read::read_to_string(&mut file, &mut owner);
            Err(MigrateError::Open {
                id: id.to_owned(),
                holder: format!("process {}", owner.trim()),
            })
        }
        Err(std::fs::TryLockError::Error(error)) => {
            Err(unreadable(id, format!("{}: {error}", lock.display())))
        }
    }
}

/// One session in one transaction: the row (marked trashed at `trashed_at` when given), the
/// events, then the events read back and verified; committed only when they verify (dropped
/// uncommitted, it rolls back).
async fn session_to_postgres(
    client: &mut Client,
    listed: &ListedSession,
    trashed_at: Option<i64>,
) -> Result<Migrated, MigrateError> {
    let id = listed.header.id.as_str();
    // Held until the copy is committed, so no process appends to the log meanwhile.
    let _lock = lock_log(id, &listed.path)?;
    let read = read_session(&listed.path).map_err(|error| unreadable(id, error))?;
    // Each event's line as the store writes it (`EventRecord::json`).
    let lines = read
        .events
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| unreadable(id, error))?;
    let row = listed_of(listed, &read.events);
    let header = read.header.to_line();
    let transaction = client.transaction().await.map_err(db(id))?;
    // Any row of that id, trashed or not: the key would refuse it anyway, this names it.
    let present = transaction
        .query_opt("SELECT 1 FROM dsh_sessions WHERE id = $1", &[&id])
        .await
        .map_err(db(id))?;
    if present.is_some() {
        return Err(MigrateError::AlreadyThere {
            id: id.to_owned(),
            place: "the database".to_owned(),
        });
    }
    transaction
        .execute(
            dsh_session_pg::INSERT_SESSION_LISTED,
            &[
                &id,
                &header,
                &read.header.cwd,
                &read.header.created_at,
                &row.updated_at,
                &row.active_at,
                &row.title,
                &row.archived,
            ],
        )
        .await
        .map_err(db(id))?;
    if let Some(trashed_at) = trashed_at {
        transaction
            .execute(
                "UPDATE dsh_sessions SET trashed_at = $2 WHERE id = $1",
                &[&id, &trashed_at],
            )
            .await
            .map_err(db(id))?;
    }
    let seqs: Vec<i64> = read
        .events
        .iter()
        .map(|event| i64::try_from(event.seq).unwrap_or(i64::MAX))
        .collect();
    let kinds: Vec<&str> = read
        .events
        .iter()
        .map(|event| event.kind.as_str())
        .collect();
    let times: Vec<i64> = read.events.iter().map(|event| event.time).collect();
    transaction
        .execute(
            dsh_session_pg::INSERT_EVENTS,
            &[&id, &seqs, &kinds, &times, &lines],
        )
        .await
        .map_err(db(id))?;
    let copy = stored_events(&transaction, id).await?;
    verify(
        id,
        &read.events,
        copy.into_iter().map(|(_, event)| event).collect(),
    )?;
    transaction.commit().await.map_err(db(id))?;
    Ok(Migrated {
        events: read.events.len(),
        torn: read.repair.map(|repair| repair.reason),
    })
}
