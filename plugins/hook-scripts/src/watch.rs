//! Following a hook file's folder through the host's `fs_watch` service. A folder that exists
//! is watched alone (not what is below it); one that does not (a project without `.claude`
//! yet) is waited for from its nearest existing ancestor until the next missing part of its
//! path appears; a folder that goes away is waited for again. A change that concerns a hook
//! file, or a folder on the way to one, makes the row's next hook point look again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use abi_stable::std_types::RString;
use dsh_plugin_api::LogLevel;
use dsh_plugin_api::io::watch::{FS_WATCH_SERVICE, FsWatchService};

use crate::files::HookFiles;

/// A watch the host ended is tried again after this long.
const RETRY: Duration = Duration::from_secs(1);

/// The nearest existing directory on `folder`'s path (`folder` itself when it exists).
fn anchor_of(folder: &Path) -> Option<PathBuf> {
    folder
        .ancestors()
        .find(|dir| dir.is_dir())
        .map(Path::to_owned)
}

/// Starts a task that follows `folder` for as long as the row runs.
pub(crate) fn follow(files: &Arc<HookFiles>, folder: PathBuf) {
    let ctx = files.context().clone();
    if let Err(error) = ctx.spawn(run(Arc::downgrade(files), folder.clone())) {
        ctx.log(
            LogLevel::Warn,
            &format!("hook-scripts: not following {}: {error}", folder.display()),
        );
        files.unfollowed();
    }
}

async fn run(files: Weak<HookFiles>, folder: PathBuf) {
    loop {
        let Some(strong) = files.upgrade() else {
            return;
        };
        let ctx = strong.context().clone();
        let Ok(Some(watches)) = ctx.get::<FsWatchService>(FS_WATCH_SERVICE) else {
            strong.unfollowed();
            return;
        };
        let probe = folder.clone();
        let Ok(Some(anchor)) = ctx.blocking(move || anchor_of(&probe)).await else {
            strong.unfollowed();
            return;
        };
        let watcher = match watches
            .watch(RString::from(anchor.to_string_lossy().as_ref()), false)
            .into_result()
        {
            Ok(watcher) => watcher,
            Err(error) => {
                ctx.log(
                    LogLevel::Warn,
                    &format!("hook-scripts: cannot watch {}: {error}", anchor.display()),
                );
                strong.unfollowed();
                return;
            }
        };
        // A file may have changed between the look that kept it and this watch.
        strong.invalidate();
        drop(strong);
        loop {
            let changed = watcher.changed().await;
            let Some(files) = files.upgrade() else {
                return;
            };
            if changed.is_empty() {
                ctx.sleep(RETRY).await;
                break;
            }
            let paths = || changed.iter().map(|path| Path::new(path.as_str()));
            if paths().any(|path| files.concerns(path)) {
                files.invalidate();
            }
            // The folder, or one on its way, appeared or went: watch from where it now ends.
            if paths().any(|path| folder.starts_with(path)) {
                break;
            }
        }
    }
}
