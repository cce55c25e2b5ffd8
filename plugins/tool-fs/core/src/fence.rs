//! What a session's file tools may read and write, and the filesystem that holds them to it on
//! every single read and write, not only when a path is first checked.
//!
//! A path is checked, then used: a command running beside the tool can swap a directory on
//! that path for a symbolic link in between. So [`Fenced`] reads through
//! [`FileSystem::read_at_resolved`] and judges the real path of the file the bytes came from
//! (the bytes of anything the policy does not allow are dropped, never returned), and writes
//! through [`FileSystem::publish_no_symlinks`], which lands exactly at the real path that was
//! checked or nowhere. (A full-access session whose files an editor holds reads and writes
//! their text through it, `dsh_fs_local::ThroughClient`: nothing there is fenced.)

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_fs_local::{FileStat, FileSystem, PublishError, WalkRequest, Walked};

use crate::path::SandboxMode;

/// Where the kernel shows processes, devices and itself: the host's own environment
/// (`/proc/self/environ`, its keys) and memory are there. No file tool reads below them
/// outside full access.
const SYSTEM_TREES: [&str; 3] = ["/proc", "/sys", "/dev"];

/// The paths a session's file tools are fenced by.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) root: PathBuf,
    pub(crate) mode: SandboxMode,
    pub(crate) extra_writable_roots: Vec<PathBuf>,
    /// Kept read-only under the writable roots, except for a writable root inside one.
    pub(crate) protected: Vec<PathBuf>,
    /// Neither read nor written outside full access, except for a writable root inside one
    /// and the exposed paths (read only).
    pub(crate) hidden: Vec<PathBuf>,
    /// Readable again inside the hidden paths.
    pub(crate) exposed: Vec<PathBuf>,
    /// When set, reads are fenced too: only under these, the writable roots and the workspace.
    pub(crate) readable_roots: Option<Vec<PathBuf>>,
}

fn canonical_or_self(fs: &dyn FileSystem, path: &Path) -> PathBuf {
    fs.canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

impl Policy {
    /// The workspace and the extra writable roots.
    pub(crate) fn writable_roots(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.root).chain(&self.extra_writable_roots)
    }

    /// Whether the real path `key` lies under one of `paths` (each resolved the same way).
    fn under(fs: &dyn FileSystem, key: &Path, paths: &[PathBuf]) -> bool {
        paths
            .iter()
            .any(|path| key.starts_with(canonical_or_self(fs, path)))
    }

    /// Whether `key` lies in a hidden path, and not in a writable root or exposed path inside it.
    pub(crate) fn hides(&self, fs: &dyn FileSystem, key: &Path) -> bool {
        if self.mode == SandboxMode::DangerFullAccess {
            return false;
        }
        self.hidden.iter().any(|hidden| {
            let hidden = canonical_or_self(fs, hidden);
            key.starts_with(&hidden)
                && !self
                    .writable_roots()
                    .chain(&self.exposed)
                    .map(|inside| canonical_or_self(fs, inside))
                    .any(|inside| inside.starts_with(&hidden) && key.starts_with(inside))
        })
    }

    /// Whether the file at `path` may be read: not in a system tree, not hidden, and under a
    /// readable root when reads are fenced.
    pub(crate) fn may_read(&self, fs: &dyn FileSystem, path: &Path) -> bool {
        if self.mode == SandboxMode::DangerFullAccess {
            return true;
        }
        let key = canonical_or_self(fs, path);
        if SYSTEM_TREES.iter().any(|tree| key.starts_with(tree)) || self.hides(fs, &key) {
            return false;
        }
        let Some(readable) = &self.readable_roots else {
            return true;
        };
        let roots: Vec<PathBuf> = readable
            .iter()
            .chain(self.writable_roots())
            .cloned()
            .collect();
        Self::under(fs, &key, &roots)
    }
}

/// A filesystem whose reads and writes keep to a [`Policy`] (see the module docs); the rest
/// passes through.
#[derive(Clone)]
pub(crate) struct Fenced {
    pub(crate) inner: Arc<dyn FileSystem>,
    pub(crate) policy: Policy,
}

impl Fenced {
    fn refuse_read(path: &Path) -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is outside what the sandbox lets this session read (the path changed after it was checked)",
                path.display()
            ),
        )
    }
}

impl FileSystem for Fenced {
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        self.inner.stat(path)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.read_at_resolved(path, offset, len)
            .map(|(bytes, _)| bytes)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.inner.canonicalize(path)
    }

    fn publish(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        self.publish_no_symlinks(path, content, mode, create_only)
    }

    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()> {
        self.inner.walk(request, visit)
    }

    fn read_at_resolved(
        &self,
        path: &Path,
        offset: u64,
        len: usize,
    ) -> io::Result<(Vec<u8>, PathBuf)> {
        let (bytes, real) = self.inner.read_at_resolved(path, offset, len)?;
        match self.policy.may_read(self.inner.as_ref(), &real) {
            true => Ok((bytes, real)),
            false => Err(Self::refuse_read(path)),
        }
    }

    fn publish_no_symlinks(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        if self.policy.mode == SandboxMode::DangerFullAccess {
            return self.inner.publish(path, content, mode, create_only);
        }
        self.inner
            .publish_no_symlinks(path, content, mode, create_only)
    }
}
