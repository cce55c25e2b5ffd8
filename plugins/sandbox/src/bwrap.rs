//! The bubblewrap backend: a command line that runs a process in a fresh user namespace with
//! every capability dropped (where the kernel lets bubblewrap make one; without it the
//! capabilities are still dropped), fresh mount, pid, ipc and uts namespaces and (unless the
//! policy allows the network) a fresh network namespace, with `/` read-only, the writable roots
//! bound writable, protected paths bound read-only again over them (and the directories between
//! them and their root bound onto themselves, so they cannot be renamed away), hidden
//! directories covered by an empty read-only tmpfs (files by an empty file), the exposed paths
//! bound read-only again inside them, and the process killed with its parent. In front of it
//! runs `dsh-sandbox-exec --bwrap`, which sets the limits and hands bubblewrap the seccomp
//! filter it installs last. Pure argument building, plus the probe that tells whether `bwrap`
//! works on this machine.

use std::path::Path;

use dsh_protocol::{SandboxMode, SandboxPolicy};

/// What a program needs to run when reads are fenced: its binaries, libraries and the system's
/// configuration.
pub(crate) const SYSTEM_DIRS: [&str; 7] =
    ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt"];

/// How bubblewrap runs here, besides the policy.
pub(crate) struct Mounts {
    /// A fresh, private `/tmp` instead of the host's.
    pub(crate) fresh_tmp: bool,
    /// Whether bubblewrap can make a user namespace here (the probe found out).
    pub(crate) user_namespace: bool,
}

/// What runs inside: the program and its arguments (`argv`), with `env` set for it alone by
/// bubblewrap (`--setenv`, applied as it starts the program: never in bubblewrap itself).
pub(crate) struct Command<'a> {
    pub(crate) cwd: &'a str,
    pub(crate) env: &'a [(String, String)],
    pub(crate) argv: &'a [String],
}

fn bind(argv: &mut Vec<String>, kind: &str, path: &str) {
    argv.extend([kind.to_owned(), path.to_owned(), path.to_owned()]);
}

/// Where `path` really is: `bwrap` resolves an absolute symbolic link met in a destination
/// against its own setup root, not the sandbox's, so a writable root that is a link (a shared
/// build directory linked into the home) is bound where it leads.
fn real(path: &str) -> String {
    std::fs::canonicalize(path).map_or_else(
        |_| path.to_owned(),
        |real| real.to_string_lossy().into_owned(),
    )
}

fn inside(path: &str, dir: &str) -> bool {
    Path::new(path).starts_with(dir)
}

/// The `bwrap` arguments that run `command` under `policy`: the [`layout`], then the
/// command's own (as the service joins them).
#[cfg(test)]
pub(crate) fn arguments(
    policy: &SandboxPolicy,
    mounts: &Mounts,
    command: &Command<'_>,
) -> Vec<String> {
    let mut argv = layout(policy, mounts);
    argv.extend(command_arguments(command));
    argv
}

/// What the command itself adds: its variables, its directory, then the program.
pub(crate) fn command_arguments(command: &Command<'_>) -> Vec<String> {
    let mut argv = Vec::new();
    for (name, value) in command.env {
        argv.extend(["--setenv".to_owned(), name.clone(), value.clone()]);
    }
    argv.extend([
        "--chdir".to_owned(),
        command.cwd.to_owned(),
        "--".to_owned(),
    ]);
    argv.extend(command.argv.iter().cloned());
    argv
}

/// The namespaces and mounts of `policy` as the filesystem stands now (which protected paths
/// exist decides what is bound): everything of the `bwrap` arguments but the command's own.
pub(crate) fn layout(policy: &SandboxPolicy, mounts: &Mounts) -> Vec<String> {
    let mut argv: Vec<String> = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    if mounts.user_namespace {
        argv.push("--unshare-user".to_owned());
    }
    argv.extend(["--cap-drop".to_owned(), "ALL".to_owned()]);
    match &policy.readable_roots {
        // Everything readable: `/` read-only.
        None => bind(&mut argv, "--ro-bind", "/"),
        // Reads fenced: the system's program directories and the readable roots, nothing else.
        Some(roots) => {
            for dir in SYSTEM_DIRS
                .iter()
                .copied()
                .chain(roots.iter().map(String::as_str))
            {
                if Path::new(dir).exists() {
                    bind(&mut argv, "--ro-bind", dir);
                }
            }
        }
    }
    argv.extend(
        ["--dev", "/dev", "--proc", "/proc"]
            .iter()
            .map(|arg| (*arg).to_owned()),
    );
    let private_tmp = mounts.fresh_tmp || policy.mode == SandboxMode::ReadOnly;
    if private_tmp {
        argv.extend(["--tmpfs".to_owned(), "/tmp".to_owned()]);
    }
    let writable: Vec<&String> = match policy.mode {
        SandboxMode::WorkspaceWrite => policy
            .writable_roots
            .iter()
            .filter(|root| Path::new(root.as_str()).is_dir())
            .filter(|root| !(private_tmp && root.as_str() == "/tmp"))
            .collect(),
        _ => Vec::new(),
    };
    for root in &writable {
        bind(&mut argv, "--bind", &real(root));
    }
    // Read-only still sees its workspace, which the private /tmp may have covered.
    if policy.mode == SandboxMode::ReadOnly && private_tmp {
        for root in policy
            .writable_roots
            .iter()
            .filter(|root| root.as_str() != "/tmp" && inside(root, "/tmp"))
            .filter(|root| Path::new(root.as_str()).is_dir())
        {
            bind(&mut argv, "--ro-bind", root);
        }
    }
    protect(&mut argv, policy, &writable);
    hide(&mut argv, policy, &writable);
    if !policy.network {
        argv.push("--unshare-net".to_owned());
    }
    argv
}

/// Protected paths that exist are bound read-only over the writable roots; the directories
/// between one and the writable root it lies in are bound onto themselves first (each once,
/// before any protected path, so no later bind covers a read-only one), which makes them mount
/// points: a command can then neither rename them away nor put another in their place (`.git`
/// around a protected `.git/hooks`). A writable root inside a protected path (a session
/// working in the dsh home) stays writable.
fn protect(argv: &mut Vec<String>, policy: &SandboxPolicy, writable: &[&String]) {
    let existing: Vec<&String> = policy
        .protected
        .iter()
        .filter(|protected| Path::new(protected.as_str()).exists())
        .collect();
    let mut pinned: Vec<String> = Vec::new();
    for protected in &existing {
        let Some(root) = writable.iter().find(|root| inside(protected, root)) else {
            continue;
        };
        let between: Vec<&Path> = Path::new(protected.as_str())
            .ancestors()
            .skip(1)
            .take_while(|dir| *dir != Path::new(root.as_str()))
            .collect();
        for dir in between.into_iter().rev() {
            let dir = dir.to_string_lossy().into_owned();
            // Only directories still writable: one inside another protected path is read-only
            // already (and binding it writable would undo that).
            let covered = existing
                .iter()
                .any(|other| other.as_str() != protected.as_str() && inside(&dir, other));
            if !covered && !pinned.contains(&dir) && Path::new(&dir).is_dir() {
                pinned.push(dir);
            }
        }
    }
    // Shallow first, so a deeper pin is not covered by a shallower one.
    pinned.sort_by_key(|dir| Path::new(dir).components().count());
    for dir in &pinned {
        bind(argv, "--bind", dir);
    }
    for protected in &existing {
        bind(argv, "--ro-bind", protected);
        for root in writable.iter().filter(|root| inside(root, protected)) {
            bind(argv, "--bind", root);
        }
    }
}

/// Hidden directories become an empty read-only tmpfs and hidden files an empty file; exposed
/// paths inside one are bound again read-only and a writable root inside one again writable
/// (before the tmpfs turns read-only, which only that mount does).
fn hide(argv: &mut Vec<String>, policy: &SandboxPolicy, writable: &[&String]) {
    for hidden in &policy.hidden {
        let path = Path::new(hidden);
        if path.is_dir() {
            argv.extend(["--tmpfs".to_owned(), hidden.clone()]);
            for exposed in policy
                .exposed
                .iter()
                .filter(|exposed| inside(exposed, hidden) && Path::new(exposed).exists())
            {
                bind(argv, "--ro-bind", exposed);
            }
            // Mount points are made in the tmpfs while it is still writable; a root that is a
            // link there becomes a directory of what it leads to.
            for root in writable.iter().filter(|root| inside(root, hidden)) {
                argv.extend(["--bind".to_owned(), real(root), (*root).clone()]);
            }
            argv.extend(["--remount-ro".to_owned(), hidden.clone()]);
        } else if path.exists() {
            argv.extend([
                "--ro-bind".to_owned(),
                "/dev/null".to_owned(),
                hidden.clone(),
            ]);
        }
    }
}

/// The arguments of the probe (after `dsh-sandbox-exec --bwrap BWRAP --seccomp --`): the same
/// namespaces around `true`, with or without a user namespace.
pub(crate) fn probe_arguments(user_namespace: bool) -> Vec<String> {
    let mut argv: Vec<String> = Vec::new();
    if user_namespace {
        argv.push("--unshare-user".to_owned());
    }
    argv.extend(
        [
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--",
            "true",
        ]
        .iter()
        .map(|arg| (*arg).to_owned()),
    );
    argv
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::Enforcement;

    fn policy(mode: SandboxMode, roots: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            network: false,
            enforcement: Enforcement::Full,
            backend: "bwrap".to_owned(),
            ..SandboxPolicy::unenforced(mode, roots.iter().map(|root| (*root).to_owned()).collect())
        }
    }

    fn mounts() -> Mounts {
        Mounts {
            fresh_tmp: false,
            user_namespace: true,
        }
    }

    fn text(policy: &SandboxPolicy, cwd: &str, argv: &[&str]) -> String {
        let argv: Vec<String> = argv.iter().map(|arg| (*arg).to_owned()).collect();
        let command = Command {
            cwd,
            env: &[],
            argv: &argv,
        };
        arguments(policy, &mounts(), &command).join(" ")
    }

    #[test]
    fn every_capability_is_dropped_in_a_user_namespace() {
        let text = text(&policy(SandboxMode::WorkspaceWrite, &[]), "/", &["true"]);
        assert!(text.contains("--unshare-user --cap-drop ALL"), "{text}");
        let without = arguments(
            &policy(SandboxMode::WorkspaceWrite, &[]),
            &Mounts {
                user_namespace: false,
                ..mounts()
            },
            &Command {
                cwd: "/",
                env: &[],
                argv: &["true".to_owned()],
            },
        )
        .join(" ");
        assert!(
            !without.contains("--unshare-user") && without.contains("--cap-drop ALL"),
            "{without}"
        );
    }

    #[test]
    fn workspace_write_binds_its_roots_writable_after_a_read_only_root() {
        let text = text(
            &policy(SandboxMode::WorkspaceWrite, &["/tmp"]),
            "/tmp",
            &["bash", "-c", "true"],
        );
        assert!(
            text.contains("--ro-bind / / --dev /dev --proc /proc --bind /tmp /tmp"),
            "{text}"
        );
        assert!(
            text.ends_with("--unshare-net --chdir /tmp -- bash -c true"),
            "{text}"
        );
    }

    #[test]
    fn requested_variables_are_set_by_bwrap_for_the_program() {
        let env = [("LD_PRELOAD".to_owned(), "./x.so".to_owned())];
        let argv = ["true".to_owned()];
        let command = Command {
            cwd: "/tmp",
            env: &env,
            argv: &argv,
        };
        let text = arguments(
            &policy(SandboxMode::WorkspaceWrite, &[]),
            &mounts(),
            &command,
        )
        .join(" ");
        assert!(
            text.ends_with("--setenv LD_PRELOAD ./x.so --chdir /tmp -- true"),
            "{text}"
        );
    }

    #[test]
    fn read_only_binds_nothing_writable_and_gets_a_private_tmp() {
        let text = text(&policy(SandboxMode::ReadOnly, &["/tmp"]), "/", &["true"]);
        assert!(!text.contains("--bind "), "{text}");
        assert!(text.contains("--tmpfs /tmp"), "{text}");
    }

    #[test]
    fn a_protected_path_is_bound_read_only_and_its_parents_cannot_be_renamed() {
        let dir = std::env::temp_dir().join(format!("dsh-bwrap-protect-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
        let root = dir.display().to_string();
        std::fs::write(dir.join(".git/config"), "").unwrap();
        let hooks = dir.join(".git/hooks").display().to_string();
        let config = dir.join(".git/config").display().to_string();
        let mut protected = policy(SandboxMode::WorkspaceWrite, &[&root]);
        protected.protected = vec![
            hooks.clone(),
            config.clone(),
            dir.join(".mcp.json").display().to_string(),
        ];
        let text = text(&protected, &root, &["true"]);
        // `.git` is pinned once, before either read-only bind, which no later bind covers.
        assert!(
            text.contains(&format!(
                "--bind {root} {root} --bind {root}/.git {root}/.git --ro-bind {hooks} {hooks} --ro-bind {config} {config}"
            )),
            "{text}"
        );
        // A protected path that does not exist is not made by a mount.
        assert!(!text.contains(".mcp.json"), "{text}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_hidden_directory_is_an_empty_read_only_tmpfs_with_its_exposed_parts_and_roots_inside() {
        let dir = std::env::temp_dir().join(format!("dsh-bwrap-hide-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("home/spill")).unwrap();
        std::fs::create_dir_all(dir.join("home/demo")).unwrap();
        let home = dir.join("home").display().to_string();
        let demo = dir.join("home/demo").display().to_string();
        let spill = dir.join("home/spill").display().to_string();
        let mut hidden = policy(SandboxMode::WorkspaceWrite, &[&demo]);
        hidden.hidden = vec![home.clone()];
        hidden.exposed = vec![spill.clone(), dir.join("home/skills").display().to_string()];
        let text = text(&hidden, &demo, &["true"]);
        assert!(
            text.contains(&format!(
                "--tmpfs {home} --ro-bind {spill} {spill} --bind {demo} {demo} --remount-ro {home}"
            )),
            "{text}"
        );
        assert!(!text.contains("skills"), "{text}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn fenced_reads_bind_the_program_directories_and_not_the_root() {
        let mut fenced = policy(SandboxMode::WorkspaceWrite, &["/tmp"]);
        fenced.readable_roots = Some(Vec::new());
        let text = text(&fenced, "/tmp", &["true"]);
        assert!(!text.contains("--ro-bind / /"), "{text}");
        assert!(
            text.contains("--ro-bind /usr /usr") && text.contains("--bind /tmp /tmp"),
            "{text}"
        );
    }
}
