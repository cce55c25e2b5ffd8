//! Sessions other processes write: the store watches its root through the host's `fs_watch`
//! service and says `session/store-changed` when a session folder appears there or goes away,
//! so a listing (the web page's sidebar) follows a headless run in another terminal. Folders of
//! sessions this store writes itself are not announced: their own events say more.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::io::watch::{FS_WATCH_SERVICE, FsWatchService};
use dsh_plugin_api::{Context, LogLevel, Service};
use dsh_sessions_seam::SESSION_STORE_CHANGED;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::store::Store;

/// The folders directly in `dir`.
fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

/// The session folder a changed path lies in, if it lies under one.
fn session_dir_of(root: &Path, changed: &Path) -> Option<PathBuf> {
    let relative = changed.strip_prefix(root).ok()?;
    let mut parts = relative.components();
    let (project, session) = (parts.next()?, parts.next()?);
    Some(root.join(project).join(session))
}

/// The directories a store's follower watches: the root (for project folders) and each
/// project folder (for session folders), each without what lies below it. A recursive watch of
/// the root also watched every session folder, so each append to a log (this store's own, at
/// every event) woke the host's watcher and was routed and batched for nothing: some 300,000
/// instructions a step of an ACP turn.
struct Watched {
    watches: Service<FsWatchService>,
    /// Where each watch's batches go.
    batches: UnboundedSender<Vec<RString>>,
    /// The project folders watched, each with the flag that ends its watch.
    projects: HashMap<PathBuf, Arc<CancelFlag>>,
}

impl Watched {
    /// Watches `dir` (not below it), its batches forwarded until `stop` fires or the watch
    /// ends; the end of a watch that `ends_follow` is forwarded as an empty batch. `false`
    /// when it cannot be watched (said in the log).
    fn watch(&self, ctx: &Context, dir: &Path, stop: Arc<CancelFlag>, ends_follow: bool) -> bool {
        let watcher = match self
            .watches
            .watch(RString::from(dir.to_string_lossy().as_ref()), false)
            .into_result()
        {
            Ok(watcher) => watcher,
            Err(error) => {
                ctx.log(
                    LogLevel::Warn,
                    &format!("not following {}: {error}", dir.display()),
                );
                return false;
            }
        };
        let batches = self.batches.clone();
        let forwarding = async move {
            while let Some(changed) = stop.until(watcher.changed()).await {
                if changed.is_empty() {
                    // The host's watch ended (it is stopping).
                    if ends_follow {
                        let _ = batches.send(Vec::new());
                    }
                    return;
                }
                if batches.send(changed.into_iter().collect()).is_err() {
                    return;
                }
            }
        };
        ctx.spawn(forwarding).is_ok()
    }

    /// Starts or ends the watch of project folder `dir` as it exists or not; answers the
    /// session folders in it when its watch just started (made before the watch saw them).
    fn project(&mut self, ctx: &Context, dir: &Path) -> Vec<PathBuf> {
        if !dir.is_dir() {
            if let Some(stop) = self.projects.remove(dir) {
                stop.fire();
            }
            return Vec::new();
        }
        if self.projects.contains_key(dir) {
            return Vec::new();
        }
        let stop = CancelFlag::new();
        if self.watch(ctx, dir, stop.clone(), false) {
            self.projects.insert(dir.to_path_buf(), stop);
        }
        subdirectories(dir)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        for stop in self.projects.values() {
            stop.fire();
        }
    }
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
    let (batches, mut received) = unbounded_channel();
    let mut watched = Watched {
        watches,
        batches,
        projects: HashMap::new(),
    };
    let made = root.clone();
    if ctx
        .blocking(move || std::fs::create_dir_all(&made))
        .await
        .is_err()
    {
        return;
    }
    let ends_with_follow = CancelFlag::new();
    let _ending = Fire(ends_with_follow.clone());
    if !watched.watch(&ctx, &root, ends_with_follow, true) {
        return;
    }
    // The folders there once the root is watched are known, not news.
    let scan_root = root.clone();
    let Ok(projects) = ctx.blocking(move || subdirectories(&scan_root)).await else {
        return;
    };
    let mut known: HashSet<PathBuf> = projects
        .iter()
        .flat_map(|project| watched.project(&ctx, project))
        .collect();
    while let Some(changed) = received.recv().await {
        if changed.is_empty() {
            return;
        }
        let mut touched: Vec<PathBuf> = Vec::new();
        for path in changed.iter().map(|path| Path::new(path.as_str())) {
            if path.parent() == Some(root.as_path()) {
                // A project folder came or went: its sessions with it.
                touched.extend(watched.project(&ctx, path));
                touched.extend(known.iter().filter(|dir| dir.starts_with(path)).cloned());
            } else if let Some(dir) = session_dir_of(&root, path) {
                touched.push(dir);
            }
        }
        touched.sort();
        touched.dedup();
        for dir in touched {
            let news = match dir.is_dir() {
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

/// Fires its flag when dropped: the root's watch ends with the follow.
struct Fire(Arc<CancelFlag>);

impl Drop for Fire {
    fn drop(&mut self) {
        self.0.fire();
    }
}
