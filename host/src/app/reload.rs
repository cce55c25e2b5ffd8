//! Hot reload: one watcher over the plugin directories and the config layers, debounced, feeding
//! one reload task that serializes all load and unload work.
//!
//! A changed library is loaded from a unique copy and checked before the rows running the old
//! version are touched; a library that fails to load leaves the old version running. A config
//! edit is recomposed and diffed by row id; a broken edit keeps the last good tree.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use notify::RecursiveMode;
use tokio::sync::mpsc;

use crate::app::App;
use crate::app::boot::Boot;
use crate::builtin::batched_watch::BatchedWatch;

/// How long a burst of file events is collected before the reload task acts on it.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// Keeps the watcher and the reload task alive; dropping it stops both.
pub struct Watcher {
    _watch: BatchedWatch,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts watching; `None` (with a warning) when no watcher can be made.
pub fn watch(
    boot: &Boot,
    app: Arc<App>,
    tree_mounted: tokio::sync::oneshot::Receiver<()>,
) -> Option<Watcher> {
    let (sender, mut receiver) = mpsc::unbounded_channel::<Vec<PathBuf>>();
    let mut watch = match BatchedWatch::new(DEBOUNCE, move |batch| match batch {
        Ok(paths) => {
            let _ = sender.send(paths);
        }
        Err(errors) => {
            for error in errors {
                tracing::warn!("file watcher: {error}");
            }
        }
    }) {
        Ok(watch) => watch,
        Err(error) => {
            tracing::warn!("hot reload disabled: cannot watch files: {error}");
            return None;
        }
    };
    let plugin_dirs = app.plugin_dirs();
    let config_files = boot.config_files();
    let mut watched = BTreeSet::new();
    for dir in plugin_dirs.iter().chain(
        config_files
            .iter()
            .filter_map(|file| file.parent().map(|p| p.to_path_buf()))
            .collect::<Vec<_>>()
            .iter(),
    ) {
        if watched.insert(dir.clone())
            && let Err(error) = watch.watch(dir, RecursiveMode::NonRecursive)
        {
            tracing::debug!("not watching {}: {error}", dir.display());
        }
    }
    let reloader = Reloader {
        app,
        boot: Boot::new(boot.tree.clone()),
        plugin_dirs,
        config_files,
    };
    let task = tokio::spawn(async move {
        // Files are watched from before the first tree mounts (an edit made while its rows
        // start is not missed), and handled once every row of it is mounted.
        let _ = tree_mounted.await;
        while let Some(mut paths) = receiver.recv().await {
            // Take everything that queued up meanwhile: one pass per burst.
            while let Ok(more) = receiver.try_recv() {
                paths.extend(more);
            }
            reloader.handle(paths).await;
        }
    });
    Some(Watcher {
        _watch: watch,
        task,
    })
}

struct Reloader {
    app: Arc<App>,
    boot: Boot,
    plugin_dirs: Vec<PathBuf>,
    config_files: Vec<PathBuf>,
}

impl Reloader {
    async fn handle(&self, paths: Vec<PathBuf>) {
        let paths: BTreeSet<PathBuf> = paths.into_iter().collect();
        if paths.iter().any(|path| self.is_library(path)) {
            self.app.libraries().forget_locations();
        }
        let config_changed = paths.iter().any(|path| self.config_files.contains(path));
        if config_changed {
            self.reload_config().await;
        }
        for path in paths.iter().filter(|path| self.is_library(path)) {
            if !path.is_file() {
                continue;
            }
            match self.app.library_changed(path).await {
                Ok(0) => {}
                Ok(count) => {
                    tracing::info!("reloaded {} ({count} row(s) remounted)", path.display())
                }
                Err(error) => tracing::error!("keeping the running version: {error}"),
            }
        }
    }

    fn is_library(&self, path: &std::path::Path) -> bool {
        path.extension().is_some_and(|ext| ext == "so")
            && path
                .parent()
                .is_some_and(|dir| self.plugin_dirs.iter().any(|plugin_dir| plugin_dir == dir))
    }

    async fn reload_config(&self) {
        // Reading and parsing the layers is file work: off the runtime's threads, so a large
        // or slow file holds no task of the host.
        let tree = self.boot.tree.clone();
        let loaded = tokio::task::spawn_blocking(move || Boot::new(tree).load()).await;
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(error) => {
                tracing::error!("config reload failed, keeping the last good tree: {error}");
                return;
            }
        };
        match loaded {
            Ok(rows) => {
                let diff = self.app.apply_tree(rows).await;
                if !diff.is_empty() {
                    tracing::info!(
                        "config reloaded: {} added, {} removed, {} changed",
                        diff.added.len(),
                        diff.removed.len(),
                        diff.changed.len()
                    );
                }
            }
            Err(error) => {
                tracing::error!("config edit rejected, keeping the last good tree: {error}")
            }
        }
    }
}
