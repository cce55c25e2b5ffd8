//! Errors. Every error about a file names the file; errors about a record name the line (and the
//! zstd frame in compressed mode) and the seq the record should have started at, so an operator
//! can find the bad bytes without re-running anything.

use std::io;
use std::path::PathBuf;

use crate::layout::Encoding;

/// A session id or project path that cannot name a directory.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    #[error("cannot encode an empty project path (cwd)")]
    EmptyCwd,
    #[error("cannot encode an empty session id")]
    EmptySessionId,
    #[error("{encoded:?} is not an encoded session id: {reason}")]
    NotEncoded {
        encoded: String,
        reason: &'static str,
    },
    #[error("{id:?} is not a session id: {reason}")]
    BadSessionId { id: String, reason: &'static str },
}

/// One JSONL record that cannot be decoded (no file context; [`ReadError`] adds it).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("unknown envelope shape: {0}")]
    Envelope(String),
    #[error("malformed {tag} storage row: {reason}")]
    MalformedRow { tag: &'static str, reason: String },
}

/// Whether a refused log is newer or older than this reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionDirection {
    /// Written by a newer harness: upgrade dsh to open it.
    Newer,
    /// Older than anything this build reads: no upgrade path ships.
    Older,
}

fn version_advice(direction: &VersionDirection) -> &'static str {
    match direction {
        VersionDirection::Newer => {
            "the log was written by a newer harness than this reader; upgrade dsh to open it"
        }
        VersionDirection::Older => {
            "the log is older than this reader, and this build ships no upgrade path for it"
        }
    }
}

fn frame_at(frame: &Option<usize>) -> String {
    frame
        .map(|f| format!(" (zstd frame {f})"))
        .unwrap_or_default()
}

/// Reading a session file failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        source: io::Error,
    },
    #[error(
        "{}: session {id:?} uses log format v{found}, but this reader reads only v{}: {}",
        path.display(), crate::header::SESSION_FORMAT_VERSION, version_advice(direction)
    )]
    UnsupportedVersion {
        path: PathBuf,
        id: String,
        found: String,
        direction: VersionDirection,
    },
    #[error("{}: corrupt session log: no session header ({reason})", path.display())]
    MissingHeader { path: PathBuf, reason: &'static str },
    #[error("{}: corrupt session log: bad session header: {reason}", path.display())]
    BadHeader { path: PathBuf, reason: String },
    #[error(
        "{}: session header uses the retired policy baseline fields sandboxMode/approvalPolicy; \
         this format no longer reads it",
        path.display()
    )]
    LegacyHeader { path: PathBuf },
    #[error(
        "{}: corrupt session log at line {line}{} (expected seq {expected_seq}): {source}",
        path.display(), frame_at(frame)
    )]
    Record {
        path: PathBuf,
        line: u64,
        frame: Option<usize>,
        expected_seq: u64,
        source: RecordError,
    },
    #[error(
        "{}: corrupt session log: seq gap at line {line}{} (expected seq {expected}, found {})",
        path.display(), frame_at(frame), found.map_or_else(|| "none".to_owned(), |s| s.to_string())
    )]
    SeqGap {
        path: PathBuf,
        line: u64,
        frame: Option<usize>,
        expected: u64,
        found: Option<u64>,
    },
    #[error(
        "{}: corrupt Zstandard session log: frame {frame} at byte {offset}: {reason}",
        path.display()
    )]
    Frame {
        path: PathBuf,
        frame: usize,
        offset: u64,
        reason: String,
    },
}

/// Listing or locating sessions under a root failed.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        source: io::Error,
    },
    #[error(
        "session artifact {} uses {}, but this store is configured for {}; use a separate root \
         or select the matching compression",
        path.display(), found.file_name(), configured.file_name()
    )]
    EncodingMismatch {
        path: PathBuf,
        found: Encoding,
        configured: Encoding,
    },
    #[error(
        "session artifact {} uses the unsupported flat-file layout; use a separate root or move \
         it into a project/session directory",
        path.display()
    )]
    LegacyLayout { path: PathBuf },
    #[error(transparent)]
    Read(#[from] Box<ReadError>),
    #[error("{}: header id {id:?} cannot name a storage path: {source}", path.display())]
    HeaderLayout {
        path: PathBuf,
        id: String,
        source: LayoutError,
    },
    #[error(
        "corrupt session log {}: its header (id {id:?} and cwd) identifies {}",
        path.display(), expected.display()
    )]
    IdentityMismatch {
        path: PathBuf,
        id: String,
        expected: PathBuf,
    },
    #[error("duplicate session id {id:?}: {} and {}", first.display(), second.display())]
    DuplicateId {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// Writing a session file failed. After an `Io` error during an append the file was truncated
/// back to its previous length, so the same batch can be retried.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        source: io::Error,
    },
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("{}: refusing to create the session: a log already exists there (resume it instead)", path.display())]
    AlreadyExists { path: PathBuf },
    #[error(
        "session artifact {} uses {}, but this writer is configured for {}",
        path.display(), found.file_name(), configured.file_name()
    )]
    EncodingMismatch {
        path: PathBuf,
        found: Encoding,
        configured: Encoding,
    },
    #[error("{}: append does not continue the stored log: expected seq {expected}, found {found}", path.display())]
    SeqMismatch {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("{}: refusing to write header: {reason}", path.display())]
    BadHeader { path: PathBuf, reason: String },
    #[error(
        "{}: file is {found} bytes but this writer last left it at {expected}: another writer \
         touched it",
        path.display()
    )]
    LengthChanged {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error(
        "{}: append failed ({source}) and truncating back to {len} bytes failed too ({rollback}); \
         read and repair the file before writing again",
        path.display()
    )]
    RollbackFailed {
        path: PathBuf,
        len: u64,
        source: io::Error,
        rollback: io::Error,
    },
    #[error("{}: an earlier append could not be rolled back; read and repair the file first", path.display())]
    Poisoned { path: PathBuf },
    #[error("{}: cannot serialize the batch: {source}", path.display())]
    Encode {
        path: PathBuf,
        source: serde_json::Error,
    },
}
