//! The `fs` service: the file operations `read`, `write` and `edit` are built on (stat
//! following symlinks, ranged reads, canonicalization, atomic whole-file publication), provided
//! by the host (`dsh-host/fs`, the local filesystem). A sandbox replaces the row with a
//! confined implementation; the tools do not change. Paths cross as their raw bytes, so a
//! name that is not UTF-8 reaches the same file.
//!
//! Every method blocks: call it from a blocking job (`Context::blocking`), never on the
//! runtime.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};

/// The service key.
pub const FS_SERVICE: &str = "fs";

#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    File,
    Dir,
    Other,
}

/// A path's metadata, following symlinks.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsStat {
    pub kind: FsKind,
    pub len: u64,
    /// Modification time as seconds and nanoseconds since the Unix epoch, when known.
    pub mtime_secs: ROption<u64>,
    pub mtime_nanos: u32,
    /// Unix permission bits.
    pub mode: u32,
    /// The file's identity (device and inode; zero where the platform has none): a file
    /// replaced by another, as an atomic save does, has another.
    pub device: u64,
    pub inode: u64,
}

/// Why an operation failed; `kind` keeps what callers branch on.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsErrorKind {
    NotFound,
    NotADirectory,
    PermissionDenied,
    AlreadyExists,
    /// A publication found something that is not a regular file at the target.
    NotRegularFile,
    /// The implementation refuses the path (a sandbox's confinement).
    Denied,
    Other,
}

#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FsError {
    pub kind: FsErrorKind,
    pub message: RString,
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}

/// The file operations (see the module docs). Paths are their raw bytes (the platform's
/// `OsStr` encoding).
#[sabi_trait]
pub trait Fs: Send + Sync {
    /// `RNone` when nothing is at `path` (a parent that is not a directory included).
    fn stat(&self, path: RSlice<'_, u8>) -> RResult<ROption<FsStat>, FsError>;
    /// Up to `len` bytes from `offset` (fewer at the end, none past it).
    fn read_at(&self, path: RSlice<'_, u8>, offset: u64, len: u64) -> RResult<RVec<u8>, FsError>;
    fn canonicalize(&self, path: RSlice<'_, u8>) -> RResult<RVec<u8>, FsError>;
    /// Publishes `content` at `path` atomically, parents created; `mode` sets the permission
    /// bits; with `create_only` an existing file is not replaced (`AlreadyExists`).
    fn publish(
        &self,
        path: RSlice<'_, u8>,
        content: RSlice<'_, u8>,
        mode: ROption<u32>,
        create_only: bool,
    ) -> RResult<(), FsError>;
}

/// The value registered under [`FS_SERVICE`].
pub type FsService = Fs_TO<'static, RBox<()>>;
