//! The step into the sandbox, `dsh-sandbox-exec`, for both backends: in front of bubblewrap it
//! joins the control groups, sets the limits and hands bubblewrap the seccomp filter; alone
//! (the Landlock fallback, for machines where bubblewrap cannot run) it also fences files
//! (read everywhere, write only under the writable roots) and TCP. The fallback's enforcement is `partial`: there is no pid or mount
//! namespace (a process can outlive its call, protected paths inside a writable root and
//! hidden files cannot be carved out), and only TCP is fenced by Landlock (the seccomp filter
//! refuses IP sockets outright when the network is off).

use dsh_protocol::{SandboxMode, SandboxPolicy};

use crate::limits::Limits;

/// The binary's file name, beside `dsh-host`.
pub(crate) const EXEC_NAME: &str = "dsh-sandbox-exec";

/// What one wrapped command asks of `dsh-sandbox-exec`.
pub(crate) struct Inner<'a> {
    pub(crate) policy: &'a SandboxPolicy,
    pub(crate) limits: &'a Limits,
    /// Set once confined, not on the wrappers' own start.
    pub(crate) env: &'a [(String, String)],
    pub(crate) program: &'a str,
    pub(crate) args: &'a [String],
}

/// The limits and the seccomp filter of `inner` as `dsh-sandbox-exec` arguments; `landlock`:
/// no network namespace stands behind the filter, so IP sockets are refused too without the
/// network.
fn confinement(inner: &Inner<'_>, landlock: bool) -> Vec<String> {
    let policy = inner.policy;
    let mut argv = inner.limits.arguments();
    argv.push("--seccomp".to_owned());
    let mut denied: Vec<&str> = Vec::new();
    // Unix sockets stay refused unless the policy allows them: a socket file's read-only mount
    // does not stop a connect to it.
    if !policy.unix_sockets {
        denied.push("unix");
    }
    if !policy.network {
        denied.push("vsock");
        if landlock {
            denied.extend(["inet", "inet6"]);
        }
    }
    for family in denied {
        argv.extend(["--deny-socket".to_owned(), family.to_owned()]);
    }
    argv
}

/// The arguments of `dsh-sandbox-exec` (after its own path) that run `inner` alone, fencing
/// files and TCP with Landlock (the fallback), after joining `cgroups`.
pub(crate) fn arguments(inner: &Inner<'_>, cgroups: &[String]) -> Vec<String> {
    let policy = inner.policy;
    let mut argv = cgroups.to_vec();
    for (name, value) in inner.env {
        argv.extend(["--env".to_owned(), name.clone(), value.clone()]);
    }
    argv.extend(confinement(inner, true));
    argv.push("--landlock".to_owned());
    if let Some(roots) = &policy.readable_roots {
        for dir in crate::bwrap::SYSTEM_DIRS
            .iter()
            .map(|dir| (*dir).to_owned())
            .chain(roots.iter().cloned())
        {
            argv.extend(["--read".to_owned(), dir]);
        }
    }
    if policy.mode == SandboxMode::WorkspaceWrite {
        for root in &policy.writable_roots {
            argv.extend(["--write".to_owned(), root.clone()]);
        }
    }
    if policy.network {
        argv.push("--network".to_owned());
    }
    argv.push("--".to_owned());
    argv.push(inner.program.to_owned());
    argv.extend(inner.args.iter().cloned());
    argv
}

/// The arguments of `dsh-sandbox-exec` that front `bwrap` (run with `bwrap_args`, which end
/// with the program) for `inner`, with `front`'s options of its own first (the control groups
/// it joins, the enclave it enters).
pub(crate) fn front_arguments(
    bwrap: &str,
    inner: &Inner<'_>,
    front: &[String],
    bwrap_args: Vec<String>,
) -> Vec<String> {
    let mut argv = vec!["--bwrap".to_owned(), bwrap.to_owned()];
    argv.extend(front.iter().cloned());
    argv.extend(confinement(inner, false));
    argv.push("--".to_owned());
    argv.extend(bwrap_args);
    argv
}

/// The arguments of the probe of bubblewrap at `bwrap`: fronted, filtered, `true` inside.
pub(crate) fn front_probe_arguments(bwrap: &str, user_namespace: bool) -> Vec<String> {
    let mut argv = vec![
        "--bwrap".to_owned(),
        bwrap.to_owned(),
        "--seccomp".to_owned(),
        "--".to_owned(),
    ];
    argv.extend(crate::bwrap::probe_arguments(user_namespace));
    argv
}

/// The Landlock probe's arguments: restrict and filter, and exit 0 when the kernel enforced it
/// all.
pub(crate) fn probe_arguments() -> Vec<String> {
    ["--landlock", "--seccomp", "--probe"]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::Enforcement;

    fn policy(network: bool) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: vec!["/w".to_owned()],
            protected: Vec::new(),
            hidden: Vec::new(),
            exposed: Vec::new(),
            readable_roots: None,
            network,
            unix_sockets: false,
            enforcement: Enforcement::Partial,
            backend: "landlock".to_owned(),
        }
    }

    #[test]
    fn the_fallback_fences_files_and_every_socket_family_the_network_would_need() {
        let policy = policy(false);
        let env = [("LD_PRELOAD".to_owned(), "x.so".to_owned())];
        let inner = Inner {
            policy: &policy,
            limits: &Limits::default(),
            env: &env,
            program: "bash",
            args: &["-c".to_owned(), "true".to_owned()],
        };
        let text = arguments(&inner, &[]).join(" ");
        assert!(text.starts_with("--env LD_PRELOAD x.so --limit "), "{text}");
        assert!(
            text.contains(
                "--seccomp --deny-socket unix --deny-socket vsock --deny-socket inet --deny-socket inet6 --landlock --write /w -- bash -c true"
            ),
            "{text}"
        );
        // In front of bubblewrap the network namespace fences IP; Unix sockets may be allowed;
        // the variables are bubblewrap's to set.
        let mut network = self::policy(true);
        network.unix_sockets = true;
        let front = front_arguments(
            "bwrap",
            &Inner {
                policy: &network,
                ..inner
            },
            &["--join-cgroup".to_owned(), "/cg".to_owned()],
            vec![
                "--unshare-pid".to_owned(),
                "--".to_owned(),
                "true".to_owned(),
            ],
        )
        .join(" ");
        assert!(
            front.starts_with("--bwrap bwrap --join-cgroup /cg --limit ")
                && front.ends_with("--seccomp -- --unshare-pid -- true"),
            "{front}"
        );
    }
}
