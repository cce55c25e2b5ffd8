//! Hot reload of the servers files: the directory of each file is watched through the host's
//! `fs_watch` service (the file itself may not exist yet, and editors replace files by
//! renaming), and a batch of changes that touches one of the files reconciles the servers.
//! Without `fs_watch` the files are read once, at start, and the log says so. A set that
//! stops (its directory's last session went) stops following its file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_plugin_api::cancel::{CancelFlag, Either, first_of};
use dsh_plugin_api::io::watch::{FS_WATCH_SERVICE, FsWatchService};
use dsh_plugin_api::{Context, LogLevel, PluginError};

use crate::manager::Manager;

/// Follows `manager`'s files until `stop` fires (or the plugin unloads).
pub(crate) fn follow(
    ctx: &Context,
    manager: Arc<Manager>,
    stop: Arc<CancelFlag>,
) -> Result<(), PluginError> {
    let files: Vec<PathBuf> = manager.sources.paths();
    if files.is_empty() {
        return Ok(());
    }
    let Ok(Some(watches)) = ctx.get::<FsWatchService>(FS_WATCH_SERVICE) else {
        ctx.log(
            LogLevel::Info,
            "mcp: no fs_watch service: the servers files are read at start only",
        );
        return Ok(());
    };
    let dirs: BTreeSet<PathBuf> = files
        .iter()
        .filter_map(|file| crate::parent_of(file))
        .collect();
    for dir in dirs.into_iter().filter(|dir| dir.is_dir()) {
        let watcher = match watches
            .watch(RString::from(dir.to_string_lossy().as_ref()), false)
            .into_result()
        {
            Ok(watcher) => watcher,
            Err(error) => {
                ctx.log(
                    LogLevel::Warn,
                    &format!("mcp: not following {}: {error}", dir.display()),
                );
                continue;
            }
        };
        let (manager, files, log) = (manager.clone(), files.clone(), ctx.clone());
        let stop = stop.clone();
        ctx.spawn(async move {
            loop {
                // The watch ends with the task: the watcher is dropped here.
                let changed = match first_of(watcher.changed(), stop.wait()).await {
                    Either::Left(changed) if !changed.is_empty() => changed,
                    Either::Left(_) | Either::Right(()) => return,
                };
                let ours = changed
                    .iter()
                    .any(|path| files.iter().any(|file| file == Path::new(path.as_str())));
                if ours {
                    log.log(LogLevel::Info, "mcp: a servers file changed: reloading");
                    manager.reconcile().await;
                }
            }
        })?;
    }
    Ok(())
}
