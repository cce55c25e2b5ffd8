//! Export: the session, its subagents' sessions and their attachments, read from the stores and
//! packed with a manifest that lists every entry's size and sha256. The archive is built in
//! memory (the manifest comes first and holds the checksums of what follows) and written to a
//! file by staging it beside the target and renaming it over.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use dsh_session_jsonl::{
    Encoding, SessionHeader, encode_lines, encode_session_id, find_session, list_sessions_any,
    read_session,
};
use dsh_session_log::SessionEvent;

use crate::Stores;
use crate::attachments::{attachment_file, attachment_hex, attachment_ids};
use crate::error::{ArchiveError, io};
use crate::manifest::{
    FORMAT, FORMAT_VERSION, MANIFEST_PATH, Manifest, ManifestAttachment, ManifestEntry,
    ManifestSession, sha256_hex,
};

/// The zstd level of the archive (the store's logs use the library's default too).
const LEVEL: i32 = 3;

/// A built archive.
#[derive(Debug)]
pub struct Exported {
    pub bytes: Vec<u8>,
    pub manifest: Manifest,
}

/// The stored log of `id`, in whichever encoding the root keeps it (a lookup in the other
/// encoding refuses the root, so each is tried and a refusal counts only when neither finds
/// it).
pub(crate) fn find_any(root: &Path, id: &str) -> Result<Option<PathBuf>, ArchiveError> {
    let mut refusal = None;
    for encoding in [Encoding::Zstd, Encoding::Raw] {
        match find_session(root, encoding, id) {
            Ok(Some(path)) => return Ok(Some(path)),
            Ok(None) => {}
            Err(error) => refusal = refusal.or(Some(error)),
        }
    }
    match refusal {
        Some(error) => match error {
            // The other encoding's files are what the first lookup tripped on; nothing of
            // this id in either.
            dsh_session_jsonl::RootError::EncodingMismatch { .. } => Ok(None),
            other => Err(other.into()),
        },
        None => Ok(None),
    }
}

/// The stored log of `id`, or "not found".
fn find(root: &Path, id: &str) -> Result<PathBuf, ArchiveError> {
    find_any(root, id)?.ok_or_else(|| ArchiveError::NotFound {
        id: id.to_owned(),
        root: root.to_owned(),
    })
}

/// `id` and its subagents' sessions among `headers`, a child after its parent (depth first,
/// each level in creation order), each with its parent in the archive.
pub fn subagent_tree(id: &str, headers: &[SessionHeader]) -> Vec<(String, Option<String>)> {
    let mut children: HashMap<&str, Vec<&SessionHeader>> = HashMap::new();
    for header in headers {
        if header.origin.as_deref() == Some("subagent")
            && let Some(parent) = &header.parent_session
        {
            children.entry(parent.as_str()).or_default().push(header);
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    }
    let mut order: Vec<(String, Option<String>)> = Vec::new();
    let mut stack = vec![(id.to_owned(), None)];
    while let Some((next, parent)) = stack.pop() {
        // A header naming an ancestor as its child cannot loop the walk.
        if order.iter().any(|(seen, _)| *seen == next) {
            continue;
        }
        if let Some(list) = children.get(next.as_str()) {
            stack.extend(
                list.iter()
                    .rev()
                    .map(|child| (child.id.clone(), Some(next.clone()))),
            );
        }
        order.push((next, parent));
    }
    order
}

/// `id` and its subagents' sessions under `root`.
fn tree(root: &Path, id: &str) -> Result<Vec<(String, Option<String>)>, ArchiveError> {
    let listing = list_sessions_any(root)?;
    let headers: Vec<SessionHeader> = listing.sessions.into_iter().map(|l| l.header).collect();
    Ok(subagent_tree(id, &headers))
}

/// One log an archive carries: its id, its parent in the archive (a subagent's), its header
/// and its events, from whichever store keeps it.
#[derive(Debug)]
pub struct ArchivedLog {
    pub id: String,
    pub parent: Option<String>,
    pub header: SessionHeader,
    pub events: Vec<SessionEvent>,
}

/// Builds the archive of stored session `id` (`now` stamps the manifest, epoch milliseconds).
pub fn export_session(stores: &Stores, id: &str, now: i64) -> Result<Exported, ArchiveError> {
    // The session itself first: an unknown id is "not found", not an empty tree.
    find(&stores.sessions, id)?;
    let mut logs = Vec::new();
    for (session, parent) in tree(&stores.sessions, id)? {
        let read = read_session(&find(&stores.sessions, &session)?)?;
        logs.push(ArchivedLog {
            id: session,
            parent,
            header: read.header,
            events: read.events,
        });
    }
    export_logs(id, &logs, &stores.attachments, now)
}

/// Builds the archive of session `id` from `logs` (it first, its subagents' after) and the
/// images they refer to, read from the attachment store `attachments`.
pub fn export_logs(
    id: &str,
    logs: &[ArchivedLog],
    attachments_dir: &Path,
    now: i64,
) -> Result<Exported, ArchiveError> {
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    let mut sessions = Vec::new();
    let mut referenced = std::collections::BTreeSet::new();
    for log in logs {
        let data: Vec<&serde_json::Value> = log.events.iter().map(|event| &event.data).collect();
        referenced.extend(attachment_ids(data));
        let mut text = log.header.to_line();
        text.push('\n');
        text.push_str(
            &encode_lines(&log.events, true).map_err(|source| ArchiveError::Encode {
                id: log.id.clone(),
                source,
            })?,
        );
        let entry = format!("sessions/{}.jsonl", encode_session_id(&log.id)?);
        sessions.push(ManifestSession {
            id: log.id.clone(),
            parent: log.parent.clone(),
            path: entry.clone(),
            events: log.events.len() as u64,
        });
        entries.push((entry, text.into_bytes()));
    }
    let mut attachments = Vec::new();
    let mut missing = Vec::new();
    for id in referenced {
        let (Some(file), Some(hex)) = (attachment_file(attachments_dir, &id), attachment_hex(&id))
        else {
            missing.push(id);
            continue;
        };
        match std::fs::read(&file) {
            Ok(bytes) => {
                let entry = format!("attachments/{hex}");
                attachments.push(ManifestAttachment {
                    id,
                    path: entry.clone(),
                });
                entries.push((entry, bytes));
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => missing.push(id),
            Err(error) => return Err(io(&file, "read attachment")(error)),
        }
    }
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        version: FORMAT_VERSION,
        exported_at: now,
        exported_by: format!("dsh-host {}", env!("CARGO_PKG_VERSION")),
        session: id.to_owned(),
        sessions,
        attachments,
        missing_attachments: missing,
        entries: entries
            .iter()
            .map(|(path, bytes)| ManifestEntry {
                path: path.clone(),
                bytes: bytes.len() as u64,
                sha256: sha256_hex(bytes),
            })
            .collect(),
    };
    let manifest_bytes =
        serde_json::to_vec_pretty(&manifest).map_err(|source| ArchiveError::Encode {
            id: id.to_owned(),
            source,
        })?;
    let bytes = pack(
        std::iter::once((MANIFEST_PATH, manifest_bytes.as_slice())).chain(
            entries
                .iter()
                .map(|(path, bytes)| (path.as_str(), bytes.as_slice())),
        ),
        now,
    )
    .map_err(io(Path::new(id), "pack archive"))?;
    Ok(Exported { bytes, manifest })
}

/// A tar of plain files (mode 0644, one mtime), compressed.
fn pack<'a>(
    entries: impl Iterator<Item = (&'a str, &'a [u8])>,
    now: i64,
) -> std::io::Result<Vec<u8>> {
    let encoder = zstd::stream::Encoder::new(Vec::new(), LEVEL)?;
    let mut builder = tar::Builder::new(encoder);
    for (path, bytes) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(u64::try_from(now / 1000).unwrap_or(0));
        builder.append_data(&mut header, path, bytes)?;
    }
    let encoder = builder.into_inner()?;
    encoder.finish()
}

/// Writes `bytes` to `path`: staged beside it and renamed over, so a reader never sees half an
/// archive and a failed write leaves no file.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ArchiveError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "archive".to_owned());
    let staged = dir.join(format!(".{name}.{}.partial", std::process::id()));
    let written = std::fs::File::create(&staged)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .map_err(io(&staged, "write archive"))
        .and_then(|()| {
            std::fs::rename(&staged, path).map_err(io(path, "rename archive into place"))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    written
}
