//! File versions and the read-before-edit observation policy.
//!
//! A version is what a later guarded mutation compares against: modification time, size and a
//! hash of the content. The hash closes the gap a coarse mtime leaves (two writes inside one
//! timestamp tick with equal sizes).
//!
//! [`Observations`] is the per-session record the reference's `fs-observation-policy` keeps: per
//! realpath key, the last authoritative observation, present with its version or confirmed
//! absent. It is internally locked so one session's calls on the blocking pool can share it; a
//! guarded mutation holds the lock from its version check to its record, which makes
//! check-then-write atomic among the calls of that session.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use dsh_fs_local::{FileStat, FileSystem, read_chunks};

/// The version of a regular file at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileVersion {
    /// Modification time, when the platform reports one.
    pub mtime: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
    /// Hash of the complete content (`DefaultHasher`, stable within one process).
    pub hash: u64,
}

/// One authoritative observation of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// The file existed at this version.
    Present(FileVersion),
    /// The file was confirmed absent (a read that found nothing).
    Absent,
}

/// A streaming content hasher; `write` on the std hasher is chunking-invariant.
#[derive(Default)]
pub(crate) struct ContentHash(DefaultHasher);

impl ContentHash {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    pub(crate) fn version_hash(&self) -> u64 {
        self.0.finish()
    }

    pub(crate) fn version(&self, meta: &FileStat) -> FileVersion {
        FileVersion {
            mtime: meta.mtime,
            size: meta.len,
            hash: self.0.finish(),
        }
    }
}

/// What a path is right now, following symlinks. `None` when absent.
pub(crate) fn stat(fs: &dyn FileSystem, path: &Path) -> io::Result<Option<FileStat>> {
    fs.stat(path)
}

/// The current version of the regular file at `path`, hashing it as a stream.
pub(crate) fn hash_file(
    fs: &dyn FileSystem,
    path: &Path,
    meta: &FileStat,
) -> io::Result<FileVersion> {
    let mut hash = ContentHash::default();
    read_chunks(
        fs,
        path,
        Some(meta),
        64 * 1024,
        |bytes| {
            hash.update(bytes);
            Ok(())
        },
        |error| error,
    )?;
    Ok(hash.version(meta))
}

/// The guard a mutation derives from the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteIntent {
    /// Unseen or confirmed absent: the write may only create.
    CreateIfAbsent,
    /// Seen present: the write may only replace that exact version.
    ReplaceIfVersion(FileVersion),
}

/// Per-session observed-file state (see the module docs).
#[derive(Debug, Default)]
pub struct Observations {
    by_key: Mutex<HashMap<PathBuf, Observation>>,
}

impl Observations {
    /// An empty record: nothing has been read yet.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, Observation>> {
        // A panic while holding the lock cannot leave the map half-updated (one insert), so the
        // poisoned state is still consistent.
        self.by_key.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The last observation of `key`, if any.
    pub fn get(&self, key: &Path) -> Option<Observation> {
        self.lock().get(key).copied()
    }

    /// Record an authoritative observation of `key` (what a read, write or edit saw).
    pub fn record(&self, key: PathBuf, observation: Observation) {
        self.lock().insert(key, observation);
    }

    /// Forget everything (session disposal).
    pub fn clear(&self) {
        self.lock().clear();
    }
}

pub(crate) fn write_intent(prior: Option<Observation>) -> WriteIntent {
    match prior {
        Some(Observation::Present(version)) => WriteIntent::ReplaceIfVersion(version),
        _ => WriteIntent::CreateIfAbsent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_does_not_depend_on_chunking() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let mut whole = ContentHash::default();
        whole.update(&data);
        let mut chunked = ContentHash::default();
        for chunk in data.chunks(7) {
            chunked.update(chunk);
        }
        assert_eq!(whole.0.finish(), chunked.0.finish());
    }

    #[test]
    fn intents_follow_the_record() {
        let version = FileVersion {
            mtime: None,
            size: 1,
            hash: 2,
        };
        assert_eq!(write_intent(None), WriteIntent::CreateIfAbsent);
        assert_eq!(
            write_intent(Some(Observation::Absent)),
            WriteIntent::CreateIfAbsent
        );
        assert_eq!(
            write_intent(Some(Observation::Present(version))),
            WriteIntent::ReplaceIfVersion(version)
        );
        let record = Observations::new();
        record.record(PathBuf::from("/k"), Observation::Absent);
        assert_eq!(record.get(Path::new("/k")), Some(Observation::Absent));
        record.clear();
        assert_eq!(record.get(Path::new("/k")), None);
    }
}
