//! Atomic publication of a whole file and the text helpers mutations share.
//!
//! A write stages the content in a private (0700) directory next to the target, syncs it, then
//! publishes it with one rename, so a reader never sees a half-written file. A guarded create
//! publishes with a hard link instead, which fails if something appeared at the target in the
//! meantime: a concurrent creator's file is never clobbered.

use std::fs::{self, File, Permissions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{ErrorCode, ToolError};
use crate::path::io_error;

static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Publish `content` at `key` atomically, creating parent directories. `permissions` are the
/// replaced file's (kept on update); `create_only` publishes without replacing anything.
pub(crate) fn write_file_atomic(
    key: &Path,
    display: &str,
    content: &[u8],
    permissions: Option<Permissions>,
    create_only: bool,
) -> Result<(), ToolError> {
    let io = |e: io::Error| io_error("write", display, &e);
    let directory = key.parent().unwrap_or_else(|| Path::new("/"));
    fs::create_dir_all(directory).map_err(io)?;
    let name = key
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let unique = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
    let staging = directory.join(format!(
        ".{name}.{}.{nanos}.{unique}.tmpdir",
        std::process::id()
    ));
    create_private_dir(&staging).map_err(io)?;
    let temp = staging.join(format!("{name}.tmp"));
    let result = stage_and_publish(&temp, key, display, content, permissions, create_only);
    // The target is committed (or the write failed); leftover staging is never a failure.
    let _ = fs::remove_dir_all(&staging);
    result
}

fn stage_and_publish(
    temp: &Path,
    key: &Path,
    display: &str,
    content: &[u8],
    permissions: Option<Permissions>,
    create_only: bool,
) -> Result<(), ToolError> {
    let io = |e: io::Error| io_error("write", display, &e);
    let mut file = File::options()
        .write(true)
        .create_new(true)
        .open(temp)
        .map_err(io)?;
    file.write_all(content).map_err(io)?;
    file.sync_all().map_err(io)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions).map_err(io)?;
    }
    drop(file);
    if !create_only {
        return fs::rename(temp, key).map_err(io);
    }
    match fs::hard_link(temp, key) {
        Ok(()) => Ok(()),
        Err(error) => match fs::symlink_metadata(key) {
            Ok(meta) if !meta.is_file() => Err(ToolError::new(
                ErrorCode::FsNotRegularFile,
                format!("cannot write \"{display}\": not a regular file"),
            )),
            Ok(_) => Err(not_observed_overwrite(display)),
            Err(_) if error.kind() == io::ErrorKind::AlreadyExists => {
                Err(not_observed_overwrite(display))
            }
            Err(_) => Err(io(error)),
        },
    }
}

/// The reference's refusal of a blind overwrite.
pub(crate) fn not_observed_overwrite(display: &str) -> ToolError {
    ToolError::new(
        ErrorCode::FsNotObserved,
        format!("cannot overwrite existing \"{display}\" without reading it first"),
    )
}

#[cfg(unix)]
fn create_private_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().mode(0o700).create(path)
}

#[cfg(not(unix))]
fn create_private_dir(path: &Path) -> io::Result<()> {
    fs::create_dir(path)
}

/// Collapse CRLF to LF, the in-memory form every edit and diff basis uses (lone `\r` stays).
pub(crate) fn normalize_line_endings(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Whether the file's first 4096 UTF-16 units hold more CRLF than bare LF line endings.
pub(crate) fn detect_crlf(raw: &str) -> bool {
    let mut units = 0;
    let mut end = raw.len();
    for (index, ch) in raw.char_indices() {
        if units + ch.len_utf16() > 4096 {
            end = index;
            break;
        }
        units += ch.len_utf16();
    }
    let sample = &raw[..end];
    let crlf = sample.matches("\r\n").count();
    let lf = sample.matches('\n').count() - crlf;
    crlf > lf
}

/// Convert LF-normalized text back to CRLF without doubling existing pairs.
pub(crate) fn restore_crlf(text: &str) -> String {
    normalize_line_endings(text).replace('\n', "\r\n")
}
