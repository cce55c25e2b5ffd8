//! The reference harness's JSONL session format, version 0, and its directory layout: where a
//! session's file lives (`<root>/--<project key>--/<encoded id>/session.jsonl[.zstd]`), the header
//! line, the packed `*-chunks` storage rows, raw lines versus concatenated checksummed zstd frames,
//! torn-tail detection and the corruption errors. Everything here is synchronous and close to pure:
//! codecs over bytes plus a few file operations (read, first publication by hard link, append with
//! fsync and rollback, truncate), meant to run on the host's blocking pool.
//!
//! It does not own batching windows or timers, per-session locking or the single-writer rule, the
//! plugin boundary or service registration, nor the log's own rules (known event types, surface
//! ops, turn bracketing, crash-repair closers): those live in the persistence plugin and in
//! `dsh-session-log`. The one log rule applied here is the reference's torn-tail rule, because
//! deciding what may be truncated is part of reading the file.

mod chunks;
mod error;
mod frames;
mod header;
mod layout;
mod listing_file;
mod read;
mod record;
mod root;
mod scan;
mod size;
mod write;

pub use chunks::{
    ChunkRow, CommittedLine, RowKind, StorageRecord, encode_committed, encode_lines,
    pack_chunk_runs,
};
pub use error::{LayoutError, ReadError, RecordError, RootError, VersionDirection, WriteError};
pub use header::{SESSION_FORMAT_VERSION, SessionHeader};
pub use layout::{
    Encoding, NO_CWD_DIR, check_session_id, decode_session_id, encode_session_id, log_path,
    parse_trash_entry, project_dir, project_key, session_dir, trash_entry_name,
};
pub use listing_file::{ARCHIVED_FILE, LISTING_FILE, ListingFile, last_message_time};
pub use read::{
    ReadLines, ReadSession, Repair, decode_session, read_header, read_session, read_session_lines,
};
pub use record::decode_record;
pub use root::{
    BrokenSession, ListedSession, Listing, check_root_encoding, find_session, list_sessions,
    list_sessions_any,
};
pub use size::{SizeReport, encode_raw_log, size_report};
pub use write::{SessionWriter, WriterOptions, truncate_to};
