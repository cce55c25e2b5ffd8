//! The file operations the file tools are built on, as one trait ([`FileSystem`]): stat
//! following symlinks, ranged reads, canonicalization, atomic whole-file publication and
//! directory walks with ripgrep's filters. The file tools (`read`, `write`, `edit`, `glob`,
//! `grep`) never touch the filesystem any other way, so whoever provides the trait decides what
//! they can reach: the host's `fs` service implements it with [`LocalFs`] ([`Served`]), the file
//! tools reach it through the service ([`Remote`]), and a sandbox can put a confined
//! implementation in the service's place. A full-access session whose client holds its files
//! (an editor) reads and writes their text through it ([`ThroughClient`]).
//!
//! Everything here blocks: callers run it on the host's blocking pool.

mod client;
mod publish;
mod service;
#[cfg(unix)]
mod strict;
mod strict_service;
mod walk;

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use client::{ThroughClient, session_files};
pub use publish::PublishError;
pub use service::{Remote, Served};
pub use strict_service::WithStrict;
pub use walk::{WalkEntry, WalkRequest, Walked};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    File,
    Dir,
    Other,
}

/// A path's metadata, following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub kind: FileKind,
    pub len: u64,
    pub mtime: Option<SystemTime>,
    /// Unix permission bits (0 where the platform has none).
    pub mode: u32,
    /// The file's identity (0 where the platform has none): a file replaced by another, as an
    /// atomic save does, has another.
    pub device: u64,
    pub inode: u64,
}

impl FileStat {
    pub fn is_file(&self) -> bool {
        self.kind == FileKind::File
    }

    pub fn is_dir(&self) -> bool {
        self.kind == FileKind::Dir
    }
}

/// The operations the file tools need.
pub trait FileSystem: Send + Sync {
    /// The metadata of `path`, following symlinks; `None` when nothing is there (including a
    /// parent that is not a directory).
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>>;
    /// Up to `len` bytes of `path` from `offset` (fewer at the end, none past it).
    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>>;
    /// The real path of an existing `path`.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// Publishes `content` at `path` atomically (parents created): a reader never sees a
    /// half-written file. `mode` sets the permission bits (kept from the replaced file on an
    /// update); with `create_only` nothing that exists is replaced.
    fn publish(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError>;
    /// Walks the tree `request` names, handing each entry (and each error met on the way) to
    /// `visit` until it answers false. A glob that does not parse is an `InvalidInput` error,
    /// before anything is walked.
    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()>;
    /// Up to `len` bytes of `path` from `offset`, with the real path of the file they came
    /// from, as the open file tells it (not as the path resolves later): a caller that checks
    /// that path cannot be misled by a path changed between its check and the read. The
    /// default resolves the path separately, which a filesystem others can change must
    /// override ([`LocalFs`] does).
    fn read_at_resolved(
        &self,
        path: &Path,
        offset: u64,
        len: usize,
    ) -> io::Result<(Vec<u8>, PathBuf)> {
        let bytes = self.read_at(path, offset, len)?;
        Ok((bytes, self.canonicalize(path)?))
    }
    /// Publishes like [`publish`](Self::publish), but `path` must be a real path (absolute,
    /// no symbolic link in it), and a symbolic link met on the way is refused: what is
    /// written lands exactly where the caller checked. The default is `publish`, which a
    /// filesystem others can change must override ([`LocalFs`] does).
    fn publish_no_symlinks(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        self.publish(path, content, mode, create_only)
    }
}

/// Reads a whole file through `fs`, in chunks of `chunk` bytes, handing each to `sink`; stops
/// early when `sink` answers an error.
///
/// Each chunk is a read of its own, so a file replaced or rewritten between two of them would
/// give bytes of two versions: a read of more than one chunk compares the file's metadata
/// (identity, length, modification time) before and after, and answers an error naming the file
/// when they differ. (A rewrite in place that keeps the length within one tick of the clock goes
/// unseen.) A caller that has just taken the file's stat passes it as `known`, which spares a
/// second one and covers the time since it was taken as well.
pub fn read_chunks<E>(
    fs: &dyn FileSystem,
    path: &Path,
    known: Option<&FileStat>,
    chunk: usize,
    mut sink: impl FnMut(&[u8]) -> Result<(), E>,
    io_error: impl Fn(io::Error) -> E,
) -> Result<(), E> {
    let before = match known {
        Some(stat) => Some(*stat),
        None => fs.stat(path).map_err(&io_error)?,
    };
    let mut offset = 0u64;
    let mut reads = 0usize;
    loop {
        let bytes = fs.read_at(path, offset, chunk).map_err(&io_error)?;
        reads += 1;
        let last = bytes.len() < chunk;
        if !bytes.is_empty() {
            offset += bytes.len() as u64;
            sink(&bytes)?;
        }
        if last {
            break;
        }
    }
    if reads > 1 && fs.stat(path).map_err(&io_error)? != before {
        return Err(io_error(io::Error::other(format!(
            "{} changed while it was being read; read it again",
            path.display()
        ))));
    }
    Ok(())
}

/// A file read through `fs` as a stream, one ranged read per call.
pub struct FileReader<'a> {
    fs: &'a dyn FileSystem,
    path: &'a Path,
    offset: u64,
    /// A read answered short: the end is reached, and the next read need not ask (most files
    /// fit one read, and each ranged read opens the file again).
    at_end: bool,
}

impl<'a> FileReader<'a> {
    pub fn new(fs: &'a dyn FileSystem, path: &'a Path) -> Self {
        Self {
            fs,
            path,
            offset: 0,
            at_end: false,
        }
    }
}

impl Read for FileReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at_end || buf.is_empty() {
            return Ok(0);
        }
        let bytes = self.fs.read_at(self.path, self.offset, buf.len())?;
        let count = bytes.len().min(buf.len());
        buf[..count].copy_from_slice(&bytes[..count]);
        self.offset += count as u64;
        self.at_end = count < buf.len();
        Ok(count)
    }
}

/// The whole content of `path` through `fs`.
pub fn read_all(fs: &dyn FileSystem, path: &Path) -> io::Result<Vec<u8>> {
    let mut all = Vec::new();
    read_chunks(
        fs,
        path,
        None,
        1 << 20,
        |bytes| {
            all.extend_from_slice(bytes);
            Ok(())
        },
        |error| error,
    )?;
    Ok(all)
}

/// The local filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalFs;

fn stat_of(meta: &std::fs::Metadata) -> FileStat {
    let kind = if meta.is_file() {
        FileKind::File
    } else if meta.is_dir() {
        FileKind::Dir
    } else {
        FileKind::Other
    };
    #[cfg(unix)]
    let (mode, device, inode) = {
        use std::os::unix::fs::MetadataExt;
        (meta.mode(), meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let (mode, device, inode) = (0, 0, 0);
    FileStat {
        kind,
        len: meta.len(),
        mtime: meta.modified().ok(),
        mode,
        device,
        inode,
    }
}

impl FileSystem for LocalFs {
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        match std::fs::metadata(path) {
            Ok(meta) => Ok(Some(stat_of(&meta))),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut file = std::fs::File::open(path)?;
        if offset > 0 {
            file.seek(SeekFrom::Start(offset))?;
        }
        let mut out = Vec::with_capacity(len.min(1 << 20));
        file.take(len as u64).read_to_end(&mut out)?;
        Ok(out)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn publish(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        publish::publish(path, content, mode, create_only)
    }

    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()> {
        walk::walk_local(request, visit)
    }

    #[cfg(unix)]
    fn read_at_resolved(
        &self,
        path: &Path,
        offset: u64,
        len: usize,
    ) -> io::Result<(Vec<u8>, PathBuf)> {
        strict::read_at_resolved(path, offset, len)
    }

    #[cfg(unix)]
    fn publish_no_symlinks(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        strict::publish_no_symlinks(path, content, mode, create_only)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dsh-fs-local-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn ranged_reads_cover_the_file_and_stop_at_its_end() {
        let dir = scratch("ranged");
        let file = dir.join("a.txt");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(LocalFs.read_at(&file, 3, 4).unwrap(), b"3456");
        assert_eq!(LocalFs.read_at(&file, 8, 4).unwrap(), b"89");
        assert!(LocalFs.read_at(&file, 20, 4).unwrap().is_empty());
        let mut seen = Vec::new();
        read_chunks(
            &LocalFs,
            &file,
            None,
            3,
            |c| {
                seen.push(c.to_vec());
                Ok::<(), io::Error>(())
            },
            |e| e,
        )
        .unwrap();
        assert_eq!(seen.concat(), b"0123456789");
        assert_eq!(seen.len(), 4);
        assert_eq!(read_all(&LocalFs, &file).unwrap(), b"0123456789");
        let mut streamed = Vec::new();
        FileReader::new(&LocalFs, &file)
            .read_to_end(&mut streamed)
            .unwrap();
        assert_eq!(streamed, b"0123456789");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The local filesystem, with the file replaced (as an atomic save does) right after the
    /// first ranged read.
    struct ReplacedMidRead {
        reads: std::sync::atomic::AtomicUsize,
        replacement: Vec<u8>,
    }

    impl FileSystem for ReplacedMidRead {
        fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
            LocalFs.stat(path)
        }
        fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
            let bytes = LocalFs.read_at(path, offset, len)?;
            if self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                let aside = path.with_extension("new");
                std::fs::write(&aside, &self.replacement)?;
                std::fs::rename(&aside, path)?;
            }
            Ok(bytes)
        }
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            LocalFs.canonicalize(path)
        }
        fn publish(
            &self,
            path: &Path,
            content: &[u8],
            mode: Option<u32>,
            create_only: bool,
        ) -> Result<(), PublishError> {
            LocalFs.publish(path, content, mode, create_only)
        }
        fn walk(
            &self,
            request: &WalkRequest<'_>,
            visit: &mut dyn FnMut(Walked<'_>) -> bool,
        ) -> io::Result<()> {
            LocalFs.walk(request, visit)
        }
    }

    #[test]
    fn a_file_replaced_between_chunks_is_an_error_not_a_mix_of_versions() {
        let dir = scratch("replaced");
        let file = dir.join("a.txt");
        std::fs::write(&file, b"0123456789").unwrap();
        // Same length, so only the identity tells the versions apart.
        let fs = ReplacedMidRead {
            reads: Default::default(),
            replacement: b"abcdefghij".to_vec(),
        };
        let mut seen = Vec::new();
        let error = read_chunks(
            &fs,
            &file,
            None,
            4,
            |c| {
                seen.extend_from_slice(c);
                Ok::<(), io::Error>(())
            },
            |e| e,
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("changed while it was being read"),
            "{error}"
        );
        assert_eq!(
            seen, b"0123efghij",
            "what a reader would have taken for the file"
        );
        // A read that fits one chunk is one read: nothing to mix.
        let fs = ReplacedMidRead {
            reads: Default::default(),
            replacement: b"klmnopqrst".to_vec(),
        };
        assert_eq!(read_all(&fs, &file).unwrap(), b"abcdefghij");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn stat_says_absent_for_a_path_through_a_file() {
        let dir = scratch("stat");
        let file = dir.join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(LocalFs.stat(&file).unwrap().unwrap().is_file());
        assert!(LocalFs.stat(&dir).unwrap().unwrap().is_dir());
        assert_eq!(LocalFs.stat(&file.join("below")).unwrap(), None);
        assert_eq!(LocalFs.stat(&dir.join("missing")).unwrap(), None);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn publication_creates_replaces_and_refuses_as_asked() {
        let dir = scratch("publish");
        let file = dir.join("deep/new.txt");
        LocalFs.publish(&file, b"one", None, true).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"one");
        assert!(matches!(
            LocalFs.publish(&file, b"two", None, true),
            Err(PublishError::Exists)
        ));
        LocalFs.publish(&file, b"two", Some(0o640), false).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        #[cfg(unix)]
        assert_eq!(LocalFs.stat(&file).unwrap().unwrap().mode & 0o777, 0o640);
        assert!(matches!(
            LocalFs.publish(&dir.join("deep"), b"x", None, true),
            Err(PublishError::NotRegularFile)
        ));
        // No staging is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.join("deep"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["new.txt"]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
