//! The strict operations across the plugin ABI, both ways: [`Served`] offers a
//! [`FileSystem`]'s `read_at_resolved` and `publish_no_symlinks` as the `fs_strict` service
//! (what the host's `dsh-host/fs` row provides beside `fs`), and [`WithStrict`] lays that
//! service over another [`FileSystem`] (the file tools' [`Remote`](crate::Remote)), so that
//! their reads and writes cannot be raced.

use std::io;
use std::path::{Path, PathBuf};

use abi_stable::std_types::{RNone, ROption, RResult, RSlice, RSome, RVec};
use dsh_plugin_api::io::fs::{FsError, FsResolvedRead, FsStrict, FsStrictService};

use crate::service::{done, from_abi_error, path_bytes, path_of, publish_from_abi, publish_to_abi};
use crate::{FileStat, FileSystem, PublishError, Served, WalkRequest, Walked};

impl<F: FileSystem> FsStrict for Served<F> {
    fn read_at_resolved(
        &self,
        path: RSlice<'_, u8>,
        offset: u64,
        len: u64,
    ) -> RResult<FsResolvedRead, FsError> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        done(
            self.0.read_at_resolved(&path_of(&path), offset, len),
            |(bytes, real)| FsResolvedRead {
                bytes: RVec::from(bytes),
                real_path: RVec::from(path_bytes(&real)),
            },
        )
    }

    fn publish_no_symlinks(
        &self,
        path: RSlice<'_, u8>,
        content: RSlice<'_, u8>,
        mode: ROption<u32>,
        create_only: bool,
    ) -> RResult<(), FsError> {
        publish_to_abi(self.0.publish_no_symlinks(
            &path_of(&path),
            content.as_slice(),
            mode.into_option(),
            create_only,
        ))
    }
}

/// `F` with its strict operations taken from the `fs_strict` service `S`, when there is one
/// (`S` holds the service: the plugin API's `Service` handle, or a box in tests); the rest of
/// `F` as it is.
pub struct WithStrict<F, S> {
    pub fs: F,
    pub strict: Option<S>,
}

impl<F, S> FileSystem for WithStrict<F, S>
where
    F: FileSystem,
    S: std::ops::Deref<Target = FsStrictService> + Send + Sync,
{
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        self.fs.stat(path)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.fs.read_at(path, offset, len)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.fs.canonicalize(path)
    }

    fn publish(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        self.fs.publish(path, content, mode, create_only)
    }

    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()> {
        self.fs.walk(request, visit)
    }

    fn read_at_resolved(
        &self,
        path: &Path,
        offset: u64,
        len: usize,
    ) -> io::Result<(Vec<u8>, PathBuf)> {
        let Some(strict) = &self.strict else {
            return self.fs.read_at_resolved(path, offset, len);
        };
        strict
            .read_at_resolved(RSlice::from_slice(&path_bytes(path)), offset, len as u64)
            .into_result()
            .map(|read| (read.bytes.into_vec(), path_of(&read.real_path)))
            .map_err(from_abi_error)
    }

    fn publish_no_symlinks(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        let Some(strict) = &self.strict else {
            return self
                .fs
                .publish_no_symlinks(path, content, mode, create_only);
        };
        let mode = match mode {
            Some(mode) => RSome(mode),
            None => RNone,
        };
        strict
            .publish_no_symlinks(
                RSlice::from_slice(&path_bytes(path)),
                RSlice::from_slice(content),
                mode,
                create_only,
            )
            .into_result()
            .map_err(|error| publish_from_abi(error, create_only))
    }
}
