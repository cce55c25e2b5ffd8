//! The trait across the plugin ABI, both ways: [`Served`] offers a [`FileSystem`] as the `fs`
//! service (what the host's `dsh-host/fs` row provides), [`Remote`] makes the `fs` service a
//! [`FileSystem`] again (what the file tools use).

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::RMut;
use abi_stable::std_types::{
    RErr, RNone, ROk, ROption, RResult, RSlice, RSome, RStr, RString, RVec,
};
use dsh_plugin_api::io::fs::{
    Fs, FsError, FsErrorKind, FsKind, FsService, FsStat, FsWalkEntry, FsWalkRequest, FsWalkVisitor,
    FsWalkVisitor_TO,
};

use crate::{FileKind, FileStat, FileSystem, PublishError, WalkEntry, WalkRequest, Walked};

/// A time as seconds and nanoseconds since the Unix epoch, as it crosses the ABI.
fn epoch_parts(time: Option<SystemTime>) -> (ROption<u64>, u32) {
    let since = time.and_then(|time| time.duration_since(UNIX_EPOCH).ok());
    (
        since.map(|since| since.as_secs()).into(),
        since.map_or(0, |since| since.subsec_nanos()),
    )
}

/// The time those parts name; a provider's nonsense time is no time, not a panic.
fn time_of(secs: ROption<u64>, nanos: u32) -> Option<SystemTime> {
    secs.into_option().and_then(|secs| {
        UNIX_EPOCH
            .checked_add(Duration::from_secs(secs))?
            .checked_add(Duration::from_nanos(u64::from(nanos)))
    })
}

fn to_abi_stat(stat: &FileStat) -> FsStat {
    let (mtime_secs, mtime_nanos) = epoch_parts(stat.mtime);
    FsStat {
        kind: match stat.kind {
            FileKind::File => FsKind::File,
            FileKind::Dir => FsKind::Dir,
            FileKind::Other => FsKind::Other,
        },
        len: stat.len,
        mtime_secs,
        mtime_nanos,
        mode: stat.mode,
        device: stat.device,
        inode: stat.inode,
    }
}

fn from_abi_stat(stat: &FsStat) -> FileStat {
    FileStat {
        kind: match stat.kind {
            FsKind::File => FileKind::File,
            FsKind::Dir => FileKind::Dir,
            FsKind::Other => FileKind::Other,
        },
        len: stat.len,
        mtime: time_of(stat.mtime_secs, stat.mtime_nanos),
        mode: stat.mode,
        device: stat.device,
        inode: stat.inode,
    }
}

pub(crate) fn to_abi_error(error: &io::Error) -> FsError {
    let kind = match error.kind() {
        io::ErrorKind::NotFound => FsErrorKind::NotFound,
        io::ErrorKind::NotADirectory => FsErrorKind::NotADirectory,
        io::ErrorKind::PermissionDenied => FsErrorKind::PermissionDenied,
        io::ErrorKind::AlreadyExists => FsErrorKind::AlreadyExists,
        _ => FsErrorKind::Other,
    };
    FsError {
        kind,
        message: RString::from(error.to_string()),
    }
}

pub(crate) fn from_abi_error(error: FsError) -> io::Error {
    let kind = match error.kind {
        FsErrorKind::NotFound => io::ErrorKind::NotFound,
        FsErrorKind::NotADirectory => io::ErrorKind::NotADirectory,
        FsErrorKind::PermissionDenied | FsErrorKind::Denied => io::ErrorKind::PermissionDenied,
        FsErrorKind::AlreadyExists => io::ErrorKind::AlreadyExists,
        FsErrorKind::NotRegularFile | FsErrorKind::Other => io::ErrorKind::Other,
    };
    io::Error::new(kind, error.message.into_string())
}

pub(crate) fn done<T, U>(result: io::Result<T>, map: impl FnOnce(T) -> U) -> RResult<U, FsError> {
    match result {
        Ok(value) => ROk(map(value)),
        Err(error) => RErr(to_abi_error(&error)),
    }
}

/// A publication's outcome as it crosses the ABI.
pub(crate) fn publish_to_abi(result: Result<(), PublishError>) -> RResult<(), FsError> {
    match result {
        Ok(()) => ROk(()),
        Err(PublishError::NotRegularFile) => RErr(FsError {
            kind: FsErrorKind::NotRegularFile,
            message: RString::from("not a regular file"),
        }),
        Err(PublishError::Exists) => RErr(FsError {
            kind: FsErrorKind::AlreadyExists,
            message: RString::from("the file exists"),
        }),
        Err(PublishError::Io(error)) => RErr(to_abi_error(&error)),
    }
}

/// A publication's failure as it came across the ABI.
pub(crate) fn publish_from_abi(error: FsError, create_only: bool) -> PublishError {
    match error.kind {
        FsErrorKind::NotRegularFile => PublishError::NotRegularFile,
        FsErrorKind::AlreadyExists if create_only => PublishError::Exists,
        _ => PublishError::Io(from_abi_error(error)),
    }
}

/// A [`FileSystem`] offered as the `fs` service.
pub struct Served<F>(pub F);

/// A path as the bytes that cross the ABI.
pub(crate) fn path_bytes(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec()
    }
    #[cfg(not(unix))]
    {
        path.to_string_lossy().as_bytes().to_vec()
    }
}

/// The path those bytes name.
pub(crate) fn path_of(bytes: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
    }
}

impl<F: FileSystem> Fs for Served<F> {
    fn stat(&self, path: RSlice<'_, u8>) -> RResult<ROption<FsStat>, FsError> {
        done(self.0.stat(&path_of(&path)), |stat| {
            stat.as_ref().map(to_abi_stat).into()
        })
    }

    fn read_at(&self, path: RSlice<'_, u8>, offset: u64, len: u64) -> RResult<RVec<u8>, FsError> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        done(self.0.read_at(&path_of(&path), offset, len), RVec::from)
    }

    fn canonicalize(&self, path: RSlice<'_, u8>) -> RResult<RVec<u8>, FsError> {
        done(self.0.canonicalize(&path_of(&path)), |real| {
            RVec::from(path_bytes(&real))
        })
    }

    fn publish(
        &self,
        path: RSlice<'_, u8>,
        content: RSlice<'_, u8>,
        mode: ROption<u32>,
        create_only: bool,
    ) -> RResult<(), FsError> {
        publish_to_abi(self.0.publish(
            &path_of(&path),
            content.as_slice(),
            mode.into_option(),
            create_only,
        ))
    }

    fn walk(
        &self,
        request: FsWalkRequest<'_>,
        mut visitor: FsWalkVisitor_TO<'_, RMut<'_, ()>>,
    ) -> RResult<(), FsError> {
        let names = |list: RSlice<'_, RStr<'_>>| -> Vec<String> {
            list.iter().map(|name| name.as_str().to_owned()).collect()
        };
        let (ignore_files, globs) = (names(request.ignore_files), names(request.globs));
        let (root, glob_base) = (path_of(&request.root), path_of(&request.glob_base));
        let request = WalkRequest {
            root: &root,
            standard_filters: request.standard_filters,
            ignore_files: &ignore_files,
            globs: &globs,
            glob_base: &glob_base,
            mtimes: request.mtimes,
        };
        let walked = self.0.walk(&request, &mut |walked| match walked {
            Walked::Entry(entry) => {
                let path = path_bytes(entry.path);
                let (mtime_secs, mtime_nanos) = epoch_parts(entry.mtime);
                visitor.entry(FsWalkEntry {
                    path: RSlice::from_slice(&path),
                    depth: entry.depth as u64,
                    is_file: entry.is_file,
                    mtime_secs,
                    mtime_nanos,
                })
            }
            Walked::Error(message) => visitor.error(RStr::from_str(message)),
        });
        done(walked, |()| ())
    }
}

fn rstrs(list: &[String]) -> Vec<RStr<'_>> {
    list.iter().map(|name| RStr::from_str(name)).collect()
}

/// The plugin side of a walk's visitor: the tool's closure behind the ABI. A panic in it (a
/// search runs inside) must not unwind through the provider's frames, where abi_stable would
/// abort the process: it stops the walk and is resumed once the walk returned.
struct Visiting<'v> {
    visit: &'v mut dyn FnMut(Walked<'_>) -> bool,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

impl Visiting<'_> {
    fn call(&mut self, walked: Walked<'_>) -> bool {
        let visit = &mut self.visit;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| visit(walked))) {
            Ok(go_on) => go_on,
            Err(panic) => {
                self.panic = Some(panic);
                false
            }
        }
    }
}

impl FsWalkVisitor for Visiting<'_> {
    fn entry(&mut self, entry: FsWalkEntry<'_>) -> bool {
        let path = path_of(&entry.path);
        self.call(Walked::Entry(WalkEntry {
            path: &path,
            depth: usize::try_from(entry.depth).unwrap_or(usize::MAX),
            is_file: entry.is_file,
            mtime: time_of(entry.mtime_secs, entry.mtime_nanos),
        }))
    }

    fn error(&mut self, message: RStr<'_>) -> bool {
        self.call(Walked::Error(message.as_str()))
    }
}

/// The `fs` service as a [`FileSystem`] (`S` holds the service: the plugin API's `Service`
/// handle, or a box in tests).
pub struct Remote<S>(pub S);

impl<S: std::ops::Deref<Target = FsService> + Send + Sync> FileSystem for Remote<S> {
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        self.0
            .stat(RSlice::from_slice(&path_bytes(path)))
            .into_result()
            .map(|stat| stat.into_option().as_ref().map(from_abi_stat))
            .map_err(from_abi_error)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.0
            .read_at(RSlice::from_slice(&path_bytes(path)), offset, len as u64)
            .into_result()
            .map(RVec::into_vec)
            .map_err(from_abi_error)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.0
            .canonicalize(RSlice::from_slice(&path_bytes(path)))
            .into_result()
            .map(|real| path_of(&real))
            .map_err(from_abi_error)
    }

    fn publish(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        let mode = match mode {
            Some(mode) => RSome(mode),
            None => RNone,
        };
        self.0
            .publish(
                RSlice::from_slice(&path_bytes(path)),
                RSlice::from_slice(content),
                mode,
                create_only,
            )
            .into_result()
            .map_err(|error| publish_from_abi(error, create_only))
    }

    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()> {
        let (root, glob_base) = (path_bytes(request.root), path_bytes(request.glob_base));
        let (ignore_files, globs) = (rstrs(request.ignore_files), rstrs(request.globs));
        let mut visiting = Visiting { visit, panic: None };
        let walked = self
            .0
            .walk(
                FsWalkRequest {
                    root: RSlice::from_slice(&root),
                    standard_filters: request.standard_filters,
                    ignore_files: RSlice::from_slice(&ignore_files),
                    globs: RSlice::from_slice(&globs),
                    glob_base: RSlice::from_slice(&glob_base),
                    mtimes: request.mtimes,
                },
                FsWalkVisitor_TO::from_ptr(&mut visiting, TD_Opaque),
            )
            .into_result()
            .map_err(from_abi_error);
        if let Some(panic) = visiting.panic {
            std::panic::resume_unwind(panic);
        }
        walked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::sabi_trait::TD_Opaque;
    use dsh_plugin_api::io::fs::Fs_TO;

    #[test]
    fn the_service_round_trip_keeps_stats_errors_and_publication_outcomes() {
        let dir = std::env::temp_dir().join(format!("dsh-fs-remote-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let remote = Remote(Box::new(Fs_TO::from_value(
            Served(crate::LocalFs),
            TD_Opaque,
        )));
        let file = dir.join("a.txt");
        remote.publish(&file, b"hello", Some(0o600), true).unwrap();
        let local = crate::LocalFs.stat(&file).unwrap().unwrap();
        assert_eq!(remote.stat(&file).unwrap().unwrap(), local);
        assert!(matches!(
            remote.publish(&file, b"again", None, true),
            Err(PublishError::Exists)
        ));
        assert_eq!(remote.read_at(&file, 1, 3).unwrap(), b"ell");
        assert_eq!(remote.stat(&dir.join("missing")).unwrap(), None);
        let missing = remote.read_at(&dir.join("missing"), 0, 1).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            remote.canonicalize(&dir.join(".").join("a.txt")).unwrap(),
            std::fs::canonicalize(&file).unwrap()
        );
        // A name that is not UTF-8 reaches the same file, not a lossy neighbour.
        #[cfg(unix)]
        {
            let odd = dir.join(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"caf\xe9.txt"),
            );
            remote.publish(&odd, b"latin-1 name", None, true).unwrap();
            assert_eq!(std::fs::read(&odd).unwrap(), b"latin-1 name");
            assert_eq!(
                remote.canonicalize(&odd).unwrap(),
                std::fs::canonicalize(&odd).unwrap()
            );
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Every entry, error and stop of a walk, as the visitor saw them.
    fn walk_log(fs: &dyn FileSystem, request: &WalkRequest<'_>, stop_after: usize) -> Vec<String> {
        let mut log = Vec::new();
        let result = fs.walk(request, &mut |walked| {
            log.push(match walked {
                Walked::Entry(entry) => format!(
                    "{} depth={} file={} mtime={}",
                    entry.path.display(),
                    entry.depth,
                    entry.is_file,
                    entry.mtime.is_some()
                ),
                Walked::Error(message) => format!("error: {message}"),
            });
            log.len() < stop_after
        });
        if let Err(error) = result {
            log.push(format!("failed: {:?}: {error}", error.kind()));
        }
        log
    }

    #[test]
    fn a_walk_through_the_service_sees_what_the_local_walk_sees() {
        let dir = std::env::temp_dir().join(format!("dsh-fs-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in [
            ("b.rs", "b"),
            ("a/c.rs", "c"),
            (".hidden.rs", "h"),
            ("d.md", "d"),
        ] {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let remote = Remote(Box::new(Fs_TO::from_value(
            Served(crate::LocalFs),
            TD_Opaque,
        )));
        let globs = ["*.rs".to_owned()];
        let bad = ["[".to_owned()];
        let request = WalkRequest {
            root: &dir,
            standard_filters: true,
            ignore_files: &[],
            globs: &globs,
            glob_base: &dir,
            mtimes: true,
        };
        let local = walk_log(&crate::LocalFs, &request, usize::MAX);
        // Only `*.rs` (an override glob lets a hidden file through, as in ripgrep) and the
        // directories on the way, in name order, the root first.
        assert_eq!(local.len(), 5, "{local:#?}");
        assert!(
            local[0].ends_with("depth=0 file=false mtime=false"),
            "{local:#?}"
        );
        assert!(
            local[2].ends_with("/a depth=1 file=false mtime=false"),
            "{local:#?}"
        );
        assert!(
            local[4].ends_with("b.rs depth=1 file=true mtime=true"),
            "{local:#?}"
        );
        assert_eq!(walk_log(&remote, &request, usize::MAX), local);
        // The visitor stops a walk.
        assert_eq!(walk_log(&remote, &request, 2), local[..2]);
        // A glob that does not parse fails the walk before it starts, with ripgrep's message.
        let request = WalkRequest {
            globs: &bad,
            ..request
        };
        let refused = walk_log(&remote, &request, usize::MAX);
        assert_eq!(refused.len(), 1, "{refused:#?}");
        assert!(refused[0].contains("error parsing glob"), "{refused:#?}");
        // A root that is not there is an error entry, and the walk ends normally.
        let request = WalkRequest {
            root: &dir.join("missing"),
            globs: &[],
            ..request
        };
        let missing = walk_log(&remote, &request, usize::MAX);
        assert_eq!(missing, walk_log(&crate::LocalFs, &request, usize::MAX));
        assert!(missing[0].starts_with("error: "), "{missing:#?}");
        // A visitor that panics stops the walk; the panic reaches the caller, not an abort.
        let request = WalkRequest {
            root: &dir,
            ..request
        };
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            remote.walk(&request, &mut |_| panic!("visitor boom"))
        }));
        let panic = caught.unwrap_err();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"visitor boom"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
