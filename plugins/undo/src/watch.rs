//! Change notification for the recorder: an inotify instance with a watch on every directory
//! the scans listed. It is only read (never waited on: the descriptor is non-blocking and no
//! thread is started) when a call ends, and what it reports says which directories to list
//! again, so a call's closing scan costs what changed, not the size of the workspace. When it
//! cannot say (its queue overflowed, a watch could not be added, the root itself went away)
//! the recorder walks the whole workspace instead. A write through a shared `mmap` raises no
//! event: such a change is seen at the next whole walk only (after a restart, or an overflow).

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::path::Path;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

#[derive(Debug)]
pub(crate) struct Watch {
    inotify: Inotify,
    /// Each watch's directory, relative to the root (`""`: the root).
    dirs: HashMap<WatchDescriptor, String>,
    buffer: Vec<u8>,
}

fn mask() -> WatchMask {
    WatchMask::MODIFY
        | WatchMask::ATTRIB
        | WatchMask::CLOSE_WRITE
        | WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DONT_FOLLOW
        | WatchMask::ONLYDIR
        | WatchMask::EXCL_UNLINK
}

impl Watch {
    /// A watch on `dirs` (relative to `root`); `None` where inotify or a watch is refused.
    pub(crate) fn new(root: &Path, dirs: &[String]) -> Option<Self> {
        let mut watch = Self {
            inotify: Inotify::init().ok()?,
            dirs: HashMap::new(),
            buffer: vec![0; 64 * 1024],
        };
        watch.add(root, dirs).then_some(watch)
    }

    /// Watches `dirs` too (again is harmless: the kernel answers the same descriptor, and its
    /// directory is updated, as after a rename). False when one could not be added.
    pub(crate) fn add(&mut self, root: &Path, dirs: &[String]) -> bool {
        for dir in dirs {
            match self.inotify.watches().add(root.join(dir), mask()) {
                Ok(descriptor) => {
                    self.dirs.insert(descriptor, dir.clone());
                }
                // Gone since it was listed: its parent's listing says so.
                Err(error) if error.kind() == ErrorKind::NotFound => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// The directories to list again since the last drain; `None`: walk everything.
    pub(crate) fn drain(&mut self) -> Option<HashSet<String>> {
        let mut dirty = HashSet::new();
        loop {
            let events = match self.inotify.read_events(&mut self.buffer) {
                Ok(events) => events,
                Err(error) if error.kind() == ErrorKind::WouldBlock => return Some(dirty),
                Err(_) => return None,
            };
            let mut any = false;
            for event in events {
                any = true;
                if event.mask.contains(EventMask::Q_OVERFLOW) {
                    return None;
                }
                let Some(dir) = self.dirs.get(&event.wd).cloned() else {
                    continue;
                };
                if event.mask.contains(EventMask::IGNORED) {
                    self.dirs.remove(&event.wd);
                    continue;
                }
                if event.name.is_some() {
                    dirty.insert(dir);
                } else if dir.is_empty() {
                    // The root itself was removed or moved.
                    return None;
                } else {
                    if event.mask.contains(EventMask::MOVE_SELF) {
                        // Its descriptor would name the old path: the new place is listed
                        // afresh and watched again.
                        let _ = self.inotify.watches().remove(event.wd.clone());
                        self.dirs.remove(&event.wd);
                    }
                    let parent = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
                    dirty.insert(parent.to_owned());
                }
            }
            if !any {
                return Some(dirty);
            }
        }
    }
}
