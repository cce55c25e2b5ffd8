//! `dsh-host/fs-watch`: the `fs_watch` service. The OS watcher (inotify through `notify`, its
//! events batched over 100 ms) runs on the host's own threads and only sends paths into a
//! channel; the plugin that asked awaits the channel, so no plugin code runs on those threads.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::batched_watch::BatchedWatch;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::fs::{FsError, FsErrorKind};
use dsh_plugin_api::io::watch::{
    FS_WATCH_SERVICE, FsWatch, FsWatch_TO, FsWatcher, FsWatcher_TO, FsWatcherBox,
};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError};
use notify::RecursiveMode;
use tokio::sync::{Mutex, mpsc};

/// How long events are gathered into one batch.
const BATCH: Duration = Duration::from_millis(100);

pub(crate) struct FsWatchPlugin;

impl Plugin for FsWatchPlugin {
    const NAME: &'static str = "fs-watch";
    const PROVIDES: &'static [&'static str] = &[FS_WATCH_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.provide(FS_WATCH_SERVICE, FsWatch_TO::from_value(Watches, TD_Opaque))
    }
}

struct Watches;

/// One watch: the OS watch (dropped with it) and its batches.
struct Watch {
    _watch: BatchedWatch,
    batches: Arc<Mutex<mpsc::UnboundedReceiver<Vec<PathBuf>>>>,
}

impl FsWatch for Watches {
    fn watch(&self, path: RString, recursive: bool) -> RResult<FsWatcherBox, FsError> {
        let (sender, receiver) = mpsc::unbounded_channel::<Vec<PathBuf>>();
        let watch = BatchedWatch::new(BATCH, move |batch| {
            if let Ok(paths) = batch {
                let _ = sender.send(paths);
            }
        });
        let mut watch = match watch {
            Ok(watch) => watch,
            Err(error) => {
                return RErr(FsError {
                    kind: kind_of(&error),
                    message: RString::from(format!("cannot start a watcher: {error}")),
                });
            }
        };
        let mode = match recursive {
            true => RecursiveMode::Recursive,
            false => RecursiveMode::NonRecursive,
        };
        if let Err(error) = watch.watch(std::path::Path::new(path.as_str()), mode) {
            return RErr(FsError {
                kind: kind_of(&error),
                message: RString::from(format!("cannot watch {path}: {error}")),
            });
        }
        ROk(FsWatcher_TO::from_value(
            Watch {
                _watch: watch,
                batches: Arc::new(Mutex::new(receiver)),
            },
            TD_Opaque,
        ))
    }
}

/// The class of a watcher's failure, as a file operation's.
fn kind_of(error: &notify::Error) -> FsErrorKind {
    match &error.kind {
        notify::ErrorKind::PathNotFound => FsErrorKind::NotFound,
        notify::ErrorKind::Io(io) => match io.kind() {
            std::io::ErrorKind::NotFound => FsErrorKind::NotFound,
            std::io::ErrorKind::NotADirectory => FsErrorKind::NotADirectory,
            std::io::ErrorKind::PermissionDenied => FsErrorKind::PermissionDenied,
            _ => FsErrorKind::Other,
        },
        _ => FsErrorKind::Other,
    }
}

impl FsWatcher for Watch {
    fn changed(&self) -> FfiFuture<RVec<RString>> {
        let batches = self.batches.clone();
        async move {
            let mut batches = batches.lock().await;
            let mut paths: Vec<PathBuf> = batches.recv().await.unwrap_or_default();
            while let Ok(more) = batches.try_recv() {
                paths.extend(more);
            }
            paths
                .into_iter()
                .map(|path| RString::from(path.to_string_lossy().as_ref()))
                .collect()
        }
        .into_ffi()
    }
}
