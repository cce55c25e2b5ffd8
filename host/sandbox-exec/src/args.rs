//! The command line, read into a [`Request`]. Every argument is the sandbox plugin's; a
//! malformed one is a usage error, never a reason to run the program with less confinement.

use crate::limits::{Limit, LimitKind};
use crate::seccomp::SocketFamily;

/// The Landlock fence of the fallback backend.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Fence {
    /// Readable directories; empty: everything is readable.
    pub(crate) readable: Vec<String>,
    pub(crate) writable: Vec<String>,
    /// TCP bind and connect allowed.
    pub(crate) network: bool,
}

/// The enclave a command runs in (`--enclave PID:START:N`): its bubblewrap's pid and start
/// time, and how many of the last arguments are the program and its arguments (the ones
/// before them are bubblewrap's, used when the enclave cannot be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnclaveRef {
    pub(crate) pid: u32,
    pub(crate) start: u64,
    pub(crate) program_len: usize,
}

/// Everything one run is asked to do.
#[derive(Debug, Default, Clone)]
pub(crate) struct Request {
    /// Set for the program after confinement, in order (a later one wins).
    pub(crate) env: Vec<(String, String)>,
    pub(crate) limits: Vec<Limit>,
    pub(crate) seccomp: bool,
    /// Socket families the filter refuses to create.
    pub(crate) denied_sockets: Vec<SocketFamily>,
    pub(crate) landlock: Option<Fence>,
    /// Control groups this process joins first (their `cgroup.procs`).
    pub(crate) cgroups: Vec<String>,
    /// Become this bubblewrap, with the seccomp filter handed to it (`--add-seccomp-fd`),
    /// instead of the program: `command` is then bubblewrap's arguments.
    pub(crate) bwrap: Option<String>,
    /// With `bwrap`: run in this enclave when it can be used (see `enclave`).
    pub(crate) enclave: Option<EnclaveRef>,
    /// The program's working directory in the enclave.
    pub(crate) chdir: Option<String>,
    pub(crate) probe: bool,
    pub(crate) command: Vec<String>,
}

/// A command line this program does not take; each message names the argument.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UsageError {
    /// An argument without the value it needs (the message says which).
    #[error("{0}")]
    Missing(&'static str),
    #[error("`{0}` is not a variable's name")]
    Name(String),
    #[error("--limit `{0}`: expected NAME=VALUE")]
    LimitShape(String),
    #[error("--limit `{0}`: expected processes, data, fsize, cpu, core or files")]
    LimitName(String),
    #[error("--limit {name}: `{number}` is not a whole number")]
    LimitValue { name: String, number: String },
    #[error("--deny-socket `{0}`: expected unix, inet, inet6 or vsock")]
    Socket(String),
    #[error("unknown argument `{0}`")]
    Unknown(String),
    #[error("--read, --write and --network belong to --landlock")]
    FenceAlone,
    #[error("--deny-socket needs --seccomp")]
    SocketAlone,
    #[error(
        "--bwrap goes without --landlock, and without --env unless --enclave (bubblewrap's own --setenv sets them)"
    )]
    BwrapWith,
    #[error("--enclave `{0}`: expected PID:START:N")]
    EnclaveShape(String),
    #[error("--enclave and --chdir need --bwrap, and N at most the arguments after `--`")]
    EnclaveAlone,
    #[error("no program after `--`")]
    NoProgram,
}

fn value<'a>(
    rest: &mut impl Iterator<Item = &'a String>,
    what: &'static str,
) -> Result<String, UsageError> {
    rest.next().cloned().ok_or(UsageError::Missing(what))
}

/// Reads `args` (everything after the program's name).
pub(crate) fn parse(args: &[String]) -> Result<Request, UsageError> {
    let mut request = Request::default();
    let mut fence = Fence::default();
    let mut landlock = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--env" => {
                let name = value(&mut rest, "--env needs a name and a value")?;
                let text = value(&mut rest, "--env needs a name and a value")?;
                if name.is_empty() || name.contains('=') || name.contains('\0') {
                    return Err(UsageError::Name(name));
                }
                request.env.push((name, text));
            }
            "--limit" => {
                let text = value(&mut rest, "--limit needs NAME=VALUE")?;
                request.limits.push(parse_limit(&text)?);
            }
            "--seccomp" => request.seccomp = true,
            "--deny-socket" => {
                let name = value(&mut rest, "--deny-socket needs a family")?;
                let family =
                    SocketFamily::parse(&name).ok_or_else(|| UsageError::Socket(name.clone()))?;
                request.denied_sockets.push(family);
            }
            "--landlock" => landlock = true,
            "--bwrap" => request.bwrap = Some(value(&mut rest, "--bwrap needs bubblewrap's path")?),
            "--enclave" => {
                let text = value(&mut rest, "--enclave needs PID:START:N")?;
                request.enclave = Some(parse_enclave(&text)?);
            }
            "--chdir" => request.chdir = Some(value(&mut rest, "--chdir needs a directory")?),
            "--join-cgroup" => request
                .cgroups
                .push(value(&mut rest, "--join-cgroup needs a directory")?),
            "--read" => fence
                .readable
                .push(value(&mut rest, "--read needs a directory")?),
            "--write" => fence
                .writable
                .push(value(&mut rest, "--write needs a directory")?),
            "--network" => fence.network = true,
            "--probe" => request.probe = true,
            "--" => {
                request.command = rest.cloned().collect();
                break;
            }
            other => return Err(UsageError::Unknown(other.to_owned())),
        }
    }
    if !landlock && (fence != Fence::default()) {
        return Err(UsageError::FenceAlone);
    }
    if landlock {
        request.landlock = Some(fence);
    }
    if !request.denied_sockets.is_empty() && !request.seccomp {
        return Err(UsageError::SocketAlone);
    }
    if request.bwrap.is_some()
        && (request.landlock.is_some() || (!request.env.is_empty() && request.enclave.is_none()))
    {
        return Err(UsageError::BwrapWith);
    }
    let enclave_fits = request.enclave.as_ref().is_none_or(|enclave| {
        enclave.program_len > 0 && enclave.program_len <= request.command.len()
    });
    if ((request.enclave.is_some() || request.chdir.is_some()) && request.bwrap.is_none())
        || (request.chdir.is_some() && request.enclave.is_none())
        || !enclave_fits
    {
        return Err(UsageError::EnclaveAlone);
    }
    if !request.probe && request.command.is_empty() {
        return Err(UsageError::NoProgram);
    }
    Ok(request)
}

fn parse_enclave(text: &str) -> Result<EnclaveRef, UsageError> {
    let shape = || UsageError::EnclaveShape(text.to_owned());
    let mut parts = text.split(':');
    let (Some(pid), Some(start), Some(program_len), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(shape());
    };
    Ok(EnclaveRef {
        pid: pid.parse().map_err(|_| shape())?,
        start: start.parse().map_err(|_| shape())?,
        program_len: program_len.parse().map_err(|_| shape())?,
    })
}

fn parse_limit(text: &str) -> Result<Limit, UsageError> {
    let (name, number) = text
        .split_once('=')
        .ok_or_else(|| UsageError::LimitShape(text.to_owned()))?;
    let kind = LimitKind::parse(name).ok_or_else(|| UsageError::LimitName(name.to_owned()))?;
    let value = number.parse::<u64>().map_err(|_| UsageError::LimitValue {
        name: name.to_owned(),
        number: number.to_owned(),
    })?;
    Ok(Limit { kind, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn variables_are_read_for_the_program_in_order() {
        let request = parse(&strings(&[
            "--env",
            "A",
            "1",
            "--env",
            "LD_PRELOAD",
            "x.so",
            "--",
            "true",
        ]))
        .unwrap();
        assert_eq!(
            request.env,
            [
                ("A".to_owned(), "1".to_owned()),
                ("LD_PRELOAD".to_owned(), "x.so".to_owned())
            ]
        );
        assert_eq!(request.command, ["true"]);
        assert!(parse(&strings(&["--env", "A"])).is_err());
        assert!(parse(&strings(&["--env", "A=B", "1", "--", "true"])).is_err());
    }

    #[test]
    fn an_enclave_is_read_with_its_directory_and_variables() {
        let request = parse(&strings(&[
            "--bwrap",
            "bwrap",
            "--enclave",
            "41:9000:2",
            "--chdir",
            "/w",
            "--env",
            "A",
            "1",
            "--",
            "--ro-bind",
            "/",
            "/",
            "--",
            "bash",
            "-c",
        ]))
        .unwrap();
        assert_eq!(
            request.enclave,
            Some(EnclaveRef {
                pid: 41,
                start: 9000,
                program_len: 2
            })
        );
        assert_eq!(request.chdir.as_deref(), Some("/w"));
        assert_eq!(request.env, [("A".to_owned(), "1".to_owned())]);
    }

    #[test]
    fn limits_sockets_and_the_fence_are_read() {
        let request = parse(&strings(&[
            "--limit",
            "processes=64",
            "--seccomp",
            "--deny-socket",
            "unix",
            "--landlock",
            "--write",
            "/w",
            "--probe",
        ]))
        .unwrap();
        assert_eq!(
            request.limits,
            [Limit {
                kind: LimitKind::Processes,
                value: 64
            }]
        );
        assert_eq!(request.denied_sockets, [SocketFamily::Unix]);
        assert_eq!(
            request.landlock,
            Some(Fence {
                writable: vec!["/w".to_owned()],
                ..Fence::default()
            })
        );
    }

    #[test]
    fn malformed_arguments_are_refused_naming_them() {
        for (args, says) in [
            (&["--limit", "processes", "--probe"][..], "NAME=VALUE"),
            (&["--limit", "stack=1", "--probe"][..], "`stack`"),
            (&["--limit", "cpu=lots", "--probe"][..], "`lots`"),
            (
                &["--seccomp", "--deny-socket", "ipx", "--probe"][..],
                "`ipx`",
            ),
            (&["--deny-socket", "unix", "--probe"][..], "needs --seccomp"),
            (&["--write", "/w", "--probe"][..], "belong to --landlock"),
            (&["--seccomp"][..], "no program"),
            (
                &["--bwrap", "bwrap", "--landlock", "--", "true"][..],
                "goes without --landlock",
            ),
            (
                &["--bwrap", "bwrap", "--env", "A", "1", "--", "true"][..],
                "goes without --landlock",
            ),
            (
                &["--bwrap", "b", "--enclave", "12:34", "--", "true"][..],
                "PID:START:N",
            ),
            (
                &["--bwrap", "b", "--enclave", "12:34:2", "--", "true"][..],
                "N at most",
            ),
            (&["--enclave", "12:34:1", "--", "true"][..], "need --bwrap"),
            (
                &["--bwrap", "b", "--chdir", "/w", "--", "true"][..],
                "need --bwrap",
            ),
        ] {
            let problem = parse(&strings(args)).unwrap_err().to_string();
            assert!(problem.contains(says), "{args:?}: {problem}");
        }
    }
}
