//! The listing file beside a session's log: what a list of sessions shows of it (when its
//! conversation last had a message, its latest title) without reading the log. One file holds
//! both, the time on the first line and the title after it, because every file a session
//! creates costs an inode allocation, which ext4 makes slow after many recent deletions (a
//! delegation's children each pay it on the path to their answer). Stores written before the
//! file existed kept a `title` and an `activity` file instead; those are still read.

use std::io::{ErrorKind, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The listing file's name, beside `session.jsonl[.zstd]`.
pub const LISTING_FILE: &str = "listing";

/// The marker of an archived session (empty; its presence is the fact).
pub const ARCHIVED_FILE: &str = "archived";

/// The files earlier versions wrote instead of [`LISTING_FILE`], read when it is absent.
const OLD_TITLE_FILE: &str = "title";
const OLD_ACTIVITY_FILE: &str = "activity";

/// What a list shows of a session, as the listing file holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListingFile {
    /// When the conversation last had a message (milliseconds since the epoch).
    pub active_at: Option<i64>,
    /// The latest title; `None` for a session not titled yet.
    pub title: Option<String>,
}

impl ListingFile {
    /// The listing of the session in `dir`, or `None` when it has none (a log older than the
    /// listing files, or one without a message yet). An empty file (being written by its first
    /// write, which is not done aside) reads as a listing with nothing in it.
    pub fn read(dir: &Path) -> Option<Self> {
        match std::fs::read_to_string(dir.join(LISTING_FILE)) {
            Ok(text) => Some(Self::parse(&text)),
            Err(_) => Self::read_old(dir),
        }
    }

    /// The `title` and `activity` files of earlier versions, if either is there.
    fn read_old(dir: &Path) -> Option<Self> {
        let title = std::fs::read_to_string(dir.join(OLD_TITLE_FILE)).ok();
        let activity = std::fs::read_to_string(dir.join(OLD_ACTIVITY_FILE)).ok();
        if title.is_none() && activity.is_none() {
            return None;
        }
        Some(Self {
            active_at: activity.and_then(|text| text.trim().parse().ok()),
            title: title.filter(|title| !title.is_empty()),
        })
    }

    fn parse(text: &str) -> Self {
        let (first, title) = text.split_once('\n').unwrap_or((text, ""));
        Self {
            active_at: first.trim().parse().ok(),
            title: (!title.is_empty()).then(|| title.to_owned()),
        }
    }

    fn text(&self) -> String {
        let active = self.active_at.map(|ms| ms.to_string()).unwrap_or_default();
        format!("{active}\n{}", self.title.as_deref().unwrap_or_default())
    }

    /// Writes the listing whole. A session's first listing is created in place (a reader
    /// meanwhile sees no file, or an empty one, which lists as untitled for that moment);
    /// a later one is written aside and renamed over it, so a list never reads it half
    /// written.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(LISTING_FILE);
        let text = self.text();
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path);
        match created {
            Ok(file) => file.write_all_at(text.as_bytes(), 0),
            Err(error) if error.kind() == ErrorKind::AlreadyExists => replace(dir, &text),
            Err(error) => Err(error),
        }
    }

    /// Records that the conversation in `dir` last had a message at `ms`: rewritten in place
    /// when the time keeps its width (13 digits until the year 2286), so a session's later
    /// messages create no file; otherwise the listing is written whole with its title kept.
    /// A list reading during the one write reads the old or the new time (a moment apart).
    pub fn record_activity(dir: &Path, ms: i64) -> std::io::Result<()> {
        let digits = ms.to_string();
        if rewrite_time_in_place(&dir.join(LISTING_FILE), &digits)? {
            return Ok(());
        }
        let mut listing = Self::read(dir).unwrap_or_default();
        listing.active_at = Some(ms);
        listing.write(dir)
    }

    /// Records the session's latest title, its time kept (`active_at` given wins: both come
    /// from one batch).
    pub fn record_title(dir: &Path, title: &str, active_at: Option<i64>) -> std::io::Result<()> {
        let current = Self::read(dir).unwrap_or_default();
        Self {
            active_at: active_at.or(current.active_at),
            title: Some(title.to_owned()).filter(|title| !title.is_empty()),
        }
        .write(dir)
    }
}

/// When the conversation of `events` (a whole log) last had a message: what the listing's
/// first line holds, for a log written before it had one.
pub fn last_message_time(events: &[dsh_protocol::SessionEvent]) -> Option<i64> {
    use dsh_protocol::kinds::{ASSISTANT_MESSAGE, USER_MESSAGE};
    events
        .iter()
        .rev()
        .find(|event| event.kind == USER_MESSAGE || event.kind == ASSISTANT_MESSAGE)
        .map(|event| event.time)
}

/// Overwrites the time on the listing's first line when `digits` has its width; `false` when
/// the file is not there or the width differs.
fn rewrite_time_in_place(path: &Path, digits: &str) -> std::io::Result<bool> {
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    };
    let mut head = [0u8; 24];
    let read = file.read(&mut head)?;
    let width = head[..read].iter().position(|&byte| byte == b'\n');
    if width != Some(digits.len()) {
        return Ok(false);
    }
    file.write_all_at(digits.as_bytes(), 0)?;
    Ok(true)
}

/// Writes `text` aside in `dir` and renames it over the listing file.
fn replace(dir: &Path, text: &str) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let aside = dir.join(format!(
        ".{LISTING_FILE}.{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written =
        std::fs::write(&aside, text).and_then(|()| std::fs::rename(&aside, dir.join(LISTING_FILE)));
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use std::path::PathBuf;

    use super::*;

    /// A fresh folder of this test's own.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dsh-listing-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_time_is_rewritten_in_place_while_its_width_holds() {
        let dir = scratch("width");
        ListingFile::record_title(dir.as_path(), "fix the build", Some(1_796_571_831_423)).unwrap();
        let inode = std::fs::metadata(dir.as_path().join(LISTING_FILE))
            .unwrap()
            .ino();
        ListingFile::record_activity(dir.as_path(), 1_796_571_839_999).unwrap();
        assert_eq!(
            std::fs::metadata(dir.as_path().join(LISTING_FILE))
                .unwrap()
                .ino(),
            inode
        );
        let read = ListingFile::read(dir.as_path()).unwrap();
        assert_eq!(read.active_at, Some(1_796_571_839_999));
        assert_eq!(read.title.as_deref(), Some("fix the build"));
        // Another width: written whole, the title kept.
        ListingFile::record_activity(dir.as_path(), 42).unwrap();
        let read = ListingFile::read(dir.as_path()).unwrap();
        assert_eq!(
            (read.active_at, read.title.as_deref()),
            (Some(42), Some("fix the build"))
        );
    }

    #[test]
    fn a_new_title_keeps_the_time_and_a_title_may_span_lines() {
        let dir = scratch("title");
        ListingFile::record_activity(dir.as_path(), 1_796_571_831_423).unwrap();
        assert_eq!(ListingFile::read(dir.as_path()).unwrap().title, None);
        ListingFile::record_title(dir.as_path(), "two\nlines", None).unwrap();
        let read = ListingFile::read(dir.as_path()).unwrap();
        assert_eq!(read.active_at, Some(1_796_571_831_423));
        assert_eq!(read.title.as_deref(), Some("two\nlines"));
        let leftovers = std::fs::read_dir(dir.as_path()).unwrap().count();
        assert_eq!(leftovers, 1, "nothing is left aside");
    }

    #[test]
    fn the_files_of_earlier_versions_are_read_and_carried_into_the_listing() {
        let dir = scratch("old");
        assert_eq!(ListingFile::read(dir.as_path()), None);
        std::fs::write(dir.as_path().join(OLD_TITLE_FILE), "old title").unwrap();
        std::fs::write(dir.as_path().join(OLD_ACTIVITY_FILE), "1796571831423").unwrap();
        let old = ListingFile::read(dir.as_path()).unwrap();
        assert_eq!(old.active_at, Some(1_796_571_831_423));
        ListingFile::record_activity(dir.as_path(), 1_796_571_839_999).unwrap();
        let read = ListingFile::read(dir.as_path()).unwrap();
        assert_eq!(
            (read.active_at, read.title.as_deref()),
            (Some(1_796_571_839_999), Some("old title"))
        );
    }

    #[test]
    fn an_empty_file_reads_as_nothing_listed_yet() {
        let dir = scratch("empty");
        std::fs::write(dir.as_path().join(LISTING_FILE), "").unwrap();
        assert_eq!(
            ListingFile::read(dir.as_path()),
            Some(ListingFile::default())
        );
    }
}
