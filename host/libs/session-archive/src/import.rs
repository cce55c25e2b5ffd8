//! Import: an archive checked whole ([`crate::unpack`]), its logs read and checked as the store
//! would read them, its ids checked against the store, and only then written (see
//! [`crate::stage`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use dsh_session_jsonl::{
    Encoding, ReadSession, check_root_encoding, check_session_id, decode_session,
};
use dsh_session_log::{Severity, TypeRegistry, check_log};
use serde_json::Value;

use crate::Stores;
use crate::attachments::attachment_hex;
use crate::error::ArchiveError;
use crate::export::find_any;
use crate::manifest::Manifest;
use crate::stage::{Staged, commit};
use crate::unpack::unpack;

/// How to import.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The encoding to write the logs in; `None`: the one the sessions root already holds
    /// (zstd, the store's default, for an empty root).
    pub encoding: Option<Encoding>,
    /// Import a copy under fresh ids instead of refusing ids the store already holds.
    pub fresh_ids: bool,
}

/// One session as imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedSession {
    pub id: String,
    /// Its id in the archive (differs under [`ImportOptions::fresh_ids`]).
    pub archived_id: String,
    pub events: u64,
    pub path: PathBuf,
}

/// What an import wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The session, then its subagents' sessions.
    pub sessions: Vec<ImportedSession>,
    /// Attachments written, and those the store already held.
    pub attachments_written: usize,
    pub attachments_present: usize,
    pub manifest: Manifest,
}

/// The encoding `root` holds: `None` when it holds no session (or does not exist).
pub fn root_encoding(root: &Path) -> Result<Option<Encoding>, ArchiveError> {
    let zstd = check_root_encoding(root, Encoding::Zstd).is_ok();
    let raw = check_root_encoding(root, Encoding::Raw).is_ok();
    Ok(match (zstd, raw) {
        (true, true) => None,
        (true, false) => Some(Encoding::Zstd),
        (false, true) => Some(Encoding::Raw),
        // Both refused: the root mixes encodings; the store refuses it, so does an import.
        (false, false) => match check_root_encoding(root, Encoding::Zstd) {
            Err(error) => return Err(error.into()),
            Ok(()) => None,
        },
    })
}

/// Replaces every JSON string that is exactly an old id by its new id, in every line.
fn rename_ids(text: &str, ids: &HashMap<String, String>) -> Result<String, serde_json::Error> {
    fn walk(value: &mut Value, ids: &HashMap<String, String>) {
        match value {
            Value::String(text) => {
                if let Some(new) = ids.get(text.as_str()) {
                    *text = new.clone();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| walk(item, ids)),
            Value::Object(map) => map.values_mut().for_each(|item| walk(item, ids)),
            _ => {}
        }
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut value: Value = serde_json::from_str(line)?;
        walk(&mut value, ids);
        out.push_str(&serde_json::to_string(&value)?);
        out.push('\n');
    }
    Ok(out)
}

/// Each archived log read as the store reads one, and checked.
fn read_logs(
    archive: &str,
    manifest: &Manifest,
    entries: &HashMap<String, Vec<u8>>,
    ids: &HashMap<String, String>,
) -> Result<Vec<(String, ReadSession)>, ArchiveError> {
    let mut logs = Vec::new();
    for session in &manifest.sessions {
        let bad = |reason: String| ArchiveError::BadEntry {
            archive: archive.to_owned(),
            path: session.path.clone(),
            reason,
        };
        let bytes = entries.get(&session.path).ok_or_else(|| {
            bad("the manifest names it but the archive lists no such entry".to_owned())
        })?;
        let renamed;
        let bytes = match ids.is_empty() {
            true => bytes.as_slice(),
            false => {
                let text = std::str::from_utf8(bytes).map_err(|error| bad(error.to_string()))?;
                renamed = rename_ids(text, ids).map_err(|error| bad(error.to_string()))?;
                renamed.as_bytes()
            }
        };
        let named = PathBuf::from(format!("{archive}:{}", session.path));
        let read = decode_session(&named, bytes, Encoding::Raw)?;
        if let Some(repair) = &read.repair {
            return Err(bad(format!(
                "the log ends in a torn line: {}",
                repair.reason
            )));
        }
        let expected = ids.get(&session.id).unwrap_or(&session.id);
        if &read.header.id != expected {
            return Err(bad(format!(
                "its header is session `{}`, the manifest says `{}`",
                read.header.id, session.id
            )));
        }
        if read.events.len() as u64 != session.events {
            return Err(bad(format!(
                "{} events, the manifest says {}",
                read.events.len(),
                session.events
            )));
        }
        let problems = check_log(&read.events, &TypeRegistry::default());
        if let Some(problem) = problems
            .iter()
            .find(|problem| problem.severity == Severity::Corruption)
        {
            return Err(bad(format!(
                "seq {} ({}): {}: {}",
                problem.seq,
                problem.kind,
                problem.rule.as_str(),
                problem.detail
            )));
        }
        logs.push((session.id.clone(), read));
    }
    Ok(logs)
}

/// The manifest's own rules: the exported session first, ids that are session ids and unique,
/// every entry a session's or an attachment's.
fn check_manifest(archive: &str, manifest: &Manifest) -> Result<(), ArchiveError> {
    let bad = |path: &str, reason: String| ArchiveError::BadEntry {
        archive: archive.to_owned(),
        path: path.to_owned(),
        reason,
    };
    const MANIFEST: &str = crate::manifest::MANIFEST_PATH;
    if manifest.sessions.first().map(|first| &first.id) != Some(&manifest.session) {
        return Err(bad(
            MANIFEST,
            "the exported session is not its first session".to_owned(),
        ));
    }
    let mut seen = HashSet::new();
    for session in &manifest.sessions {
        check_session_id(&session.id).map_err(|error| bad(MANIFEST, error.to_string()))?;
        if !seen.insert(session.id.as_str()) {
            return Err(bad(
                MANIFEST,
                format!("session `{}` is listed twice", session.id),
            ));
        }
    }
    let mut named: HashSet<&str> = manifest.sessions.iter().map(|s| s.path.as_str()).collect();
    for attachment in &manifest.attachments {
        let Some(hex) = attachment_hex(&attachment.id) else {
            return Err(bad(
                MANIFEST,
                format!("`{}` is no attachment id", attachment.id),
            ));
        };
        if attachment.path != format!("attachments/{hex}") {
            return Err(bad(
                &attachment.path,
                format!("not the path of `{}`", attachment.id),
            ));
        }
        named.insert(attachment.path.as_str());
    }
    match manifest
        .entries
        .iter()
        .find(|entry| !named.contains(entry.path.as_str()))
    {
        Some(entry) => Err(bad(
            &entry.path,
            "no session or attachment of the manifest".to_owned(),
        )),
        None => Ok(()),
    }
}

/// Checks `bytes` as an archive (named `archive` in errors) and loads it into `stores`.
/// Nothing is written unless every check passed.
pub fn import_archive(
    stores: &Stores,
    archive: &str,
    bytes: &[u8],
    options: ImportOptions,
) -> Result<Imported, ArchiveError> {
    let unpacked = unpack(archive, bytes)?;
    let manifest = unpacked.manifest;
    check_manifest(archive, &manifest)?;
    let ids: HashMap<String, String> = match options.fresh_ids {
        true => manifest
            .sessions
            .iter()
            .map(|session| (session.id.clone(), dsh_protocol::fresh_uuid()))
            .collect(),
        false => HashMap::new(),
    };
    let logs = read_logs(archive, &manifest, &unpacked.entries, &ids)?;
    for (_, read) in &logs {
        if let Some(existing) = find_any(&stores.sessions, &read.header.id)? {
            return Err(ArchiveError::Exists {
                id: read.header.id.clone(),
                existing,
            });
        }
    }
    let encoding = match options.encoding {
        Some(encoding) => encoding,
        None => root_encoding(&stores.sessions)?.unwrap_or(Encoding::Zstd),
    };
    let attachments: Vec<(&str, &[u8])> = manifest
        .attachments
        .iter()
        .filter_map(|attachment| {
            let hex = attachment_hex(&attachment.id)?;
            let bytes = unpacked.entries.get(&attachment.path)?;
            Some((hex, bytes.as_slice()))
        })
        .collect();
    let Staged {
        sessions,
        attachments_written,
        attachments_present,
    } = commit(stores, encoding, &logs, &attachments)?;
    let sessions = sessions
        .into_iter()
        .zip(&logs)
        .map(|(path, (archived_id, read))| ImportedSession {
            id: read.header.id.clone(),
            archived_id: archived_id.clone(),
            events: read.events.len() as u64,
            path,
        })
        .collect();
    Ok(Imported {
        sessions,
        attachments_written,
        attachments_present,
        manifest,
    })
}
