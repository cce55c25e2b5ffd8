//! Sessions other processes write: the store watches its root through the host's `fs_watch`
//! service and says `session/store-changed` when a session folder appears there or goes away,
//! so a listing (the web page's sidebar) follows a headless run in another terminal. Folders of
//! sessions this store writes itself are not announced: their own events say more.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use abi_stable::std_types::RString;
use dsh_plugin_api::io::watch::{FS_WATCH_SERVICE, FsWatchService};
use dsh_plugin_api::{Context, LogLevel};
use dsh_sessions_seam::SESSION_STORE_CHANGED;

use crate::store::Store;

/// The session folders under `root` (`<root>/<project>/<session>`).
fn session_dirs(root: &Path) -> HashSet<PathBuf> {
    let entries = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.path())
                    .filter(|path| path.is_dir())
                    .collect()
            })
            .unwrap_or_default()
    };
    entries(root)
        .iter()
        .flat_map(|project| entries(project))
        .collect()
}

/// The session folder a changed path lies in, if it lies under one.
fn session_dir_of(root: &Path, changed: &Path) -> Option<PathBuf> {
    let relative = changed.strip_prefix(root).ok()?;
    let mut parts = relative.components();
    let (project, session) = (parts.next()?, parts.next()?);
    Some(root.join(project).join(session))
}

/// Starts watching `root` when the host offers `fs_watch`; without it, a listing is only as
/// fresh as its last call (said at debug level).
pub(crate) async fn follow(ctx: Context, store: Store, root: PathBuf) {
    let Ok(Some(watches)) = ctx.get::<FsWatchService>(FS_WATCH_SERVICE) else {
        ctx.log(
            LogLevel::Debug,
            "no fs_watch service: other processes' sessions are not followed",
        );
        return;
    };
    let scan_root = root.clone();
    let Ok(mut known) = ctx
        .blocking(move || {
            let _ = std::fs::create_dir_all(&scan_root);
            session_dirs(&scan_root)
        })
        .await
    else {
        return;
    };
    let watcher = match watches
        .watch(RString::from(root.to_string_lossy().as_ref()), true)
        .into_result()
    {
        Ok(watcher) => watcher,
        Err(error) => {
            ctx.log(
                LogLevel::Warn,
                &format!("not following the session store: {error}"),
            );
            return;
        }
    };
    loop {
        let changed = watcher.changed().await;
        if changed.is_empty() {
            return;
        }
        let mut touched: Vec<PathBuf> = changed
            .iter()
            .filter_map(|path| session_dir_of(&root, Path::new(path.as_str())))
            .collect();
        touched.sort();
        touched.dedup();
        for dir in touched {
            let exists = dir.is_dir();
            let news = match exists {
                true => known.insert(dir.clone()) && !store.writes(&dir),
                false => known.remove(&dir),
            };
            if news {
                let path = RString::from(dir.to_string_lossy().as_ref());
                if let Err(error) = ctx.emit(&SESSION_STORE_CHANGED, &path) {
                    ctx.log(LogLevel::Warn, &format!("session/store-changed: {error}"));
                }
            }
        }
    }
}
