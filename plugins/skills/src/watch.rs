//! Following a skill root through the host's `fs_watch` service. A root that exists is watched
//! with everything below it; one that does not (a workspace without `.dsh/skills` yet) is
//! waited for from its nearest existing ancestor, watched alone, until the next missing part of
//! its path appears; a root that goes away is waited for again. Any change that could touch a
//! skill starts a new generation of the library.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use abi_stable::std_types::RString;
use dsh_plugin_api::LogLevel;
use dsh_plugin_api::io::watch::{FS_WATCH_SERVICE, FsWatchService};

use crate::library::Library;

/// A watch the host ended (or could not start) is tried again after this long.
const RETRY: Duration = Duration::from_secs(1);

/// The nearest existing directory on `root`'s path (`root` itself when it exists).
fn anchor_of(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .find(|dir| dir.is_dir())
        .map(Path::to_owned)
}

/// Starts a task that follows `root` for as long as the plugin runs.
pub(crate) fn follow(library: &Arc<Library>, root: PathBuf) {
    let weak = Arc::downgrade(library);
    let ctx = library.context().clone();
    if let Err(error) = ctx.spawn(run(weak, root.clone())) {
        ctx.log(
            LogLevel::Warn,
            &format!("skills: not following {}: {error}", root.display()),
        );
        library.unfollowed();
    }
}

async fn run(library: Weak<Library>, root: PathBuf) {
    loop {
        let Some(strong) = library.upgrade() else {
            return;
        };
        let ctx = strong.context().clone();
        let Ok(Some(watches)) = ctx.get::<FsWatchService>(FS_WATCH_SERVICE) else {
            strong.unfollowed();
            return;
        };
        let probe = root.clone();
        let Ok(Some(anchor)) = ctx.blocking(move || anchor_of(&probe)).await else {
            strong.unfollowed();
            return;
        };
        let recursive = anchor == root;
        let watcher = match watches
            .watch(RString::from(anchor.to_string_lossy().as_ref()), recursive)
            .into_result()
        {
            Ok(watcher) => watcher,
            Err(error) => {
                ctx.log(
                    LogLevel::Warn,
                    &format!("skills: cannot watch {}: {error}", anchor.display()),
                );
                strong.unfollowed();
                return;
            }
        };
        // The root may have changed between the look that cached it and this watch.
        strong.invalidate();
        drop(strong);
        loop {
            let changed = watcher.changed().await;
            let Some(library) = library.upgrade() else {
                return;
            };
            if changed.is_empty() {
                ctx.sleep(RETRY).await;
                break;
            }
            let touched = changed.iter().any(|path| {
                let path = Path::new(path.as_str());
                path.starts_with(&root) || root.starts_with(path)
            });
            if touched {
                library.invalidate();
            }
            let probe = root.clone();
            let moved = ctx.blocking(move || anchor_of(&probe)).await.ok().flatten();
            // A missing part of the path appeared, or the root went away: watch from the
            // new anchor.
            if moved.as_ref() != Some(&anchor) {
                library.invalidate();
                break;
            }
        }
    }
}
