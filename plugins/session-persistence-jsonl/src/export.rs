//! The `session_archive` service: the store flushes what it holds of the session, then
//! `dsh-session-archive` reads the logs and the attachment store on the blocking pool and
//! builds the archive; `export_to` writes it (staged, then renamed) where it was asked, a
//! relative path taken from the session's cwd, or under `exports/` beside the root.

use std::path::{Path, PathBuf};

use abi_stable::std_types::{ROption, RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::{Context, Json};
use dsh_session_archive::{Exported, Stores, export_session, suggested_file_name, write_file};
use dsh_session_jsonl::{Encoding, find_session, read_header};
use dsh_sessions_seam::{
    ArchiveReport, ExportedArchive, SessionArchive, SessionError, SessionErrorKind,
};

use crate::store::{Store, error, storage};

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

fn refused(problem: dsh_session_archive::ArchiveError) -> SessionError {
    match problem {
        dsh_session_archive::ArchiveError::NotFound { .. } => {
            error(SessionErrorKind::NotFound, problem.to_string())
        }
        dsh_session_archive::ArchiveError::Layout(_) => {
            error(SessionErrorKind::Invalid, problem.to_string())
        }
        other => storage(other),
    }
}

fn report(exported: &Exported, id: &str, path: Option<&Path>) -> ArchiveReport {
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

/// The cwd the session's header names.
fn session_cwd(root: &Path, id: &str) -> Option<PathBuf> {
    let path = [Encoding::Zstd, Encoding::Raw]
        .into_iter()
        .find_map(|encoding| find_session(root, encoding, id).ok().flatten())?;
    read_header(&path).ok()?.cwd.map(PathBuf::from)
}

impl Exporter {
    fn stores(&self) -> Stores {
        Stores {
            sessions: self.store.root(),
            attachments: self.attachments.clone(),
        }
    }

    async fn build(&self, id: String) -> Result<Exported, SessionError> {
        // What is queued for the session is written first, so the archive holds all of it.
        self.store.drain(Some(&id)).await?;
        let stores = self.stores();
        self.ctx
            .blocking(move || export_session(&stores, &id, now_ms()).map_err(refused))
            .await
            .map_err(storage)?
    }

    async fn write(&self, id: String, path: Option<String>) -> Result<ArchiveReport, SessionError> {
        let exported = self.build(id.clone()).await?;
        let root = self.store.root();
        self.ctx
            .blocking(move || {
                let target = match path.map(PathBuf::from) {
                    Some(path) if path.is_absolute() => path,
                    Some(path) => session_cwd(&root, &id).unwrap_or_default().join(path),
                    None => root
                        .with_file_name("exports")
                        .join(suggested_file_name(&id)),
                };
                if let Some(dir) = target.parent().filter(|dir| !dir.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(storage)?;
                }
                write_file(&target, &exported.bytes).map_err(refused)?;
                Ok(report(&exported, &id, Some(&target)))
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
                .map(|exported| ExportedArchive {
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
