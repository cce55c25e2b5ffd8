//! Writing a checked import: every log and attachment is written into a staging folder beside
//! the sessions root first (through the store's own writer, in the root's encoding), then each
//! session folder and attachment is renamed into place. A rename that fails takes back the ones
//! already made, and the staging folder goes either way, so a failed import leaves the stores
//! as they were.

use std::path::{Path, PathBuf};

use dsh_session_jsonl::{Encoding, ReadSession, SessionWriter, WriterOptions, session_dir};

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

use crate::Stores;
use crate::attachments::attachment_file;
use crate::error::{ArchiveError, io};

/// Where each session landed, and what happened to the attachments.
#[derive(Debug)]
pub(crate) struct Staged {
    pub(crate) sessions: Vec<PathBuf>,
    pub(crate) attachments_written: usize,
    pub(crate) attachments_present: usize,
}

/// Creates `dir` and its missing parents, each 0700 as the attachment store makes them.
fn private_dirs(dir: &Path) -> Result<(), ArchiveError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir, "create attachment folder"))
}

/// A folder beside `root` no other import picks (same filesystem, so renames are atomic).
fn staging_dir(root: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let name = root.file_name().map_or_else(
        || "sessions".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    root.with_file_name(format!(".{name}.import-{}-{nanos:x}", std::process::id()))
}

/// What was moved into place so far, to take back if a later move fails.
#[derive(Default)]
struct Placed(Vec<(PathBuf, PathBuf)>);

impl Placed {
    fn rename(&mut self, from: &Path, to: &Path) -> Result<(), ArchiveError> {
        if to.exists() {
            return Err(ArchiveError::Io {
                path: to.to_owned(),
                op: "move into place",
                source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            });
        }
        std::fs::rename(from, to).map_err(io(to, "move into place"))?;
        self.0.push((from.to_owned(), to.to_owned()));
        Ok(())
    }

    fn undo(self) {
        for (from, to) in self.0.into_iter().rev() {
            let _ = std::fs::rename(&to, &from);
        }
    }
}

fn write_staged(
    staging: &Path,
    encoding: Encoding,
    logs: &[(String, ReadSession)],
    attachments: &[(&str, &[u8])],
) -> Result<(), ArchiveError> {
    let sessions = staging.join("sessions");
    for (_, read) in logs {
        let options = WriterOptions {
            encoding,
            pack_chunks: true,
        };
        let mut writer = SessionWriter::create(&sessions, read.header.clone(), options)?;
        writer.append(&read.events)?;
    }
    let dir = staging.join("attachments");
    std::fs::create_dir_all(&dir).map_err(io(&dir, "create staging folder"))?;
    for (hex, bytes) in attachments {
        let file = dir.join(hex);
        // Objects are the owner's alone, as the store writes them.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file)
            .and_then(|mut out| {
                out.write_all(bytes)?;
                out.sync_all()
            })
            .map_err(io(&file, "write attachment"))?;
    }
    Ok(())
}

fn place(
    stores: &Stores,
    staging: &Path,
    logs: &[(String, ReadSession)],
    attachments: &[(&str, &[u8])],
    placed: &mut Placed,
) -> Result<Staged, ArchiveError> {
    let mut sessions = Vec::new();
    for (_, read) in logs {
        let header = &read.header;
        let from = session_dir(&staging.join("sessions"), header.cwd.as_deref(), &header.id)?;
        let to = session_dir(&stores.sessions, header.cwd.as_deref(), &header.id)?;
        if let Some(project) = to.parent() {
            std::fs::create_dir_all(project).map_err(io(project, "create project folder"))?;
        }
        placed.rename(&from, &to)?;
        sessions.push(to);
    }
    let (mut written, mut present) = (0, 0);
    for (hex, _) in attachments {
        let Some(to) = attachment_file(&stores.attachments, &format!("sha256:{hex}")) else {
            continue;
        };
        // Content-addressed: a file of that name already holds these bytes.
        if to.exists() {
            present += 1;
            continue;
        }
        if let Some(dir) = to.parent() {
            private_dirs(dir)?;
        }
        placed.rename(&staging.join("attachments").join(hex), &to)?;
        written += 1;
    }
    Ok(Staged {
        sessions,
        attachments_written: written,
        attachments_present: present,
    })
}

/// Writes the logs and attachments into a staging folder, then moves them into the stores.
pub(crate) fn commit(
    stores: &Stores,
    encoding: Encoding,
    logs: &[(String, ReadSession)],
    attachments: &[(&str, &[u8])],
) -> Result<Staged, ArchiveError> {
    let staging = staging_dir(&stores.sessions);
    std::fs::create_dir_all(&staging).map_err(io(&staging, "create staging folder"))?;
    let mut placed = Placed::default();
    let result = write_staged(&staging, encoding, logs, attachments)
        .and_then(|()| place(stores, &staging, logs, attachments, &mut placed));
    if result.is_err() {
        placed.undo();
    }
    let _ = std::fs::remove_dir_all(&staging);
    result
}
