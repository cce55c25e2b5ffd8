//! The two operations that close the gap between checking a path and using it, on the local
//! filesystem. A file tool checks a path against the sandbox's policy and then opens it; a
//! command running at the same time can swap a directory on that path for a symbolic link in
//! between (a `renameat2` exchange in a loop wins within a second), so that the open lands
//! somewhere the check never saw: the dsh home, the credentials file. So:
//!
//! - a read opens the path first and then asks the kernel where the open file really is
//!   (`/proc/self/fd/N`), reads through that same descriptor, and answers the bytes with that
//!   real path: the caller decides on the path the bytes came from, not the one it asked for;
//! - a publication takes the path the caller checked (its real path, which has no symbolic
//!   link in it) and walks it one component at a time from `/` with `O_NOFOLLOW`, creating
//!   the missing directories itself, then stages and renames the file inside the directory
//!   handle it holds: a symbolic link anywhere on the way is refused, and nothing is written
//!   anywhere but where the check looked.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::PublishError;

static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The refusal when a component of a checked path is (now) a symbolic link.
fn swapped(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{}: a part of the path is a symbolic link or not a directory, so it changed after it was checked; nothing was written",
            path.display()
        ),
    )
}

/// Up to `len` bytes of `path` from `offset`, and the real path of the file they came from.
pub(crate) fn read_at_resolved(
    path: &Path,
    offset: u64,
    len: usize,
) -> io::Result<(Vec<u8>, PathBuf)> {
    let mut file = File::open(path)?;
    let real =
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!(
                    "cannot tell where {} really is (is /proc mounted?): {error}",
                    path.display()
                ),
            )
        })?;
    if offset > 0 {
        file.seek(SeekFrom::Start(offset))?;
    }
    let mut out = Vec::with_capacity(len.min(1 << 20));
    file.take(len as u64).read_to_end(&mut out)?;
    Ok((out, real))
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// `openat(dir, name)` as a directory handle, never following a symbolic link.
#[allow(unsafe_code, reason = "openat has no safe wrapper in std")]
fn open_dir_at(dir: RawFd, name: &CString) -> io::Result<OwnedFd> {
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `name` is a NUL-terminated string that outlives the call; `dir` is an open
    // descriptor (or AT_FDCWD) owned by the caller.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `mkdirat(dir, name, mode)`.
#[allow(unsafe_code, reason = "mkdirat has no safe wrapper in std")]
fn make_dir_at(dir: RawFd, name: &CString, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call; `dir` is open.
    match unsafe { libc::mkdirat(dir, name.as_ptr(), mode) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The directory `path` (absolute, no `..`) as a handle, reached from `/` one component at a
/// time without following a symbolic link; missing directories are created.
fn open_dir_creating(path: &Path, whole: &Path) -> io::Result<OwnedFd> {
    let root = c_name(OsStr::new("/"))?;
    let mut dir = open_dir_at(libc::AT_FDCWD, &root)?;
    for component in path.components() {
        let name = match component {
            Component::RootDir => continue,
            Component::Normal(name) => c_name(name)?,
            _ => return Err(swapped(whole)),
        };
        dir = match open_dir_at(dir.as_raw_fd(), &name) {
            Ok(next) => next,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {
                match make_dir_at(dir.as_raw_fd(), &name, 0o777) {
                    Ok(()) => {}
                    Err(error) if error.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(error) => return Err(error),
                }
                open_dir_at(dir.as_raw_fd(), &name).map_err(|_| swapped(whole))?
            }
            Err(error) if matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                return Err(swapped(whole));
            }
            Err(error) => return Err(error),
        };
    }
    Ok(dir)
}

/// A file created in `dir` for writing (`O_EXCL`, never through a link).
#[allow(unsafe_code, reason = "openat has no safe wrapper in std")]
fn create_file_at(dir: RawFd, name: &CString) -> io::Result<File> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // 0666 less the umask, what a plain create gives: the private staging directory keeps
    // others out until the file is published.
    // SAFETY: `name` is NUL-terminated and outlives the call; `dir` is open.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags, 0o666 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// What is at `name` in `dir`, without following a link: `None` when nothing is.
#[allow(unsafe_code, reason = "fstatat has no safe wrapper in std")]
fn kind_at(dir: RawFd, name: &CString) -> io::Result<Option<libc::mode_t>> {
    // SAFETY: an all-zero `stat` is a valid value for fstatat to overwrite.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is NUL-terminated, `stat` is a live struct, `dir` is open.
    let done = unsafe { libc::fstatat(dir, name.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW) };
    match done {
        0 => Ok(Some(stat.st_mode & libc::S_IFMT)),
        _ => {
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::ENOENT) => Ok(None),
                _ => Err(error),
            }
        }
    }
}

/// `renameat` or `linkat` from `(from_dir, from)` to `(to_dir, to)`; `unlinkat` for cleanup.
#[allow(
    unsafe_code,
    reason = "renameat, linkat and unlinkat have no safe wrapper in std"
)]
mod at {
    use std::ffi::CString;
    use std::io;
    use std::os::fd::RawFd;

    fn check(done: libc::c_int) -> io::Result<()> {
        match done {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    pub(super) fn rename(
        from_dir: RawFd,
        from: &CString,
        to_dir: RawFd,
        to: &CString,
    ) -> io::Result<()> {
        // SAFETY: both names are NUL-terminated and outlive the call; both dirs are open.
        check(unsafe { libc::renameat(from_dir, from.as_ptr(), to_dir, to.as_ptr()) })
    }

    pub(super) fn link(
        from_dir: RawFd,
        from: &CString,
        to_dir: RawFd,
        to: &CString,
    ) -> io::Result<()> {
        // SAFETY: both names are NUL-terminated and outlive the call; both dirs are open.
        check(unsafe { libc::linkat(from_dir, from.as_ptr(), to_dir, to.as_ptr(), 0) })
    }

    pub(super) fn unlink(dir: RawFd, name: &CString, flags: libc::c_int) -> io::Result<()> {
        // SAFETY: the name is NUL-terminated and outlives the call; the dir is open.
        check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) })
    }
}

/// Publishes `content` at `key` (a real path: absolute, no link in it) atomically, refusing a
/// symbolic link anywhere on the way: the content is staged in a private directory inside the
/// target's directory handle and renamed (or, create-only, linked) into place there.
pub(crate) fn publish_no_symlinks(
    key: &Path,
    content: &[u8],
    mode: Option<u32>,
    create_only: bool,
) -> Result<(), PublishError> {
    if !key.is_absolute() {
        return Err(PublishError::Io(swapped(key)));
    }
    let (Some(parent), Some(name)) = (key.parent(), key.file_name()) else {
        return Err(PublishError::NotRegularFile);
    };
    let dir = open_dir_creating(parent, key).map_err(PublishError::Io)?;
    let target = c_name(name).map_err(PublishError::Io)?;
    let short: String = name.to_string_lossy().chars().take(32).collect();
    let unique = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
    let staging = c_name(OsStr::new(&format!(
        ".{short}.{}.{unique}.tmpdir",
        std::process::id()
    )))
    .map_err(PublishError::Io)?;
    make_dir_at(dir.as_raw_fd(), &staging, 0o700).map_err(PublishError::Io)?;
    let result = open_dir_at(dir.as_raw_fd(), &staging)
        .map_err(PublishError::Io)
        .and_then(|stage| {
            let temp = c_name(OsStr::new("staged.tmp")).map_err(PublishError::Io)?;
            let published =
                stage_and_publish(&dir, &stage, &temp, &target, content, mode, create_only);
            let _ = at::unlink(stage.as_raw_fd(), &temp, 0);
            published
        });
    let _ = at::unlink(dir.as_raw_fd(), &staging, libc::AT_REMOVEDIR);
    result
}

fn stage_and_publish(
    dir: &OwnedFd,
    stage: &OwnedFd,
    temp: &CString,
    target: &CString,
    content: &[u8],
    mode: Option<u32>,
    create_only: bool,
) -> Result<(), PublishError> {
    let mut file = create_file_at(stage.as_raw_fd(), temp).map_err(PublishError::Io)?;
    file.write_all(content).map_err(PublishError::Io)?;
    file.sync_all().map_err(PublishError::Io)?;
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(PublishError::Io)?;
    }
    drop(file);
    let existing = kind_at(dir.as_raw_fd(), target).map_err(PublishError::Io)?;
    if existing.is_some_and(|kind| kind != libc::S_IFREG) {
        return Err(PublishError::NotRegularFile);
    }
    if !create_only {
        return at::rename(stage.as_raw_fd(), temp, dir.as_raw_fd(), target)
            .map_err(PublishError::Io);
    }
    match at::link(stage.as_raw_fd(), temp, dir.as_raw_fd(), target) {
        Ok(()) => Ok(()),
        Err(error) => match kind_at(dir.as_raw_fd(), target) {
            Ok(Some(kind)) if kind != libc::S_IFREG => Err(PublishError::NotRegularFile),
            Ok(Some(_)) => Err(PublishError::Exists),
            _ => Err(PublishError::Io(error)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dsh-strict-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn a_read_answers_where_the_file_really_was() {
        let dir = scratch("resolved");
        std::fs::create_dir_all(dir.join("real")).unwrap();
        std::fs::write(dir.join("real/f.txt"), b"0123456789").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("alias")).unwrap();
        let (bytes, real) = read_at_resolved(&dir.join("alias/f.txt"), 2, 3).unwrap();
        assert_eq!(bytes, b"234");
        assert_eq!(real, dir.join("real/f.txt"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_publication_creates_replaces_and_refuses_a_link_on_the_way() {
        let dir = scratch("publish");
        let file = dir.join("a/b/new.txt");
        publish_no_symlinks(&file, b"one", None, true).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"one");
        assert!(matches!(
            publish_no_symlinks(&file, b"two", None, true),
            Err(PublishError::Exists)
        ));
        publish_no_symlinks(&file, b"two", Some(0o640), false).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
        }
        assert!(matches!(
            publish_no_symlinks(&dir.join("a/b"), b"x", None, false),
            Err(PublishError::NotRegularFile)
        ));
        // A directory on the way that is a symbolic link: refused, nothing written there.
        let elsewhere = scratch("publish-elsewhere");
        std::os::unix::fs::symlink(&elsewhere, dir.join("link")).unwrap();
        let refused = publish_no_symlinks(&dir.join("link/planted.txt"), b"x", None, false);
        match refused {
            Err(PublishError::Io(error)) => {
                assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{error}");
                assert!(error.to_string().contains("symbolic link"), "{error}");
            }
            other => panic!("not refused: {other:?}"),
        }
        assert!(!elsewhere.join("planted.txt").exists());
        // A link as the file itself is replaced, not followed.
        std::os::unix::fs::symlink(elsewhere.join("victim.txt"), dir.join("as-file")).unwrap();
        std::fs::write(elsewhere.join("victim.txt"), b"original").unwrap();
        assert!(matches!(
            publish_no_symlinks(&dir.join("as-file"), b"x", None, false),
            Err(PublishError::NotRegularFile)
        ));
        assert_eq!(
            std::fs::read(elsewhere.join("victim.txt")).unwrap(),
            b"original"
        );
        // No staging is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.join("a/b"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["new.txt"]);
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(elsewhere);
    }

    /// `renameat2(RENAME_EXCHANGE)` of two names in `dir`.
    #[allow(unsafe_code, reason = "renameat2 has no wrapper in std")]
    fn exchange(dir: &Path, a: &str, b: &str) {
        let (a, b) = (dir.join(a), dir.join(b));
        let (a, b) = (
            c_name(a.as_os_str()).unwrap(),
            c_name(b.as_os_str()).unwrap(),
        );
        // SAFETY: both names are NUL-terminated strings that outlive the call.
        unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
    }

    /// The attack of the security review, at the filesystem's level: a directory swapped with a
    /// symbolic link to another place as fast as the kernel allows, while the same checked path
    /// is published to again and again. Nothing may ever land in the other place.
    #[test]
    fn a_directory_swapped_for_a_link_in_a_loop_never_lets_a_write_out() {
        let dir = scratch("race");
        let home = scratch("race-home");
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::os::unix::fs::symlink(&home, dir.join("swap")).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (dir, stop) = (dir.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) && swaps < 5_000_000 {
                    exchange(&dir, "d", "swap");
                    swaps += 1;
                }
                swaps
            })
        };
        let (mut written, mut refused) = (0, 0);
        for _ in 0..2000 {
            match publish_no_symlinks(&dir.join("d/planted.txt"), b"x", None, false) {
                Ok(()) => written += 1,
                Err(_) => refused += 1,
            }
            // A read tells truly where it read: the real directory is named `d` or, swapped,
            // `swap` (the home never holds the file, so a read through the link finds nothing).
            if let Ok((bytes, real)) = read_at_resolved(&dir.join("d/planted.txt"), 0, 8) {
                assert_eq!(bytes, b"x");
                assert!(
                    real == dir.join("d/planted.txt") || real == dir.join("swap/planted.txt"),
                    "{real:?}"
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(
            !home.join("planted.txt").exists(),
            "a write landed behind the link ({written} written, {refused} refused, {swaps} swaps)"
        );
        assert!(
            written > 0 && refused > 0,
            "{written} written, {refused} refused: the race did not happen"
        );
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(home);
    }
}
