//! The `fs` service: the file operations the file tools are built on (stat following symlinks,
//! ranged reads, canonicalization, atomic whole-file publication, and the directory walks of
//! `glob` and `grep`, with ripgrep's filters), provided
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

use abi_stable::sabi_types::RMut;
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RString, RVec};
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

/// What a walk covers: everything under `root` that the filters let through.
#[repr(C)]
#[derive(StableAbi)]
pub struct FsWalkRequest<'a> {
    pub root: RSlice<'a, u8>,
    /// ripgrep's standard filters: ignore files (`.gitignore` inside a git repository,
    /// `.ignore`), hidden entries skipped. Without them everything is walked.
    pub standard_filters: bool,
    /// More ignore-file names honoured like `.ignore` (`.rgignore`).
    pub ignore_files: RSlice<'a, RStr<'a>>,
    /// Globs in ripgrep's override syntax (`!` excludes), matched relative to `glob_base`; when
    /// any is positive, only what one matches is listed.
    pub globs: RSlice<'a, RStr<'a>>,
    pub glob_base: RSlice<'a, u8>,
    /// Whether entries carry their modification time (a stat per file).
    pub mtimes: bool,
}

/// One entry of a walk, in name order within each directory.
#[repr(C)]
#[derive(StableAbi)]
pub struct FsWalkEntry<'a> {
    pub path: RSlice<'a, u8>,
    /// 0 for the root itself.
    pub depth: u64,
    /// A regular file (following a symlink only for the root, as ripgrep does).
    pub is_file: bool,
    pub mtime_secs: ROption<u64>,
    pub mtime_nanos: u32,
}

/// Receives a walk's entries and the errors met on the way; answering false stops the walk.
#[sabi_trait]
pub trait FsWalkVisitor {
    fn entry(&mut self, entry: FsWalkEntry<'_>) -> bool;
    fn error(&mut self, message: RStr<'_>) -> bool;
}

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
    /// Walks the tree the request names, handing each entry to `visitor` as it is reached; a
    /// glob that does not parse is an `Other` error naming it, before anything is walked.
    fn walk(
        &self,
        request: FsWalkRequest<'_>,
        visitor: FsWalkVisitor_TO<'_, RMut<'_, ()>>,
    ) -> RResult<(), FsError>;
}

/// The value registered under [`FS_SERVICE`].
pub type FsService = Fs_TO<'static, RBox<()>>;

/// The key of the strict file operations, provided beside [`FS_SERVICE`] by a provider whose
/// paths others can change (the host's local filesystem): a provider without it is read and
/// written through [`Fs`] alone.
pub const FS_STRICT_SERVICE: &str = "fs_strict";

/// Bytes read, and the real path of the file they came from.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct FsResolvedRead {
    pub bytes: RVec<u8>,
    /// As the open file tells it, not as the path resolves later.
    pub real_path: RVec<u8>,
}

/// The operations that close the gap between a caller's check of a path and its use.
#[sabi_trait]
pub trait FsStrict: Send + Sync {
    /// Up to `len` bytes from `offset`, with the real path of the file that was read.
    fn read_at_resolved(
        &self,
        path: RSlice<'_, u8>,
        offset: u64,
        len: u64,
    ) -> RResult<FsResolvedRead, FsError>;
    /// Publishes as [`Fs::publish`] does, at a real path (no symbolic link in it), refusing
    /// (`PermissionDenied`) a symbolic link met on the way.
    fn publish_no_symlinks(
        &self,
        path: RSlice<'_, u8>,
        content: RSlice<'_, u8>,
        mode: ROption<u32>,
        create_only: bool,
    ) -> RResult<(), FsError>;
}

/// The value registered under [`FS_STRICT_SERVICE`].
pub type FsStrictService = FsStrict_TO<'static, RBox<()>>;
