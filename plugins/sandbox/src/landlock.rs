//! The Landlock backend, for machines where bubblewrap cannot run: the host's own
//! `dsh-host sandbox-exec` restricts itself and then runs the command. Files are fenced
//! (read everywhere, write only under the writable roots) and TCP too (no bind or connect
//! unless the network is allowed), so its enforcement is `partial`: there is no pid namespace
//! (a process can outlive its call), protected paths inside a writable root and hidden files
//! cannot be carved out, and only TCP is fenced.

use dsh_protocol::{SandboxMode, SandboxPolicy};

/// The `sandbox-exec` arguments that run `program args` under `policy`, with `env` set by
/// `sandbox-exec` once it is restricted (`--env NAME VALUE`), not on its own start.
pub(crate) fn arguments(
    policy: &SandboxPolicy,
    env: &[(String, String)],
    program: &str,
    args: &[String],
) -> Vec<String> {
    let mut argv = vec!["sandbox-exec".to_owned()];
    for (name, value) in env {
        argv.extend(["--env".to_owned(), name.clone(), value.clone()]);
    }
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
    argv.push(program.to_owned());
    argv.extend(args.iter().cloned());
    argv
}

/// The probe's arguments: restrict, and exit 0 when the kernel enforced it all.
pub(crate) fn probe_arguments() -> Vec<String> {
    vec!["sandbox-exec".to_owned(), "--probe".to_owned()]
}
