//! `session.lock`: one process appends to a session at a time.
//!
//! The lock is an exclusive `flock` on `session.lock` in the session's directory, holding the
//! owner's pid for the message another process gets. The kernel drops it when the owner exits,
//! however it exits, so a lock left by a killed process is simply taken over.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// A held lock; released when dropped.
pub(crate) struct SessionLock {
    _file: File,
}

/// Takes the lock of the session in `dir`, or says which process holds it.
pub(crate) fn acquire(dir: &Path) -> Result<SessionLock, LockError> {
    std::fs::create_dir_all(dir)
        .map_err(|error| LockError::Io(format!("{}: {error}", dir.display())))?;
    let path = dir.join("session.lock");
    let io = |error: std::io::Error| LockError::Io(format!("{}: {error}", path.display()));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => {
            file.set_len(0).map_err(io)?;
            file.seek(SeekFrom::Start(0)).map_err(io)?;
            // Not synced: the pid is read only while the lock is held (it is in the page cache
            // for every reader then), and after a machine crash no lock is held at all.
            write!(file, "{}", std::process::id()).map_err(io)?;
            Ok(SessionLock { _file: file })
        }
        Err(TryLockError::WouldBlock) => {
            let mut owner = String::new();
            let _ = file.read_to_string(&mut owner);
            Err(LockError::Held {
                owner: owner.trim().to_owned(),
            })
        }
        Err(TryLockError::Error(error)) => Err(io(error)),
    }
}

#[derive(Debug)]
pub(crate) enum LockError {
    Held { owner: String },
    Io(String),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Held { owner } => write!(f, "session is open in process {owner}"),
            Self::Io(message) => f.write_str(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_told_the_owner_and_a_released_lock_is_free_again() {
        let dir = std::env::temp_dir().join(format!("dsh-lock-test-{}", std::process::id()));
        let first = acquire(&dir).unwrap();
        // flock locks belong to open file descriptions: a second open in this process conflicts
        // exactly as another process would.
        match acquire(&dir) {
            Err(LockError::Held { owner }) => assert_eq!(owner, std::process::id().to_string()),
            Err(LockError::Io(message)) => panic!("expected the lock to be held, got {message}"),
            Ok(_) => panic!("the lock was taken twice"),
        }
        drop(first);
        assert!(acquire(&dir).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
