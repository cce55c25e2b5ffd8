//! Atomic publication of a whole file: the content is staged in a private (0700) directory next
//! to the target, synced, then published with one rename, so a reader never sees a half-written
//! file. A create-only publication links instead, which fails if something appeared at the
//! target meanwhile: a concurrent creator's file is never clobbered.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Why a publication did not happen.
#[derive(Debug)]
pub enum PublishError {
    /// Something that is not a regular file is at the target.
    NotRegularFile,
    /// A create-only publication found a file at the target.
    Exists,
    Io(io::Error),
}

impl std::fmt::Display for PublishError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotRegularFile => f.write_str("not a regular file"),
            Self::Exists => f.write_str("the file exists"),
            Self::Io(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for PublishError {}

pub(crate) fn publish(
    key: &Path,
    content: &[u8],
    mode: Option<u32>,
    create_only: bool,
) -> Result<(), PublishError> {
    let directory = key.parent().unwrap_or_else(|| Path::new("/"));
    fs::create_dir_all(directory).map_err(PublishError::Io)?;
    let name = key
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let unique = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
    // A long target name must not make the staging name too long for the filesystem.
    let short: String = name.chars().take(32).collect();
    let staging = directory.join(format!(
        ".{short}.{}.{nanos}.{unique}.tmpdir",
        std::process::id()
    ));
    create_private_dir(&staging).map_err(PublishError::Io)?;
    let temp = staging.join(format!("{short}.tmp"));
    let result = stage_and_publish(&temp, key, content, mode, create_only);
    // The target is committed (or the publication failed); leftover staging is never a failure.
    let _ = fs::remove_dir_all(&staging);
    result
}

fn stage_and_publish(
    temp: &Path,
    key: &Path,
    content: &[u8],
    mode: Option<u32>,
    create_only: bool,
) -> Result<(), PublishError> {
    let mut file = File::options()
        .write(true)
        .create_new(true)
        .open(temp)
        .map_err(PublishError::Io)?;
    file.write_all(content).map_err(PublishError::Io)?;
    file.sync_all().map_err(PublishError::Io)?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(PublishError::Io)?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    drop(file);
    if !create_only {
        return fs::rename(temp, key).map_err(PublishError::Io);
    }
    match fs::hard_link(temp, key) {
        Ok(()) => Ok(()),
        Err(error) => match fs::symlink_metadata(key) {
            Ok(meta) if !meta.is_file() => Err(PublishError::NotRegularFile),
            Ok(_) => Err(PublishError::Exists),
            Err(_) if error.kind() == io::ErrorKind::AlreadyExists => Err(PublishError::Exists),
            Err(_) => Err(PublishError::Io(error)),
        },
    }
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
