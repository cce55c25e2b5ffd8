//! Where a command's program is, found by the parent before the process starts (the host for
//! a plain command, the sandbox's init inside the enclave for a confined one). A bare name left
//! to `posix_spawnp` is searched in the child, one `execve` per `PATH` entry, and each failed
//! `execve` costs about 20 µs on this machine (the kernel prepares a new image before it looks
//! for the file): with the usual eight entries ahead of `/usr/bin`, a sixth of a millisecond
//! per `bash` call. Here each entry costs one `access`, and the child execs once.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use rustix::fs::{Access, access};

/// The file `program` names under `path` (a `PATH` value), as `execvp` would pick it: the
/// first entry holding an executable regular file of that name. `None` when `program` is not
/// a bare name, when nothing matches, or when an entry ahead of the match is relative (it
/// would be read from the child's directory, not the host's): the child then searches itself.
pub fn resolve(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.is_empty() || program.contains('/') {
        return None;
    }
    let path = path?;
    for dir in std::env::split_paths(path) {
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join(program);
        if executable_file(&candidate) {
            return Some(candidate);
        }
    }
    None
}

/// The `PATH` a new process searches: the last `PATH` among its own variables `env` (a later one
/// wins), else the parent's own where the process inherits it.
pub fn search_path<'a>(
    env: impl DoubleEndedIterator<Item = (&'a str, &'a str)>,
    inherits_parents: bool,
) -> Option<OsString> {
    env.rev()
        .find(|(name, _)| *name == "PATH")
        .map(|(_, value)| value.into())
        .or_else(|| inherits_parents.then(|| std::env::var_os("PATH")).flatten())
}

/// Whether `path` is a regular file this process may execute.
fn executable_file(path: &Path) -> bool {
    access(path, Access::EXEC_OK).is_ok()
        && std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dsh-program-path-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn file(dir: &Path, name: &str, mode: u32) {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_first_executable_file_on_the_path_wins() {
        let root = dir("first");
        let (empty, plain, exec, later) = (
            root.join("a"),
            root.join("b"),
            root.join("c"),
            root.join("d"),
        );
        for dir in [&empty, &plain, &exec, &later] {
            std::fs::create_dir_all(dir).unwrap();
        }
        file(&plain, "tool", 0o644);
        std::fs::create_dir_all(exec.join("sub")).unwrap();
        file(&exec, "tool", 0o755);
        file(&later, "tool", 0o755);
        let path = std::env::join_paths([&empty, &plain, &exec, &later]).unwrap();
        assert_eq!(resolve("tool", Some(&path)), Some(exec.join("tool")));
        // A directory of that name is skipped, as execvp skips it.
        assert_eq!(resolve("sub", Some(&path)), None);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn names_with_a_slash_relative_entries_and_misses_are_left_to_the_child() {
        let root = dir("left");
        file(&root, "tool", 0o755);
        let absolute = std::env::join_paths([&root]).unwrap();
        assert_eq!(resolve("./tool", Some(&absolute)), None);
        assert_eq!(resolve("/bin/sh", Some(&absolute)), None);
        assert_eq!(resolve("missing", Some(&absolute)), None);
        assert_eq!(resolve("tool", None), None);
        let relative = std::env::join_paths([Path::new("rel"), root.as_path()]).unwrap();
        assert_eq!(resolve("tool", Some(&relative)), None);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn the_processs_own_path_wins_and_the_parents_only_when_inherited() {
        let env = [("PATH", "/first"), ("HOME", "/h"), ("PATH", "/last")];
        assert_eq!(
            search_path(env.iter().copied(), false),
            Some(OsString::from("/last"))
        );
        assert_eq!(search_path([("HOME", "/h")].into_iter(), false), None);
        assert_eq!(
            search_path([("HOME", "/h")].into_iter(), true),
            std::env::var_os("PATH")
        );
    }
}
