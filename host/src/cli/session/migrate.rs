//! `session migrate --to postgres|jsonl URL`: every session of one store copied into the
//! other, each checked by deriving its model history from the source and from what the
//! destination reads back. A session the destination already holds is refused by name, never
//! overwritten; one that does not read or does not verify is named and the others go on. The
//! database side speaks `dsh-session-pg`'s statements, the same text the PostgreSQL store runs,
//! and the JSONL side writes with the store's own `SessionWriter`. The trash goes too: the newest
//! trashed copy of each session becomes a row marked trashed, and such a row a trash entry.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use dsh_session_jsonl::Encoding;
use dsh_session_log::{SessionEvent, SessionLog, TypeRegistry};
use tokio_postgres::{GenericClient, NoTls};

use super::{SessionCliError, sessions_root};

mod images;
mod to_jsonl;
mod to_postgres;
mod trash;

/// Why a migration, or one session of it, failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum MigrateError {
    #[error("--to is `postgres` or `jsonl`, not `{0}`")]
    Target(String),
    #[error("--compression is for `--to jsonl` (the logs it writes), not `--to postgres`")]
    CompressionToPostgres,
    #[error("connection string `{url}`: {message}")]
    Url { url: String, message: String },
    #[error("the database `{url}` cannot be reached: {message}")]
    Unreachable { url: String, message: String },
    #[error("the session schema in `{url}`: {message}")]
    Schema { url: String, message: String },
    #[error("the async runtime did not start: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("session `{id}`: {message}")]
    Database { id: String, message: String },
    #[error("session `{id}` is open in {holder}: close it there first")]
    Open { id: String, holder: String },
    #[error("session `{id}` is already stored in {place}: not overwritten")]
    AlreadyThere { id: String, place: String },
    #[error("session `{id}`: {message}")]
    Unreadable { id: String, message: String },
    #[error("session `{id}`: {message}")]
    Write { id: String, message: String },
    #[error("session `{id}`: the written copy does not re-derive the history: {detail}")]
    Unverified { id: String, detail: String },
    #[error("{} image(s) not migrated: {}", ids.len(), ids.join(", "))]
    Images { ids: Vec<String> },
    #[error("{failed} of {total} session(s) not migrated: {}", ids.join(", "))]
    NotAll {
        failed: usize,
        total: usize,
        ids: Vec<String>,
    },
}

/// The driver's error with its causes (its Display hides why a connection failed).
fn driver_message(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        cause = inner.source();
    }
    message
}

fn db(id: &str) -> impl FnOnce(tokio_postgres::Error) -> MigrateError + '_ {
    move |error| MigrateError::Database {
        id: id.to_owned(),
        message: driver_message(&error),
    }
}

fn unreadable(id: &str, message: impl std::fmt::Display) -> MigrateError {
    MigrateError::Unreadable {
        id: id.to_owned(),
        message: message.to_string(),
    }
}

fn write_failed(id: &str, message: impl std::fmt::Display) -> MigrateError {
    MigrateError::Write {
        id: id.to_owned(),
        message: message.to_string(),
    }
}

/// Where to copy, checked before anything connects.
enum Target {
    Postgres,
    Jsonl,
}

pub(super) fn migrate(
    home: &Path,
    to: &str,
    url: &str,
    compression: Option<&str>,
) -> Result<(), SessionCliError> {
    let target = match to {
        "postgres" => Target::Postgres,
        "jsonl" => Target::Jsonl,
        other => return Err(MigrateError::Target(other.to_owned()).into()),
    };
    let encoding = match compression {
        None => None,
        // Rows have no encoding: an option that would do nothing is refused.
        Some(_) if matches!(target, Target::Postgres) => {
            return Err(MigrateError::CompressionToPostgres.into());
        }
        Some("zstd") => Some(Encoding::Zstd),
        Some("none") => Some(Encoding::Raw),
        Some(other) => return Err(SessionCliError::Compression(other.to_owned())),
    };
    let config = tokio_postgres::Config::from_str(url).map_err(|error| MigrateError::Url {
        url: url.to_owned(),
        message: error.to_string(),
    })?;
    let root = sessions_root(home);
    let trash = trash::trash_root(home);
    let images = images::images_root(home);
    // The command is called from inside the host's runtime, which a `block_on` may not nest
    // in: the migration runs on a thread of its own, one session at a time on one connection,
    // so a current-thread runtime there is enough.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(MigrateError::Runtime)?;
                runtime.block_on(run_on(
                    &config,
                    url,
                    target,
                    (&root, &trash, &images),
                    encoding,
                ))
            })
            .join()
            .unwrap_or_else(|_| {
                Err(
                    MigrateError::Runtime(std::io::Error::other("the migration thread panicked"))
                        .into(),
                )
            })
    })
}

async fn run_on(
    config: &tokio_postgres::Config,
    url: &str,
    target: Target,
    (root, trash, images): (&Path, &Path, &Path),
    encoding: Option<Encoding>,
) -> Result<(), SessionCliError> {
    let (mut client, connection) =
        config
            .connect(NoTls)
            .await
            .map_err(|error| MigrateError::Unreachable {
                url: url.to_owned(),
                message: driver_message(&error),
            })?;
    // The connection's own task; it ends when the client is dropped.
    let driver = tokio::spawn(connection);
    // The images go whatever became of the sessions: a session copied refers to them.
    let (sessions, copied, destination) = match target {
        Target::Postgres => (
            to_postgres::migrate(&mut client, url, root, trash).await,
            images::to_postgres(&mut client, images).await,
            "the database",
        ),
        Target::Jsonl => (
            to_jsonl::migrate(&client, (root, trash), encoding).await,
            images::to_folder(&client, images).await,
            "the attachments folder",
        ),
    };
    let images = copied.and_then(|copied| copied.report(destination));
    let done = sessions.and(images.map_err(SessionCliError::from));
    drop(client);
    let _ = driver.await;
    done
}

/// One session copied.
struct Migrated {
    events: usize,
    /// Why the source log ended in a torn tail: its committed events were copied, the tail
    /// (what a load of the log would truncate) was not.
    torn: Option<String>,
}

/// Prints each session's line and the summary; an error when any session failed.
fn report(
    destination: &str,
    outcomes: Vec<(String, Result<Migrated, MigrateError>)>,
) -> Result<(), SessionCliError> {
    let total = outcomes.len();
    let mut ids = Vec::new();
    for (id, outcome) in outcomes {
        match outcome {
            Ok(Migrated { events, torn }) => println!(
                "migrated {id}: {events} events, history verified{}",
                torn.map(|reason| format!(" (the log's torn tail was left behind: {reason})"))
                    .unwrap_or_default()
            ),
            Err(error) => {
                eprintln!("not migrated: {error}");
                ids.push(id);
            }
        }
    }
    println!(
        "{} of {total} session(s) migrated to {destination}",
        total - ids.len()
    );
    match ids.is_empty() {
        true => Ok(()),
        false => Err(MigrateError::NotAll {
            failed: ids.len(),
            total,
            ids,
        }
        .into()),
    }
}

/// The hash of the model history `events` derive.
fn history(id: &str, what: &str, events: Vec<SessionEvent>) -> Result<u64, MigrateError> {
    let log = SessionLog::from_events(events, Arc::new(TypeRegistry::default()))
        .map_err(|error| unreadable(id, format!("{what} does not load: {error}")))?;
    Ok(log.derive_messages().hash())
}

/// The source's history against the copy's: the same number of events, the same history.
fn verify(id: &str, source: &[SessionEvent], copy: Vec<SessionEvent>) -> Result<(), MigrateError> {
    if source.len() != copy.len() {
        return Err(MigrateError::Unverified {
            id: id.to_owned(),
            detail: format!("{} events written, {} read back", source.len(), copy.len()),
        });
    }
    let (before, after) = (
        history(id, "the source", source.to_vec())?,
        history(id, "the copy", copy)?,
    );
    match before == after {
        true => Ok(()),
        false => Err(MigrateError::Unverified {
            id: id.to_owned(),
            detail: format!("history hash {before:016x} became {after:016x}"),
        }),
    }
}

/// Session `id`'s events as the database holds them, contiguous from seq 0.
async fn stored_events(
    db: &impl GenericClient,
    id: &str,
) -> Result<Vec<(String, SessionEvent)>, MigrateError> {
    let rows = db
        .query(dsh_session_pg::SELECT_LINES, &[&id])
        .await
        .map_err(self::db(id))?;
    let mut events = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let seq: i64 = row.try_get(0).map_err(self::db(id))?;
        let line: String = row.try_get(1).map_err(self::db(id))?;
        if i64::try_from(index).ok() != Some(seq) {
            return Err(unreadable(
                id,
                format!("event {index} is stored with seq {seq}"),
            ));
        }
        let event = serde_json::from_str::<SessionEvent>(&line)
            .map_err(|error| unreadable(id, format!("event {seq}: {error}")))?;
        events.push((line, event));
    }
    Ok(events)
}
