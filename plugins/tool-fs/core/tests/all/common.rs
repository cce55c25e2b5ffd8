//! Scratch workspaces for the integration tests: one unique directory per test under Cargo's
//! test temp dir, removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub(crate) struct Scratch {
    root: PathBuf,
}

impl Scratch {
    pub(crate) fn new(name: &str) -> Self {
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "tool-fs-core-{name}-{}-{unique}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create scratch dir");
        Self { root }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The display form of a path inside the scratch root.
    pub(crate) fn display(&self, rel: &str) -> String {
        self.root.join(rel).to_string_lossy().into_owned()
    }

    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, content).expect("write file");
        path
    }

    pub(crate) fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).expect("read file")
    }

    pub(crate) fn read_string(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).expect("utf-8")
    }

    /// Set a file's modification time to `secs` after the epoch (deterministic mtime order).
    pub(crate) fn set_mtime(&self, rel: &str, secs: u64) {
        let file = std::fs::File::options()
            .write(true)
            .open(self.root.join(rel))
            .expect("open");
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .expect("set mtime");
    }

    /// Replace the scratch root in `text` by `{{cwd}}`, as the recorder did.
    pub(crate) fn placeholder(&self, text: &str) -> String {
        text.replace(&*self.root.to_string_lossy(), "{{cwd}}")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
