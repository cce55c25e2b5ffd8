//! The `fs_watch` service: changes under a directory, as batches of paths a plugin awaits.
//! Plugins own no threads (ARCHITECTURE §4), so the host runs the OS watcher and a plugin only
//! awaits [`FsWatcher::changed`]; dropping the watcher ends the watch. Provided by the host
//! (`dsh-host/fs-watch`, inotify through `notify`, batched over 100 ms).
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RResult, RString, RVec};
use async_ffi::FfiFuture;

use super::fs::FsError;

/// The service key.
pub const FS_WATCH_SERVICE: &str = "fs_watch";

/// Starts watches.
#[sabi_trait]
pub trait FsWatch: Send + Sync {
    /// Watches directory `path`, and everything below it when `recursive`. Fails (with the
    /// OS's reason, classed as a file operation's) when the directory cannot be watched.
    fn watch(&self, path: RString, recursive: bool) -> RResult<FsWatcherBox, FsError>;
}
pub type FsWatchService = FsWatch_TO<'static, RBox<()>>;

/// One running watch.
#[sabi_trait]
pub trait FsWatcher: Send + Sync {
    /// The paths changed since the last batch (created, modified, removed or renamed, both
    /// names of a rename), waiting for the next change when there is none; empty once the
    /// watch has ended.
    fn changed(&self) -> FfiFuture<RVec<RString>>;
}
pub type FsWatcherBox = FsWatcher_TO<'static, RBox<()>>;
