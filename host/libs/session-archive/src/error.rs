//! Why an export or an import failed. Every refusal of an archive names the archive (its path,
//! or what the caller called it) and, where there is one, the entry at fault.

use std::path::PathBuf;

use dsh_session_jsonl::{LayoutError, ReadError, RootError, WriteError};

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("no session `{id}` under {}", root.display())]
    NotFound { id: String, root: PathBuf },
    #[error(transparent)]
    Root(#[from] RootError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("encoding the log of `{id}`: {source}")]
    Encode {
        id: String,
        #[source]
        source: serde_json::Error,
    },
    /// The compressed stream or the tar inside it ends early, or a listed entry is absent.
    #[error("{archive}: truncated archive: {detail}")]
    Truncated { archive: String, detail: String },
    /// Not zstd, not tar, or no manifest first.
    #[error("{archive}: not a dsh session archive: {detail}")]
    NotAnArchive { archive: String, detail: String },
    #[error(
        "{archive}: archive format `{format}` version {version} is not one this dsh-host reads \
         (it reads `{}` version {})",
        crate::FORMAT,
        crate::FORMAT_VERSION
    )]
    ForeignFormat {
        archive: String,
        format: String,
        version: String,
    },
    #[error("{archive}: entry `{path}` escapes the archive's folder: {reason}")]
    EscapingPath {
        archive: String,
        path: String,
        reason: &'static str,
    },
    #[error("{archive}: entry `{path}`: {reason}")]
    BadEntry {
        archive: String,
        path: String,
        reason: String,
    },
    #[error(
        "{archive}: entry `{path}`: checksum mismatch (sha256 {found}, the manifest says {expected})"
    )]
    Checksum {
        archive: String,
        path: String,
        expected: String,
        found: String,
    },
    #[error("{archive}: unpacks to more than {limit} bytes")]
    TooLarge { archive: String, limit: u64 },
    #[error(
        "session `{id}` already exists ({}); nothing was imported (--new-ids imports the archive \
         as a copy under fresh ids)",
        existing.display()
    )]
    Exists { id: String, existing: PathBuf },
}

/// An I/O error on `path` during `op`.
pub(crate) fn io<'a>(
    path: &'a std::path::Path,
    op: &'static str,
) -> impl FnOnce(std::io::Error) -> ArchiveError + 'a {
    move |source| ArchiveError::Io {
        path: path.to_owned(),
        op,
        source,
    }
}
