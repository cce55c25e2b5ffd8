//! `dsh-sandbox-exec`: the step into the sandbox, run as the confined command's own process
//! before it becomes the command. In front of bubblewrap (`--bwrap`), it joins the host's
//! control groups for commands, sets the resource limits and becomes bubblewrap, handing it
//! the seccomp filter to install last (see `front`). Where bubblewrap cannot run, it is the
//! whole sandbox (with Landlock fencing files and TCP): in that order it joins the control
//! groups, sets the resource limits, restricts
//! itself with Landlock when asked, sets `no_new_privs`, installs the seccomp filter, and
//! replaces itself with the program, which inherits all of it with every process it starts.
//! The `--env` variables are set for the program only then, so a requested `LD_PRELOAD`
//! never acts on anything before it is confined.
//!
//! With `--enclave`, the program (the last N arguments) runs in the namespaces of a session's
//! running bubblewrap instead, when they can be used (see `enclave`); otherwise bubblewrap
//! runs as without it.
//!
//! With `--serve`, it is the sandbox's launcher (`dsh-launcher`): started once by the host with
//! its request socket on descriptor 3, it joins the control groups once and then runs each
//! request in a fork of itself as it would run the same arguments given on its command line,
//! minus the exec (see `serve`).
//!
//! It is a binary of its own, not a subcommand of `dsh-host`, because it runs once per
//! command: a small program starts in a fraction of the host's start-up time. Anything it
//! cannot enforce ends it with exit 126 and the reason on stderr; it never runs the program
//! less confined than it was asked to.
//!
//! ```text
//! dsh-sandbox-exec [--join-cgroup DIR].. [--env NAME VALUE].. [--limit NAME=VALUE].. [--seccomp]
//!                  [--deny-socket unix|inet|inet6|vsock]..
//!                  [--landlock [--read DIR].. [--write DIR].. [--network]]
//!                  (--probe | -- PROGRAM [ARGS..])
//! dsh-sandbox-exec --bwrap BWRAP [--join-cgroup DIR].. [--limit NAME=VALUE]..
//!                  [--seccomp [--deny-socket FAMILY]..]
//!                  [--enclave PID:START:N --chdir DIR [--env NAME VALUE]..]
//!                  -- BWRAP-ARGS.. -- PROGRAM [ARGS..]
//! dsh-sandbox-exec --serve [--join-cgroup DIR]..      (requests on descriptor 3)
//! ```

mod args;
mod enclave;
mod fence;
mod front;
mod limits;
mod program;
mod seccomp;
mod seccomp_prefix;
mod serve;
mod spare;

use std::os::unix::process::CommandExt;

use args::Request;

/// What ends the run before the program starts: the reason goes to stderr.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("{0}")]
    Usage(args::UsageError),
    #[error("control group {dir}: {error}")]
    Cgroup { dir: String, error: std::io::Error },
    #[error("resource limit {name}: {error}")]
    Limit {
        name: &'static str,
        error: std::io::Error,
    },
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("Landlock is not fully enforced here ({0})")]
    LandlockPartial(String),
    #[error("no_new_privs: {0}")]
    NoNewPrivs(std::io::Error),
    #[error("seccomp: {0}")]
    Seccomp(seccomp::SeccompError),
}

/// Applies everything `request` asks for to this process, in the order that keeps each step
/// able to run: limits, then Landlock, then `no_new_privs`, then seccomp (which would refuse
/// the calls the steps before it make).
fn confine(request: &Request) -> Result<(), Refusal> {
    for dir in &request.cgroups {
        // `0` is the writer itself, in both versions of the interface.
        std::fs::write(std::path::Path::new(dir).join("cgroup.procs"), "0").map_err(|error| {
            Refusal::Cgroup {
                dir: dir.clone(),
                error,
            }
        })?;
    }
    for limit in &request.limits {
        limits::apply(limit).map_err(|error| Refusal::Limit {
            name: limit.kind.name(),
            error,
        })?;
    }
    if let Some(fence) = &request.landlock {
        match fence::restrict(fence)? {
            landlock::RulesetStatus::FullyEnforced => {}
            landlock::RulesetStatus::PartiallyEnforced if !request.probe => {}
            status => return Err(Refusal::LandlockPartial(format!("{status:?}"))),
        }
    }
    if request.bwrap.is_some() {
        // Bubblewrap sets `no_new_privs` and installs the filter itself, after the setup
        // that needs what the filter refuses.
        return Ok(());
    }
    set_no_new_privs().map_err(Refusal::NoNewPrivs)?;
    if request.seccomp {
        seccomp::install(&request.denied_sockets).map_err(Refusal::Seccomp)?;
    }
    Ok(())
}

/// No program this process runs can gain privileges (setuid bits, file capabilities).
#[allow(unsafe_code, reason = "prctl has no safe wrapper in std")]
pub(crate) fn set_no_new_privs() -> std::io::Result<()> {
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS takes plain integers and touches no memory.
    let done = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    match done {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

fn run(args: &[String]) -> i32 {
    match args::parse(args) {
        Ok(request) => run_request(&request, None, None),
        Err(problem) => {
            eprintln!("dsh-sandbox-exec: {}", Refusal::Usage(problem));
            2
        }
    }
}

/// Runs `request`; `opened`, the namespaces of its enclave where the launcher has them open;
/// `status_pipe`, where the launcher's child reports the program's end as soon as it knows.
fn run_request(
    request: &Request,
    opened: Option<&enclave::Namespaces>,
    status_pipe: Option<std::os::fd::BorrowedFd<'_>>,
) -> i32 {
    if let Err(refusal) = confine(request) {
        eprintln!("dsh-sandbox-exec: {refusal}");
        return 126;
    }
    if request.probe {
        return 0;
    }
    if let Some(bwrap) = &request.bwrap {
        if let Some(enclave) = &request.enclave {
            let split = request.command.len() - enclave.program_len;
            let program = &request.command[split..];
            let outcome = match opened {
                Some(namespaces) => enclave::enter(
                    namespaces,
                    request,
                    enclave::Task::Given(program),
                    status_pipe,
                ),
                None => enclave::run(enclave, request, program, status_pipe),
            };
            match outcome {
                enclave::Outcome::Exited(code) => return code,
                enclave::Outcome::Broken(why) => {
                    eprintln!("dsh-sandbox-exec: {why}");
                    return 126;
                }
                // Bubblewrap builds the same sandbox from scratch (the program is already
                // the end of its arguments).
                enclave::Outcome::Unusable(why) => {
                    if std::env::var_os("DSH_SANDBOX_TRACE").is_some() {
                        eprintln!("dsh-sandbox-exec: not in the enclave: {why}");
                    }
                }
            }
        }
        let why = front::exec_bwrap(
            bwrap,
            &request.command,
            request.seccomp,
            &request.denied_sockets,
        );
        eprintln!("dsh-sandbox-exec: {why}");
        return 126;
    }
    let Some((program, rest)) = request.command.split_first() else {
        eprintln!("dsh-sandbox-exec: no program after `--`");
        return 2;
    };
    let error = program::command(program, rest, &request.env, program::Base::Inherited).exec();
    eprintln!("dsh-sandbox-exec: cannot run `{program}`: {error}");
    127
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.split_first() {
        Some((first, rest)) if first == "--serve" => serve::run(rest),
        _ => run(&args),
    };
    std::process::exit(code);
}
