//! File watches whose changes come in batches: every path a burst of events named, once the
//! burst has been quiet for a while. Each watch has a thread that sleeps until an event comes
//! (the debouncer crate used before woke every watch's thread each quarter of its delay, changes
//! or not: some 190 wakeups a second for an idle web host with its five watches).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// A batch is handed over this long after its first event at the latest, however busy the
/// watched files stay (a build writing into a watched folder would otherwise hold it forever).
const LONGEST: Duration = Duration::from_secs(2);

/// What a watch hands over: the paths of a batch in the order first seen, or the errors the
/// watcher met meanwhile.
pub(crate) type Batch = Result<Vec<PathBuf>, Vec<notify::Error>>;

/// A watch; dropping it stops the OS watch, and its thread ends after the last batch.
pub(crate) struct BatchedWatch {
    watcher: RecommendedWatcher,
}

impl BatchedWatch {
    /// Watches nothing yet; `deliver` gets each batch, on the watch's own thread, once no event
    /// came for `quiet`.
    pub(crate) fn new(
        quiet: Duration,
        deliver: impl FnMut(Batch) + Send + 'static,
    ) -> notify::Result<Self> {
        let (events, received) = channel();
        let watcher = notify::recommended_watcher(events)?;
        let spawned = std::thread::Builder::new()
            .name("dsh-watch".into())
            .spawn(move || gather(&received, quiet, deliver));
        if let Err(error) = spawned {
            return Err(notify::Error::io(error));
        }
        Ok(Self { watcher })
    }

    pub(crate) fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        self.watcher.watch(path, mode)
    }
}

/// The watch's thread: waits for an event, then gathers until `quiet` passes without one (or
/// [`LONGEST`] since the first), hands the batch over, and waits again. Ends when the watcher,
/// and with it the channel's sender, is dropped.
fn gather(
    received: &Receiver<notify::Result<notify::Event>>,
    quiet: Duration,
    mut deliver: impl FnMut(Batch),
) {
    while let Ok(first) = received.recv() {
        let started = Instant::now();
        let mut batch = Gathered::default();
        batch.add(first);
        let mut open = true;
        loop {
            let left = LONGEST.saturating_sub(started.elapsed());
            match received.recv_timeout(quiet.min(left)) {
                Ok(event) => batch.add(event),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
            if left.is_zero() {
                break;
            }
        }
        batch.hand_over(&mut deliver);
        if !open {
            return;
        }
    }
}

/// One batch being gathered.
#[derive(Default)]
struct Gathered {
    paths: Vec<PathBuf>,
    seen: HashSet<PathBuf>,
    errors: Vec<notify::Error>,
}

impl Gathered {
    fn add(&mut self, event: notify::Result<notify::Event>) {
        match event {
            // Meta events (the watcher's own notices) name no change.
            Ok(event) if matches!(event.kind, EventKind::Other) => {}
            Ok(event) => {
                for path in event.paths {
                    if self.seen.insert(path.clone()) {
                        self.paths.push(path);
                    }
                }
            }
            Err(error) => self.errors.push(error),
        }
    }

    fn hand_over(self, deliver: &mut impl FnMut(Batch)) {
        if !self.errors.is_empty() {
            deliver(Err(self.errors));
        }
        if !self.paths.is_empty() {
            deliver(Ok(self.paths));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_comes_as_one_batch_of_distinct_paths_and_an_idle_watch_sends_nothing() {
        let dir = std::env::temp_dir().join(format!("dsh-batched-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (batches, got) = channel();
        let mut watch = BatchedWatch::new(Duration::from_millis(100), move |batch| {
            let _ = batches.send(batch);
        })
        .unwrap();
        watch.watch(&dir, RecursiveMode::NonRecursive).unwrap();
        for round in 0..3 {
            std::fs::write(dir.join("a.txt"), format!("{round}")).unwrap();
            std::fs::write(dir.join("b.txt"), format!("{round}")).unwrap();
        }
        let batch = got.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
        let names: Vec<String> = batch
            .iter()
            .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.txt", "b.txt"], "{batch:?}");
        // Nothing changed since: nothing more comes.
        assert!(got.recv_timeout(Duration::from_millis(400)).is_err());
        drop(watch);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
