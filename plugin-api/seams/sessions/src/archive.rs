//! The `session_archive` service: a stored session carried away as one file (its log, its
//! subagents' logs, the images they refer to, a manifest), for `/export` and the page's
//! download. Provided by the store, which flushes what it holds of the session first; the
//! format is `dsh-session-archive`'s.

use abi_stable::std_types::{ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::Json;
use serde::{Deserialize, Serialize};

use crate::SessionError;

/// Service key of the session archive.
pub const SESSION_ARCHIVE_SERVICE: &str = "session_archive";

/// What an archive holds, and where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveReport {
    /// The file written (absent when only the bytes were asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The name a download suggests.
    pub file_name: String,
    /// The session and its subagents' sessions.
    pub sessions: u64,
    pub events: u64,
    pub attachments: u64,
    /// Attachments a log refers to that the store no longer has (not in the archive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_attachments: Vec<String>,
    pub bytes: u64,
}

/// An archive built in memory.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct ExportedArchive {
    pub bytes: RVec<u8>,
    pub report: Json<ArchiveReport>,
}

/// The `session_archive` service.
#[sabi_trait]
pub trait SessionArchive: Send + Sync {
    /// The archive of session `id`.
    fn export(&self, id: RString) -> FfiFuture<RResult<ExportedArchive, SessionError>>;
    /// Writes the archive of session `id` to `path` (a relative one is taken from the
    /// session's cwd), or to `exports/` beside the sessions root when absent.
    fn export_to(
        &self,
        id: RString,
        path: ROption<RString>,
    ) -> FfiFuture<RResult<Json<ArchiveReport>, SessionError>>;
}
pub type SessionArchiveService = SessionArchive_TO<'static, abi_stable::std_types::RBox<()>>;
