//! The bubblewrap backend: a command line that runs a process in fresh mount, pid and (unless
//! the policy allows the network) network namespaces, with `/` read-only, the writable roots
//! bound writable, protected paths bound read-only again over them, hidden files masked, and
//! the process killed with its parent. Pure argument building, plus the probe that tells
//! whether `bwrap` works on this machine.

use std::path::Path;

use dsh_protocol::{SandboxMode, SandboxPolicy};

/// What a program needs to run when reads are fenced: its binaries, libraries and the system's
/// configuration.
pub(crate) const SYSTEM_DIRS: [&str; 7] =
    ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt"];

/// What confines one process, besides its policy.
pub(crate) struct Mounts<'a> {
    /// Bound read-only over the writable roots (the dsh home), unless a writable root lies
    /// inside one (then that root is bound writable again on top).
    pub(crate) protected: &'a [String],
    /// Masked: a file by an empty one, a directory by an empty tmpfs.
    pub(crate) hidden: &'a [String],
    /// A fresh, private `/tmp` instead of the host's.
    pub(crate) fresh_tmp: bool,
}

/// What runs inside.
pub(crate) struct Command<'a> {
    pub(crate) cwd: &'a str,
    /// Set by bwrap inside the sandbox (`--setenv`), after its own start: bwrap's environment
    /// is not where a requested variable belongs.
    pub(crate) env: &'a [(String, String)],
    pub(crate) program: &'a str,
    pub(crate) args: &'a [String],
}

/// The `bwrap` arguments that run `command` under `policy`.
pub(crate) fn arguments(
    policy: &SandboxPolicy,
    mounts: &Mounts<'_>,
    command: &Command<'_>,
) -> Vec<String> {
    let mut argv: Vec<String> = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let bind = |argv: &mut Vec<String>, kind: &str, path: &str| {
        argv.extend([kind.to_owned(), path.to_owned(), path.to_owned()]);
    };
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
        bind(&mut argv, "--bind", root);
    }
    // Read-only still sees its workspace, which the private /tmp may have covered.
    if policy.mode == SandboxMode::ReadOnly && private_tmp {
        for root in policy
            .writable_roots
            .iter()
            .filter(|root| root.as_str() != "/tmp" && Path::new(root.as_str()).starts_with("/tmp"))
            .filter(|root| Path::new(root.as_str()).is_dir())
        {
            bind(&mut argv, "--ro-bind", root);
        }
    }
    for protected in mounts.protected {
        if Path::new(protected).exists() {
            bind(&mut argv, "--ro-bind", protected);
            // A writable root inside the protected path (a session working in the dsh home)
            // stays writable.
            for root in writable
                .iter()
                .filter(|root| Path::new(root.as_str()).starts_with(protected))
            {
                bind(&mut argv, "--bind", root);
            }
        }
    }
    for hidden in mounts.hidden {
        let path = Path::new(hidden);
        if path.is_dir() {
            argv.extend(["--tmpfs".to_owned(), hidden.clone()]);
        } else if path.exists() {
            argv.extend([
                "--ro-bind".to_owned(),
                "/dev/null".to_owned(),
                hidden.clone(),
            ]);
        }
    }
    if !policy.network {
        argv.push("--unshare-net".to_owned());
    }
    for (name, value) in command.env {
        argv.extend(["--setenv".to_owned(), name.clone(), value.clone()]);
    }
    argv.extend([
        "--chdir".to_owned(),
        command.cwd.to_owned(),
        "--".to_owned(),
    ]);
    argv.push(command.program.to_owned());
    argv.extend(command.args.iter().cloned());
    argv
}

/// The arguments of the probe: the same namespaces around `true`.
pub(crate) fn probe_arguments() -> Vec<String> {
    [
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
    .map(|arg| (*arg).to_owned())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::Enforcement;

    fn policy(mode: SandboxMode, roots: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            writable_roots: roots.iter().map(|root| (*root).to_owned()).collect(),
            protected: Vec::new(),
            hidden: Vec::new(),
            readable_roots: None,
            network: false,
            enforcement: Enforcement::Full,
            backend: "bwrap".to_owned(),
        }
    }

    fn run<'a>(cwd: &'a str, program: &'a str, args: &'a [String]) -> Command<'a> {
        Command {
            cwd,
            env: &[],
            program,
            args,
        }
    }

    fn none<'a>() -> Mounts<'a> {
        Mounts {
            protected: &[],
            hidden: &[],
            fresh_tmp: false,
        }
    }

    #[test]
    fn workspace_write_binds_its_roots_writable_after_a_read_only_root() {
        let argv = arguments(
            &policy(SandboxMode::WorkspaceWrite, &["/tmp"]),
            &none(),
            &run("/tmp", "bash", &["-c".to_owned(), "true".to_owned()]),
        );
        let text = argv.join(" ");
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
    fn read_only_binds_nothing_writable_and_gets_a_private_tmp() {
        let argv = arguments(
            &policy(SandboxMode::ReadOnly, &["/tmp"]),
            &none(),
            &run("/", "true", &[]),
        );
        let text = argv.join(" ");
        assert!(!text.contains("--bind "), "{text}");
        assert!(text.contains("--tmpfs /tmp"), "{text}");
    }

    #[test]
    fn a_protected_path_is_bound_read_only_over_a_writable_root() {
        let protected = ["/tmp".to_owned()];
        let mounts = Mounts {
            protected: &protected,
            hidden: &[],
            fresh_tmp: false,
        };
        let argv = arguments(
            &policy(SandboxMode::WorkspaceWrite, &["/tmp"]),
            &mounts,
            &run("/tmp", "true", &[]),
        );
        let text = argv.join(" ");
        // Bound writable, read-only on top, and writable again since the root lies inside.
        assert!(
            text.contains("--bind /tmp /tmp --ro-bind /tmp /tmp --bind /tmp /tmp"),
            "{text}"
        );
    }

    #[test]
    fn requested_variables_are_set_inside_not_on_bwrap() {
        let env = [("LD_PRELOAD".to_owned(), "./x.so".to_owned())];
        let command = Command {
            env: &env,
            ..run("/tmp", "true", &[])
        };
        let text =
            arguments(&policy(SandboxMode::WorkspaceWrite, &[]), &none(), &command).join(" ");
        assert!(
            text.ends_with("--setenv LD_PRELOAD ./x.so --chdir /tmp -- true"),
            "{text}"
        );
    }

    #[test]
    fn fenced_reads_bind_the_program_directories_and_not_the_root() {
        let mut fenced = policy(SandboxMode::WorkspaceWrite, &["/tmp"]);
        fenced.readable_roots = Some(Vec::new());
        let text = arguments(&fenced, &none(), &run("/tmp", "true", &[])).join(" ");
        assert!(!text.contains("--ro-bind / /"), "{text}");
        assert!(
            text.contains("--ro-bind /usr /usr") && text.contains("--bind /tmp /tmp"),
            "{text}"
        );
    }
}
