//! The manifest: what an archive holds and how to check it. Its format name and version are
//! read from the raw JSON before anything else, so a future archive is refused by name rather
//! than as malformed.

use serde::{Deserialize, Serialize};

/// The format's name, the manifest's `format`.
pub const FORMAT: &str = "dsh-session-archive";
/// The only version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's path in the archive (always its first entry).
pub const MANIFEST_PATH: &str = "manifest.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    /// Epoch milliseconds.
    pub exported_at: i64,
    /// The program and version that wrote it.
    pub exported_by: String,
    /// The exported session (the first of `sessions`).
    pub session: String,
    /// The session, then its subagents' sessions (a child after its parent).
    pub sessions: Vec<ManifestSession>,
    pub attachments: Vec<ManifestAttachment>,
    /// Attachment ids a log refers to whose bytes were not in the store at export.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_attachments: Vec<String>,
    /// Every other entry of the archive, in order.
    pub entries: Vec<ManifestEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestSession {
    pub id: String,
    /// The parent session of a subagent's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Its entry's path.
    pub path: String,
    pub events: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestAttachment {
    /// `sha256:<hex>`.
    pub id: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestEntry {
    pub path: String,
    pub bytes: u64,
    /// Lower-case hex.
    pub sha256: String,
}

impl Manifest {
    /// Total events of all sessions.
    pub fn event_count(&self) -> u64 {
        self.sessions.iter().map(|session| session.events).sum()
    }
}

/// The sha256 of `bytes` in lower-case hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    let digest = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}
