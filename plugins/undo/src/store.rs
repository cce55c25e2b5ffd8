//! The content-addressed store of pre- and post-images: each object is a file's (or a symlink
//! target's) bytes under `objects/<first two hex digits>/<sha256 hex>`, written once through a
//! temporary name and a rename, so a reader never sees half an object. Objects are copies, not
//! hard links: a command that rewrites a file in place would change a hard-linked snapshot too.
//! Nothing is ever removed by the plugin (see the crate's limits); removing an object makes the
//! undo that needs it refuse, naming the files.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// Why an object could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("undo store {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The store at one directory.
#[derive(Debug)]
pub(crate) struct Store {
    root: PathBuf,
    serial: AtomicU64,
}

/// The sha256 of `bytes`, in hex.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in hash {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

impl Store {
    pub(crate) fn new(root: PathBuf) -> Self {
        Self {
            root,
            serial: AtomicU64::new(0),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Where object `hash` lives (`None` for a name that is not a sha256 in hex, which only a
    /// hand-edited log can hold).
    pub(crate) fn path_of(&self, hash: &str) -> Option<PathBuf> {
        let valid = hash.len() == 64 && hash.bytes().all(|byte| byte.is_ascii_hexdigit());
        valid.then(|| self.root.join("objects").join(&hash[..2]).join(hash))
    }

    /// Whether object `hash` is there.
    pub(crate) fn has(&self, hash: &str) -> bool {
        self.path_of(hash).is_some_and(|path| path.is_file())
    }

    /// Stores `bytes` (unless an object of the same content is there) and answers its hash.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<String, StoreError> {
        let hash = digest(bytes);
        let Some(path) = self.path_of(&hash) else {
            return Ok(hash);
        };
        if path.is_file() {
            return Ok(hash);
        }
        let dir = path.parent().unwrap_or(&self.root);
        fs::create_dir_all(dir).map_err(io(dir))?;
        let temporary = dir.join(format!(
            ".{hash}.{}.{}",
            std::process::id(),
            self.serial.fetch_add(1, Ordering::Relaxed)
        ));
        let mut file = fs::File::create(&temporary).map_err(io(&temporary))?;
        file.write_all(bytes).map_err(io(&temporary))?;
        drop(file);
        fs::rename(&temporary, &path).map_err(io(&path))?;
        Ok(hash)
    }

    /// The bytes of object `hash`.
    pub(crate) fn get(&self, hash: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(hash).unwrap_or_else(|| self.root.join(hash));
        fs::read(&path).map_err(io(&path))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn an_object_is_stored_once_by_content() {
        let dir = std::env::temp_dir().join(format!("undo-store-{}", std::process::id()));
        let store = Store::new(dir.clone());
        let first = store.put(b"hello").unwrap();
        assert_eq!(first, store.put(b"hello").unwrap());
        assert!(store.has(&first));
        assert_eq!(store.get(&first).unwrap(), b"hello");
        assert!(!store.has(&digest(b"other")));
        assert!(store.path_of("../../etc/passwd").is_none());
        let _ = fs::remove_dir_all(dir);
    }
}
