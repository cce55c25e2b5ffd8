//! Instruction files as last read, by path, so that a step whose files did not change reads
//! none of them again: the chain is looked at before every step (a file can change between
//! any two), and an `AGENTS.md` read, hashed and copied each time cost a step more than the
//! look itself. A file is taken as unchanged when its device, inode, size, modification and
//! change times are the ones it had when read; a file changed within [`SETTLED`] of its
//! reading is never kept, so a second write within one tick of the file system's clock (same
//! size, same times) cannot go unseen.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use dsh_plugin_api::lock;

/// How long after its last change a file is trusted to keep its text while its stamp holds,
/// where the file system stamps whole seconds (FAT's two), so a later change can carry the
/// same time.
const SETTLED: Duration = Duration::from_secs(2);
/// The same where it stamps nanoseconds (a time with a fraction of a second): its clock moves
/// in ticks of at most 10 ms (a 100 Hz kernel), so a change two ticks later carries a later
/// time.
const SETTLED_FINE: Duration = Duration::from_millis(50);
/// Files kept at once; past this many the cache starts over.
const KEPT: usize = 1024;

/// What identifies one version of a file (or of a directory's list of names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(metadata: &std::fs::Metadata) -> Self {
        Self {
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }
}

/// One file's text and the digest of its trimmed text (what repeats are found by).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text {
    pub(crate) content: Arc<str>,
    pub(crate) trimmed_digest: Arc<str>,
}

#[derive(Default)]
pub(crate) struct FileCache(Mutex<HashMap<PathBuf, (Stamp, Text)>>);

impl FileCache {
    /// The text of a regular file (a symlink followed) of at most `max` bytes; `None` for
    /// anything else (a FIFO or a device by that name must not hang or flood the host).
    pub(crate) fn read(&self, path: &Path, max: usize) -> Option<Text> {
        let metadata = std::fs::metadata(path).ok()?;
        if !metadata.is_file() || metadata.len() > max as u64 {
            return None;
        }
        let stamp = Stamp::of(&metadata);
        if let Some((kept, text)) = lock(&self.0).get(path)
            && *kept == stamp
        {
            return Some(text.clone());
        }
        let content = read_whole(path, max)?;
        let text = Text {
            trimmed_digest: Arc::from(crate::instructions::digest(content.trim())),
            content: Arc::from(content),
        };
        let mut kept = lock(&self.0);
        match settled(&metadata) {
            true => {
                if kept.len() >= KEPT {
                    kept.clear();
                }
                kept.insert(path.to_path_buf(), (stamp, text.clone()));
            }
            false => {
                kept.remove(path);
            }
        }
        Some(text)
    }
}

/// Whether a change made to the file (or directory) from now on is sure to change its stamp:
/// it last changed long enough ago for the file system's clock to have moved past that time.
pub(crate) fn settled(metadata: &std::fs::Metadata) -> bool {
    settled_at(metadata).is_some_and(|at| SystemTime::now() >= at)
}

/// When [`settled`] turns true for this version of the file (or directory).
pub(crate) fn settled_at(metadata: &std::fs::Metadata) -> Option<SystemTime> {
    let needed = match metadata.mtime_nsec() {
        0 => SETTLED,
        _ => SETTLED_FINE,
    };
    Some(metadata.modified().ok()? + needed)
}

/// At most `max` bytes of `path`, as text (invalid UTF-8 replaced); `None` past `max`.
fn read_whole(path: &Path, max: usize) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() > max {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dsh-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Sets a file's modification time `ago` in the past.
    fn age(path: &Path, ago: Duration) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - ago).unwrap();
    }

    #[test]
    fn a_settled_file_is_read_once_and_again_when_it_changes() {
        let dir = scratch("settled");
        let path = dir.join("AGENTS.md");
        std::fs::write(&path, "rule one").unwrap();
        age(&path, Duration::from_secs(60));
        let cache = FileCache::default();
        let first = cache.read(&path, 1024).unwrap();
        let second = cache.read(&path, 1024).unwrap();
        assert!(Arc::ptr_eq(&first.content, &second.content), "read twice");
        // Same size, older time: the stamp still differs (ctime moved), so it is read again.
        std::fs::write(&path, "rule two").unwrap();
        age(&path, Duration::from_secs(60));
        assert_eq!(&*cache.read(&path, 1024).unwrap().content, "rule two");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_changed_just_now_is_not_kept() {
        let dir = scratch("fresh");
        let path = dir.join("AGENTS.md");
        std::fs::write(&path, "fresh").unwrap();
        // Ahead of the clock rather than just now, so a slow test cannot see it settle.
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(3600))
            .unwrap();
        let cache = FileCache::default();
        let first = cache.read(&path, 1024).unwrap();
        let second = cache.read(&path, 1024).unwrap();
        assert!(!Arc::ptr_eq(&first.content, &second.content));
        assert!(lock(&cache.0).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn what_is_not_a_small_regular_file_is_not_read() {
        let dir = scratch("odd");
        let cache = FileCache::default();
        assert!(cache.read(&dir, 1024).is_none(), "a directory");
        let big = dir.join("big.md");
        std::fs::write(&big, "x".repeat(10)).unwrap();
        assert!(cache.read(&big, 9).is_none(), "over the limit");
        assert!(cache.read(&dir.join("absent.md"), 9).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
