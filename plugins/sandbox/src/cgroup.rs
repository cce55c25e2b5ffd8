//! A control group for every confined command of this host, where the host may make one
//! (it runs as root, and the `pids` controller is mounted, version 1 or 2): its process and
//! memory ceilings hold for root too, which the kernel exempts from `RLIMIT_NPROC`. A fork bomb
//! then meets the group's `pids.max` instead of exhausting the machine's pid table (32768 by
//! default), and a memory bomb the group's memory limit instead of the whole machine. Commands
//! join it through `dsh-sandbox-exec --join-cgroup`, before bubblewrap starts; the host itself
//! stays outside. The group is removed when the sandbox row is disposed; groups left by a host
//! that died are removed at the next start.

use std::path::{Path, PathBuf};

/// The name prefix of the groups, followed by the host's pid.
const PREFIX: &str = "dsh-sandbox-";

/// One mounted hierarchy that carries a controller.
struct Hierarchy {
    /// Where it is mounted.
    mount: PathBuf,
    /// Version 2 (one hierarchy for every controller) or 1.
    unified: bool,
}

/// The cgroup hierarchies of this host's mount table that carry `controller`.
fn hierarchies(mountinfo: &str, controller: &str) -> Vec<Hierarchy> {
    let mut found = Vec::new();
    for line in mountinfo.lines() {
        // `id parent major:minor root mountpoint options - fstype source superoptions`
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount) = left.split(' ').nth(4) else {
            continue;
        };
        let mut right = right.split(' ');
        let (fstype, _source, options) = (right.next(), right.next(), right.next().unwrap_or(""));
        match fstype {
            Some("cgroup") if options.split(',').any(|option| option == controller) => {
                found.push(Hierarchy {
                    mount: PathBuf::from(mount),
                    unified: false,
                });
            }
            Some("cgroup2") => {
                let controllers =
                    std::fs::read_to_string(Path::new(mount).join("cgroup.controllers"))
                        .unwrap_or_default();
                if controllers
                    .split_whitespace()
                    .any(|name| name == controller)
                {
                    found.push(Hierarchy {
                        mount: PathBuf::from(mount),
                        unified: true,
                    });
                }
            }
            _ => {}
        }
    }
    found
}

/// This process's group in the version-1 hierarchy of `controller` (from `/proc/self/cgroup`).
fn own_group(cgroups: &str, controller: &str) -> String {
    cgroups
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|name| name == controller)
                .then(|| path.to_owned())
        })
        .next()
        .unwrap_or_else(|| "/".to_owned())
}

/// The limits a group is made with.
pub(crate) struct Ceilings {
    pub(crate) processes: u64,
    pub(crate) memory_bytes: u64,
}

/// Whether this process runs as root.
#[allow(unsafe_code, reason = "geteuid has no safe wrapper in std")]
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid only reads the process's credentials.
    unsafe { libc::geteuid() == 0 }
}

/// Why commands get no control group here.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CgroupError {
    #[error("only root makes control groups here (the process limit holds without one)")]
    NotRoot,
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("no cgroup hierarchy carries the pids controller")]
    NoPids,
}

impl CgroupError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_owned();
        move |error| Self::Io { path, error }
    }
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    std::fs::write(path, value).map_err(CgroupError::io(path))
}

/// Makes this host's group in each hierarchy that carries `pids` (and `memory`, where it can)
/// with `ceilings`; answers the directories a command joins, or why there are none.
pub(crate) fn prepare(ceilings: &Ceilings) -> Result<Vec<PathBuf>, CgroupError> {
    if !is_root() {
        return Err(CgroupError::NotRoot);
    }
    let mountinfo = Path::new("/proc/self/mountinfo");
    let mountinfo = std::fs::read_to_string(mountinfo).map_err(CgroupError::io(mountinfo))?;
    let cgroups = Path::new("/proc/self/cgroup");
    let cgroups = std::fs::read_to_string(cgroups).map_err(CgroupError::io(cgroups))?;
    let name = format!("{PREFIX}{}", std::process::id());
    let mut joined = Vec::new();
    for (controller, limit_file, limit) in [
        ("pids", ("pids.max", "pids.max"), ceilings.processes),
        (
            "memory",
            ("memory.limit_in_bytes", "memory.max"),
            ceilings.memory_bytes,
        ),
    ] {
        let Some(hierarchy) = hierarchies(&mountinfo, controller).into_iter().next() else {
            if controller == "pids" {
                return Err(CgroupError::NoPids);
            }
            continue;
        };
        let parent = match hierarchy.unified {
            // Version 2 keeps processes out of inner groups: the group hangs from the root,
            // whose subtree gets the controller.
            true => {
                let control = hierarchy.mount.join("cgroup.subtree_control");
                let enabled = std::fs::read_to_string(&control).unwrap_or_default();
                if !enabled.split_whitespace().any(|name| name == controller) {
                    write(&control, &format!("+{controller}"))?;
                }
                hierarchy.mount.clone()
            }
            false => hierarchy
                .mount
                .join(own_group(&cgroups, controller).trim_start_matches('/')),
        };
        remove_stale(&parent);
        let group = parent.join(&name);
        if !group.is_dir() {
            std::fs::create_dir(&group).map_err(CgroupError::io(&group))?;
        }
        let file = match hierarchy.unified {
            true => limit_file.1,
            false => limit_file.0,
        };
        if limit > 0 {
            write(&group.join(file), &limit.to_string())?;
        }
        if !joined.contains(&group) {
            joined.push(group);
        }
    }
    Ok(joined)
}

/// Removes the groups of hosts that are gone (an empty group is removed with `rmdir`).
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let alive = Path::new("/proc").join(pid).exists();
        if !alive {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Removes this host's groups (once no command is left in them).
pub(crate) fn remove(groups: &[PathBuf]) {
    for group in groups {
        let _ = std::fs::remove_dir(group);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_table_and_own_groups_are_read() {
        let mountinfo = "\
30 25 0:26 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
31 25 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 25 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu";
        let pids = hierarchies(mountinfo, "pids");
        assert_eq!(pids.len(), 1);
        assert_eq!(pids[0].mount, Path::new("/sys/fs/cgroup/pids"));
        assert!(!pids[0].unified);
        assert!(hierarchies(mountinfo, "blkio").is_empty());
        let cgroups = "8:pids:/\n4:memory:/process_api/abc\n0::/";
        assert_eq!(own_group(cgroups, "memory"), "/process_api/abc");
        assert_eq!(own_group(cgroups, "pids"), "/");
        assert_eq!(own_group(cgroups, "cpu"), "/");
    }
}
