//! File watches whose changes come in batches: every path a burst of events named, once the
//! burst has been quiet for a while. Each watch has a thread that sleeps until an event comes
//! (the debouncer crate used before woke every watch's thread each quarter of its delay, changes
//! or not: some 190 wakeups a second for an idle web host with its five watches). Every watch
//! shares one OS watcher: an inotify instance costs a grace period of about 13 ms when it is
//! closed, which a process pays for each one at its exit (eight of them made a headless run's
//! exit some 30 ms longer).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// A batch is handed over this long after its first event at the latest, however busy the
/// watched files stay (a build writing into a watched folder would otherwise hold it forever).
const LONGEST: Duration = Duration::from_secs(2);

/// What a watch hands over: the paths of a batch in the order first seen, or the errors the
/// watcher met meanwhile.
pub(crate) type Batch = Result<Vec<PathBuf>, Vec<notify::Error>>;

type Events = Sender<notify::Result<notify::Event>>;

/// Where the shared watcher's events go: each watch's paths and the channel of its thread.
#[derive(Default)]
struct Routes {
    next: u64,
    routes: HashMap<u64, Route>,
}

impl Routes {
    /// How many routes watch `path`, and whether one of them watches it recursively.
    fn of(&self, path: &Path) -> (usize, bool) {
        self.routes
            .values()
            .filter(|route| route.path == path)
            .fold((0, false), |(count, deep), route| {
                (count + 1, deep || route.recursive)
            })
    }
}

struct Route {
    path: PathBuf,
    recursive: bool,
    events: Events,
}

impl Route {
    /// Whether a change of `path` is this route's: the watched path itself, a direct entry of
    /// it, or anything below it when recursive.
    fn covers(&self, path: &Path) -> bool {
        path == self.path
            || path.parent() == Some(self.path.as_path())
            || (self.recursive && path.starts_with(&self.path))
    }
}

/// The one OS watcher, made at the first watch.
struct Shared {
    watcher: Mutex<Option<RecommendedWatcher>>,
    routes: Mutex<Routes>,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| Shared {
        watcher: Mutex::new(None),
        routes: Mutex::new(Routes::default()),
    })
}

/// Sends each event of the shared watcher to the routes it concerns, with their paths only.
fn route(event: notify::Result<notify::Event>) {
    let routes = shared()
        .routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match event {
        Ok(event) => {
            for route in routes.routes.values() {
                let paths: Vec<PathBuf> = event
                    .paths
                    .iter()
                    .filter(|path| route.covers(path))
                    .cloned()
                    .collect();
                if !paths.is_empty() {
                    let mut mine = event.clone();
                    mine.paths = paths;
                    let _ = route.events.send(Ok(mine));
                }
            }
        }
        Err(error) => {
            for route in routes.routes.values() {
                if error.paths.is_empty() || error.paths.iter().any(|path| route.covers(path)) {
                    let copy =
                        notify::Error::generic(&error.to_string()).set_paths(error.paths.clone());
                    let _ = route.events.send(Err(copy));
                }
            }
        }
    }
}

/// A watch; dropping it ends its share of the OS watch, and its thread ends after the last
/// batch.
pub(crate) struct BatchedWatch {
    /// The channel its routes send on, until a path is watched.
    events: Events,
    routes: Vec<u64>,
}

impl BatchedWatch {
    /// Watches nothing yet; `deliver` gets each batch, on the watch's own thread, once no event
    /// came for `quiet`.
    pub(crate) fn new(
        quiet: Duration,
        deliver: impl FnMut(Batch) + Send + 'static,
    ) -> notify::Result<Self> {
        let (events, received) = channel();
        let spawned = std::thread::Builder::new()
            .name("dsh-watch".into())
            .spawn(move || gather(&received, quiet, deliver));
        if let Err(error) = spawned {
            return Err(notify::Error::io(error));
        }
        Ok(Self {
            events,
            routes: Vec::new(),
        })
    }

    pub(crate) fn watch(&mut self, path: &Path, mode: RecursiveMode) -> notify::Result<()> {
        // One spelling per place: the watcher names changes by the path it was given.
        let path = std::fs::canonicalize(path)
            .map_err(|error| notify::Error::io(error).add_path(path.to_path_buf()))?;
        let recursive = mode == RecursiveMode::Recursive;
        let shared = shared();
        let mut watcher = shared
            .watcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if watcher.is_none() {
            *watcher = Some(notify::recommended_watcher(route)?);
        }
        let Some(os) = watcher.as_mut() else {
            return Err(notify::Error::generic("no file watcher"));
        };
        let mut routes = shared.routes.lock().unwrap_or_else(PoisonError::into_inner);
        let (count, deep) = routes.of(&path);
        if count == 0 || (recursive && !deep) {
            // The routes lock is let go while the OS watch is added: the watcher's thread may be
            // routing an event meanwhile.
            drop(routes);
            os.watch(&path, mode)?;
            routes = shared.routes.lock().unwrap_or_else(PoisonError::into_inner);
        }
        let id = routes.next;
        routes.next += 1;
        routes.routes.insert(
            id,
            Route {
                path,
                recursive,
                events: self.events.clone(),
            },
        );
        self.routes.push(id);
        Ok(())
    }
}

impl Drop for BatchedWatch {
    fn drop(&mut self) {
        let shared = shared();
        let mut watcher = shared
            .watcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut routes = shared.routes.lock().unwrap_or_else(PoisonError::into_inner);
        let gone: HashSet<PathBuf> = self
            .routes
            .drain(..)
            .filter_map(|id| routes.routes.remove(&id))
            .map(|route| route.path)
            .collect();
        // A path is unwatched with its last route.
        let unwatched: Vec<PathBuf> = gone
            .into_iter()
            .filter(|path| routes.of(path).0 == 0)
            .collect();
        drop(routes);
        if let Some(os) = watcher.as_mut() {
            for path in unwatched {
                let _ = os.unwatch(&path);
            }
        }
    }
}

/// The watch's thread: waits for an event, then gathers until `quiet` passes without one (or
/// [`LONGEST`] since the first), hands the batch over, and waits again. Ends when its watch is
/// dropped, and with it the channel's last sender (its own and its routes').
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
