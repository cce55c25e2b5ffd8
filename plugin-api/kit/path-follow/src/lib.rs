//! `dsh-path-follow`: following a path a plugin reads (a skill root, a hook file's folder)
//! through the host's `fs_watch` service, so the plugin can keep what it read until something
//! changes instead of looking again at every use. A path that exists is watched (with what is
//! below it, when asked); one that does not yet is waited for from its nearest existing
//! ancestor until the next missing part of its path appears; one that goes away is waited for
//! again. The owner hears which changes concern it, and when a watch cannot be kept (then it
//! must look again at every use).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use abi_stable::std_types::RString;
use dsh_plugin_api::io::watch::{FS_WATCH_SERVICE, FsWatchService};
use dsh_plugin_api::{Context, LogLevel};

/// A watch the host ended is tried again after this long.
const RETRY: Duration = Duration::from_secs(1);

/// What follows a path: the plugin-side state the changes invalidate.
pub trait Followed: Send + Sync + 'static {
    /// The plugin's context (its tasks, services and log).
    fn context(&self) -> &Context;
    /// Whether a change at `changed` concerns what was read at `followed`.
    fn concerns(&self, followed: &Path, changed: &Path) -> bool;
    /// Something read may have changed: the next use looks again.
    fn invalidate(&self);
    /// The path is no longer followed: nothing read may be kept between uses any more.
    fn unfollowed(&self);
}

/// The nearest existing directory on `path`'s way (`path` itself when it is a directory).
fn anchor_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|dir| dir.is_dir())
        .map(Path::to_owned)
}

/// Starts a task that follows `path` for as long as `owner` lives; `recursive` watches what
/// is below `path` too once it exists; `label` names the owner in warnings.
pub fn follow<F: Followed>(owner: &Arc<F>, path: PathBuf, recursive: bool, label: &'static str) {
    let ctx = owner.context().clone();
    if let Err(error) = ctx.spawn(run(Arc::downgrade(owner), path.clone(), recursive, label)) {
        ctx.log(
            LogLevel::Warn,
            &format!("{label}: not following {}: {error}", path.display()),
        );
        owner.unfollowed();
    }
}

async fn run<F: Followed>(owner: Weak<F>, path: PathBuf, recursive: bool, label: &'static str) {
    loop {
        let Some(strong) = owner.upgrade() else {
            return;
        };
        let ctx = strong.context().clone();
        let Ok(Some(watches)) = ctx.get::<FsWatchService>(FS_WATCH_SERVICE) else {
            strong.unfollowed();
            return;
        };
        let probe = path.clone();
        let Ok(Some(anchor)) = ctx.blocking(move || anchor_of(&probe)).await else {
            strong.unfollowed();
            return;
        };
        let watcher = match watches
            .watch(
                RString::from(anchor.to_string_lossy().as_ref()),
                recursive && anchor == path,
            )
            .into_result()
        {
            Ok(watcher) => watcher,
            Err(error) => {
                ctx.log(
                    LogLevel::Warn,
                    &format!("{label}: cannot watch {}: {error}", anchor.display()),
                );
                strong.unfollowed();
                return;
            }
        };
        // What was read may have changed between that read and this watch.
        strong.invalidate();
        drop(strong);
        loop {
            let changed = watcher.changed().await;
            let Some(owner) = owner.upgrade() else {
                return;
            };
            if changed.is_empty() {
                // The host ended the watch: start another after a while.
                ctx.sleep(RETRY).await;
                break;
            }
            if changed
                .iter()
                .any(|changed| owner.concerns(&path, Path::new(changed.as_str())))
            {
                owner.invalidate();
            }
            // The watched folder itself changed (gone, or gone and back: its watch is dead), a
            // missing part of the path appeared, or the path went away: watch again from where
            // its existing part now ends.
            let watched_changed = changed
                .iter()
                .any(|changed| anchor.starts_with(Path::new(changed.as_str())));
            let probe = path.clone();
            let moved = ctx.blocking(move || anchor_of(&probe)).await.ok().flatten();
            if watched_changed || moved.as_ref() != Some(&anchor) {
                owner.invalidate();
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_is_anchored_at_its_nearest_existing_ancestor() {
        let base = std::env::temp_dir().join(format!("path-follow-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        assert_eq!(anchor_of(&base.join("a/b/c")), Some(base.clone()));
        std::fs::create_dir_all(base.join("a")).unwrap();
        assert_eq!(anchor_of(&base.join("a/b/c")), Some(base.join("a")));
        assert_eq!(anchor_of(&base), Some(base.clone()));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
