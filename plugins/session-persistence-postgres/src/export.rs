//! The `session_archive` service on the database: what is queued for the session is committed
//! first, then its log and its subagents' logs are read from the rows and packed with the
//! images they refer to (`dsh-session-archive`, the same archive the JSONL store makes);
//! `export_to` writes it where it was asked, a relative path taken from the session's cwd, or
//! under `exports/` beside the attachment store. An image not in the attachment store's folder
//! is looked for in the database's `dsh_attachments` (the `attachments` row with `url`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use abi_stable::std_types::{ROption, RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::postgres::{PgStatement, PgValue};
use dsh_plugin_api::{Context, Json};
use dsh_session_archive::{
    ArchiveError, ArchivedLog, Exported, attachment_file, attachment_ids, export_logs,
    subagent_tree, suggested_file_name, write_file,
};
use dsh_session_jsonl::SessionHeader;
use dsh_session_log::SessionEvent;
use dsh_sessions_seam::{
    ArchiveReport, ExportedArchive, SessionArchive, SessionError, SessionErrorKind,
};

use crate::store::{Store, error, from_db};

/// The images `logs` refer to, each once.
fn referenced(logs: &[ArchivedLog]) -> BTreeSet<String> {
    attachment_ids(
        logs.iter()
            .flat_map(|log| log.events.iter().map(|event| &event.data)),
    )
}

/// A store folder beside `attachments` holding every image of `ids`: the folder's (linked)
/// and `from_database` (written).
fn staging_store(
    attachments: &std::path::Path,
    ids: &BTreeSet<String>,
    from_database: &[(String, Vec<u8>)],
) -> Result<PathBuf, SessionError> {
    let staging = attachments.with_file_name(format!("export-staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let filled = fill_staging(&staging, attachments, ids, from_database);
    if filled.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    filled.map(|()| staging)
}

fn fill_staging(
    staging: &std::path::Path,
    attachments: &std::path::Path,
    ids: &BTreeSet<String>,
    from_database: &[(String, Vec<u8>)],
) -> Result<(), SessionError> {
    for id in ids {
        let (Some(from), Some(to)) = (
            attachment_file(attachments, id),
            attachment_file(staging, id),
        ) else {
            continue;
        };
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(storage)?;
        }
        match from_database.iter().find(|(found, _)| found == id) {
            Some((_, bytes)) => std::fs::write(&to, bytes).map_err(storage)?,
            None if from.exists() => {
                std::fs::hard_link(&from, &to)
                    .or_else(|_| std::fs::copy(&from, &to).map(|_| ()))
                    .map_err(storage)?;
            }
            None => {}
        }
    }
    Ok(())
}

#[derive(Clone)]
pub(crate) struct Exporter {
    pub(crate) ctx: Context,
    pub(crate) store: Store,
    pub(crate) attachments: PathBuf,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

fn storage(problem: impl std::fmt::Display) -> SessionError {
    error(SessionErrorKind::Storage, problem.to_string())
}

fn refused(problem: ArchiveError) -> SessionError {
    match problem {
        ArchiveError::Layout(_) => error(SessionErrorKind::Invalid, problem.to_string()),
        other => storage(other),
    }
}

fn report(exported: &Exported, id: &str, path: Option<PathBuf>) -> ArchiveReport {
    let manifest = &exported.manifest;
    ArchiveReport {
        path: path.map(|path| path.display().to_string()),
        file_name: suggested_file_name(id),
        sessions: manifest.sessions.len() as u64,
        events: manifest.event_count(),
        attachments: manifest.attachments.len() as u64,
        missing_attachments: manifest.missing_attachments.clone(),
        bytes: exported.bytes.len() as u64,
    }
}

impl Exporter {
    async fn rows(&self, id: &str, sql: &str) -> Result<Vec<String>, SessionError> {
        let rows = self
            .store
            .inner
            .db
            .query(PgStatement::new(sql, vec![PgValue::text(id)]))
            .await
            .into_result()
            .map_err(|problem| from_db(id, problem))?;
        Ok(rows
            .rows
            .iter()
            .filter_map(|row| row.last().and_then(PgValue::as_text).map(str::to_owned))
            .collect())
    }

    /// The logs of `id` and its subagents, read from the rows.
    async fn logs(&self, id: &str) -> Result<Vec<ArchivedLog>, SessionError> {
        let headers: Vec<SessionHeader> = self
            .rows(
                id,
                "SELECT header FROM dsh_sessions WHERE trashed_at IS NULL \
                 AND (id = $1 OR header LIKE '%\"parentSession\"%')",
            )
            .await?
            .iter()
            .filter_map(|line| SessionHeader::parse("stored header", line).ok())
            .collect();
        let Some(own) = headers.iter().find(|header| header.id == id).cloned() else {
            return Err(error(
                SessionErrorKind::NotFound,
                format!("no stored session `{id}`"),
            ));
        };
        let mut logs = Vec::new();
        for (session, parent) in subagent_tree(id, &headers) {
            let header = match headers.iter().find(|header| header.id == session) {
                Some(header) => header.clone(),
                None => own.clone(),
            };
            let events = self
                .rows(&session, dsh_session_pg::SELECT_LINES)
                .await?
                .iter()
                .map(|line| serde_json::from_str::<SessionEvent>(line))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|problem| {
                    error(
                        SessionErrorKind::Unreadable,
                        format!("session `{session}`: {problem}"),
                    )
                })?;
            logs.push(ArchivedLog {
                id: session,
                parent,
                header,
                events,
            });
        }
        Ok(logs)
    }

    /// The images of `ids` that the folder does not hold but the database does: (id,
    /// bytes). No table (images kept in folders only): none.
    async fn images_in_database(&self, ids: &BTreeSet<String>) -> Vec<(String, Vec<u8>)> {
        let mut found = Vec::new();
        for id in ids {
            if attachment_file(&self.attachments, id).is_none_or(|file| file.exists()) {
                continue;
            }
            let statement = PgStatement::new(
                dsh_session_pg::GET_ATTACHMENT,
                vec![PgValue::text(id.as_str())],
            );
            let Ok(rows) = self.store.inner.db.query(statement).await.into_result() else {
                continue;
            };
            let bytes = rows
                .rows
                .first()
                .and_then(|row| row.first())
                .and_then(PgValue::as_bytes)
                .map(<[u8]>::to_vec);
            if let Some(bytes) = bytes {
                found.push((id.clone(), bytes));
            }
        }
        found
    }

    async fn build(&self, id: String) -> Result<(Exported, Option<String>), SessionError> {
        // What is queued for the session is committed first, so the archive holds all of it.
        self.store.drain(Some(&id)).await?;
        let logs = self.logs(&id).await?;
        let cwd = logs.first().and_then(|log| log.header.cwd.clone());
        let ids = referenced(&logs);
        let from_database = self.images_in_database(&ids).await;
        let attachments = self.attachments.clone();
        let exported = self
            .ctx
            .blocking(move || {
                if from_database.is_empty() {
                    return export_logs(&id, &logs, &attachments, now_ms()).map_err(refused);
                }
                // The archive reads images from one store's folder: a staging one holds the
                // folder's images and the database's together.
                let staging = staging_store(&attachments, &ids, &from_database)?;
                let exported = export_logs(&id, &logs, &staging, now_ms()).map_err(refused);
                let _ = std::fs::remove_dir_all(&staging);
                exported
            })
            .await
            .map_err(storage)??;
        Ok((exported, cwd))
    }

    async fn write(&self, id: String, path: Option<String>) -> Result<ArchiveReport, SessionError> {
        let (exported, cwd) = self.build(id.clone()).await?;
        let exports = self.attachments.with_file_name("exports");
        self.ctx
            .blocking(move || {
                let target = match path.map(PathBuf::from) {
                    Some(path) if path.is_absolute() => path,
                    Some(path) => PathBuf::from(cwd.unwrap_or_default()).join(path),
                    None => exports.join(suggested_file_name(&id)),
                };
                if let Some(dir) = target.parent().filter(|dir| !dir.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(storage)?;
                }
                write_file(&target, &exported.bytes).map_err(refused)?;
                Ok(report(&exported, &id, Some(target)))
            })
            .await
            .map_err(storage)?
    }
}

impl SessionArchive for Exporter {
    fn export(&self, id: RString) -> FfiFuture<RResult<ExportedArchive, SessionError>> {
        let exporter = self.clone();
        async move {
            let id = id.into_string();
            exporter
                .build(id.clone())
                .await
                .map(|(exported, _)| ExportedArchive {
                    report: Json::encode(&report(&exported, &id, None)),
                    bytes: exported.bytes.into(),
                })
                .into()
        }
        .into_ffi()
    }

    fn export_to(
        &self,
        id: RString,
        path: ROption<RString>,
    ) -> FfiFuture<RResult<Json<ArchiveReport>, SessionError>> {
        let exporter = self.clone();
        async move {
            exporter
                .write(
                    id.into_string(),
                    path.into_option().map(RString::into_string),
                )
                .await
                .map(|report| Json::encode(&report))
                .into()
        }
        .into_ffi()
    }
}
