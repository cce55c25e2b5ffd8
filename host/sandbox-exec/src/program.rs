//! The command that runs a confined program, its file found here (inside the sandbox's view of
//! the file system, after confinement) rather than by `execvp` in the child, which tries one
//! `execve` per `PATH` entry (see `dsh_launcher::resolve_program`).

use std::process::Command;

/// Where the environment of the new process comes from besides `env`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base {
    /// This process's own environment, `env` on top.
    Inherited,
    /// Nothing but `env`.
    Cleared,
}

/// `name` with `args`, its environment `env` over `base`; `argv[0]` stays `name`.
pub(crate) fn command(
    name: &str,
    args: &[String],
    env: &[(String, String)],
    base: Base,
) -> Command {
    let search = dsh_launcher::search_path(
        env.iter()
            .map(|(key, value)| (key.as_str(), value.as_str())),
        base == Base::Inherited,
    );
    let mut command = match dsh_launcher::resolve_program(name, search.as_deref()) {
        Some(found) => Command::new(found),
        None => Command::new(name),
    };
    std::os::unix::process::CommandExt::arg0(&mut command, name);
    if base == Base::Cleared {
        command.env_clear();
    }
    command
        .args(args)
        .envs(env.iter().map(|(key, value)| (key, value)));
    command
}
