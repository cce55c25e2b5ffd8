//! `dsh-session-archive`: one file that carries a session to another `$DSH_HOME`. An archive
//! is a tar stream compressed with zstd (the codec the logs already use) holding, in order:
//!
//! - `manifest.json`: the format's name and version ([`FORMAT`], [`FORMAT_VERSION`]), the
//!   exported session, every session of the archive (the session, then its subagents' sessions,
//!   found through their headers' `parentSession` and `origin: subagent`, depth first), the
//!   attachments, and each entry's size and sha256;
//! - `sessions/<encoded id>.jsonl`: each log as plain JSONL (header line, then the committed
//!   events as the store writes them), whatever encoding the store keeps it in;
//! - `attachments/<hex>`: the bytes of each image the logs refer to (`sha256:<hex>` ids).
//!
//! Import reads the whole archive and checks it before anything is written: a stream that ends
//! early, another format or version (refused by name), an entry that is a link or whose path
//! leaves the archive's folder, an entry the manifest does not list (or a listed one missing),
//! a checksum that differs, a log that does not read or breaks a rule of the log, and a session
//! id the store already holds are all refused with an error naming the archive and the entry.
//! Only then are the logs written into a staging folder beside the sessions root and renamed
//! into place, one session folder at a time (renamed back out if a later one fails).
//!
//! A session id that exists is refused, not overwritten: [`ImportOptions::fresh_ids`] imports
//! a copy instead, every session of the archive under a new UUID (headers rewritten, and every
//! JSON string in the events that is exactly an old id of the archive replaced by the new one,
//! so a parent still names its children).
//!
//! What it does not own: the store's batching, locks and listing (`session-persistence-jsonl`),
//! the attachment store's uploads and limits (only its files are read and written here).

mod attachments;
mod error;
mod export;
mod import;
mod manifest;
mod stage;
mod unpack;

pub use unpack::MAX_UNPACKED;

pub use attachments::{attachment_file, attachment_ids};
pub use error::ArchiveError;
pub use export::{ArchivedLog, Exported, export_logs, export_session, subagent_tree, write_file};
pub use import::{ImportOptions, Imported, ImportedSession, import_archive, root_encoding};
pub use manifest::{
    FORMAT, FORMAT_VERSION, MANIFEST_PATH, Manifest, ManifestAttachment, ManifestEntry,
    ManifestSession,
};

use std::path::PathBuf;

/// Where a home keeps what an archive carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stores {
    /// The sessions root (`$DSH_HOME/sessions`).
    pub sessions: PathBuf,
    /// The attachment store (`$DSH_HOME/attachments`).
    pub attachments: PathBuf,
}

impl Stores {
    /// The stores of a `$DSH_HOME`.
    pub fn of_home(home: &std::path::Path) -> Self {
        Self {
            sessions: home.join("sessions"),
            attachments: home.join("attachments"),
        }
    }
}

/// The file name an export suggests: `dsh-session-<id>.tar.zst`.
pub fn suggested_file_name(id: &str) -> String {
    let safe: String = id
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect();
    format!("dsh-session-{safe}.tar.zst")
}
