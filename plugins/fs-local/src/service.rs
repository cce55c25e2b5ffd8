//! The trait across the plugin ABI, both ways: [`Served`] offers a [`FileSystem`] as the `fs`
//! service (what the host's `dsh-host/fs` row provides), [`Remote`] makes the `fs` service a
//! [`FileSystem`] again (what the file tools use).

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSlice, RSome, RString, RVec};
use dsh_plugin_api::io::fs::{Fs, FsError, FsErrorKind, FsKind, FsService, FsStat};

use crate::{FileKind, FileStat, FileSystem, PublishError};

fn to_abi_stat(stat: &FileStat) -> FsStat {
    let since = stat
        .mtime
        .and_then(|mtime| mtime.duration_since(UNIX_EPOCH).ok());
    FsStat {
        kind: match stat.kind {
            FileKind::File => FsKind::File,
            FileKind::Dir => FsKind::Dir,
            FileKind::Other => FsKind::Other,
        },
        len: stat.len,
        mtime_secs: since.map(|since| since.as_secs()).into(),
        mtime_nanos: since.map_or(0, |since| since.subsec_nanos()),
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
        // A provider's nonsense time is no time, not a panic.
        mtime: stat.mtime_secs.into_option().and_then(|secs| {
            UNIX_EPOCH
                .checked_add(Duration::from_secs(secs))?
                .checked_add(Duration::from_nanos(u64::from(stat.mtime_nanos)))
        }),
        mode: stat.mode,
        device: stat.device,
        inode: stat.inode,
    }
}

fn to_abi_error(error: &io::Error) -> FsError {
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

fn from_abi_error(error: FsError) -> io::Error {
    let kind = match error.kind {
        FsErrorKind::NotFound => io::ErrorKind::NotFound,
        FsErrorKind::NotADirectory => io::ErrorKind::NotADirectory,
        FsErrorKind::PermissionDenied | FsErrorKind::Denied => io::ErrorKind::PermissionDenied,
        FsErrorKind::AlreadyExists => io::ErrorKind::AlreadyExists,
        FsErrorKind::NotRegularFile | FsErrorKind::Other => io::ErrorKind::Other,
    };
    io::Error::new(kind, error.message.into_string())
}

fn done<T, U>(result: io::Result<T>, map: impl FnOnce(T) -> U) -> RResult<U, FsError> {
    match result {
        Ok(value) => ROk(map(value)),
        Err(error) => RErr(to_abi_error(&error)),
    }
}

/// A [`FileSystem`] offered as the `fs` service.
pub struct Served<F>(pub F);

/// A path as the bytes that cross the ABI.
fn path_bytes(path: &Path) -> Vec<u8> {
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
fn path_of(bytes: &[u8]) -> PathBuf {
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
        match self.0.publish(
            &path_of(&path),
            content.as_slice(),
            mode.into_option(),
            create_only,
        ) {
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
        match self
            .0
            .publish(
                RSlice::from_slice(&path_bytes(path)),
                RSlice::from_slice(content),
                mode,
                create_only,
            )
            .into_result()
        {
            Ok(()) => Ok(()),
            Err(error) => Err(match error.kind {
                FsErrorKind::NotRegularFile => PublishError::NotRegularFile,
                FsErrorKind::AlreadyExists if create_only => PublishError::Exists,
                _ => PublishError::Io(from_abi_error(error)),
            }),
        }
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
}
