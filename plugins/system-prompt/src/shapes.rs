//! Which instruction files a working directory's chain has, as last found, so that a step
//! whose directories did not change looks up only the files that are there, not every
//! candidate name in every directory and a root marker in every parent up to `/`.
//!
//! Why: the chain is looked at before every step, and most of its names are not there. On a
//! tmpfs each look-up of a missing name makes and drops a dentry; ten of them (four candidates,
//! a `.git` in each of five parents) cost a step of the instant model 11 µs of its 119 (with
//! the chain switched off: 98). A directory's stamp changes when a name in it is made, removed
//! or renamed, so the stamps of the directories walked say whether the shape still holds; the
//! files found are read through [`crate::files::FileCache`] each step as before, so an edit to
//! one is seen at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use dsh_plugin_api::lock;

use crate::files::Stamp;

/// Working directories kept at once; past this many the cache starts over.
const KEPT: usize = 256;

/// What a chain has: its project root and, per directory from the root down to the working
/// directory, the candidate files present there (in candidate order; read or not, as
/// [`crate::files::FileCache`] decides each step).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) root: PathBuf,
    pub(crate) present: Vec<Vec<PathBuf>>,
}

/// A shape and the stamps of every directory looked in while finding it.
struct Kept {
    stamps: Vec<(PathBuf, Stamp)>,
    shape: Arc<Shape>,
}

/// What is known of a working directory's chain.
enum Entry {
    Kept(Arc<Kept>),
    /// A directory it walked changed too lately to be trusted; until this time a walk takes
    /// no stamps (they could not be kept).
    Waiting(SystemTime),
}

#[derive(Default)]
pub(crate) struct ShapeCache(Mutex<HashMap<PathBuf, Entry>>);

impl ShapeCache {
    /// Whether a walk of `cwd`'s chain should take the directories' stamps now: not while a
    /// directory it walked last time is still settling. The walk of a fresh directory (the
    /// first turn in a new home) then costs what it did before shapes were kept.
    pub(crate) fn worth_stamping(&self, cwd: &Path) -> bool {
        match lock(&self.0).get(cwd) {
            Some(Entry::Waiting(until)) => SystemTime::now() >= *until,
            _ => true,
        }
    }

    /// The shape kept for `cwd`, when every directory it was found in has its stamp still.
    pub(crate) fn get(&self, cwd: &Path) -> Option<Arc<Shape>> {
        let kept = match lock(&self.0).get(cwd)? {
            Entry::Kept(kept) => kept.clone(),
            Entry::Waiting(_) => return None,
        };
        let unchanged = kept.stamps.iter().all(|(dir, stamp)| {
            std::fs::metadata(dir).is_ok_and(|metadata| Stamp::of(&metadata) == *stamp)
        });
        unchanged.then(|| kept.shape.clone())
    }

    /// Keeps `shape` for `cwd` with `looked_in` (the directories and their metadata, taken
    /// before they were looked in), when every one of them is settled: a change made after now
    /// is then sure to change its stamp. Otherwise whatever was kept for `cwd` is dropped, and
    /// when the directories were all there, the time the last of them settles is noted.
    pub(crate) fn keep(
        &self,
        cwd: &Path,
        looked_in: Vec<(PathBuf, Option<std::fs::Metadata>)>,
        shape: Arc<Shape>,
    ) {
        let mut settles = Some(SystemTime::UNIX_EPOCH);
        let mut stamps = Vec::with_capacity(looked_in.len());
        for (dir, metadata) in looked_in {
            let at = metadata.as_ref().and_then(crate::files::settled_at);
            settles = settles.zip(at).map(|(latest, at)| latest.max(at));
            if let Some(metadata) = metadata {
                stamps.push((dir, Stamp::of(&metadata)));
            }
        }
        let entry = match settles {
            Some(at) if SystemTime::now() >= at => Entry::Kept(Arc::new(Kept { stamps, shape })),
            Some(at) => Entry::Waiting(at),
            None => {
                lock(&self.0).remove(cwd);
                return;
            }
        };
        let mut kept = lock(&self.0);
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(cwd.to_path_buf(), entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dsh-shapes-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Sets a directory's modification time `by` from now (ahead of the clock: not settled).
    fn shift(dir: &Path, by: i64) {
        let now = SystemTime::now();
        let at = match by {
            ..0 => now - Duration::from_secs(by.unsigned_abs()),
            _ => now + Duration::from_secs(by.unsigned_abs()),
        };
        let handle = std::fs::File::open(dir).unwrap();
        handle
            .set_times(std::fs::FileTimes::new().set_modified(at))
            .unwrap();
    }

    fn shape(root: &Path) -> Arc<Shape> {
        Arc::new(Shape {
            root: root.to_path_buf(),
            present: vec![Vec::new()],
        })
    }

    #[test]
    fn a_shape_holds_until_a_name_is_made_in_a_directory_it_was_found_in() {
        let dir = scratch("holds");
        shift(&dir, -60);
        let cache = ShapeCache::default();
        cache.keep(
            &dir,
            vec![(dir.clone(), std::fs::metadata(&dir).ok())],
            shape(&dir),
        );
        assert_eq!(cache.get(&dir), Some(shape(&dir)));
        std::fs::write(dir.join("AGENTS.md"), "new rule").unwrap();
        assert_eq!(cache.get(&dir), None, "a file made there");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_not_settled_or_missing_keeps_nothing() {
        let dir = scratch("fresh");
        shift(&dir, 3600);
        let cache = ShapeCache::default();
        cache.keep(
            &dir,
            vec![(dir.clone(), std::fs::metadata(&dir).ok())],
            shape(&dir),
        );
        assert_eq!(cache.get(&dir), None, "not settled");
        assert!(!cache.worth_stamping(&dir), "no stamps until it settles");
        shift(&dir, -60);
        let gone = dir.join("gone");
        cache.keep(
            &dir,
            vec![(dir.clone(), std::fs::metadata(&dir).ok()), (gone, None)],
            shape(&dir),
        );
        assert_eq!(cache.get(&dir), None, "a directory that was not there");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
