//! `--serve`: the sandbox's launcher. The host starts it once, with the control groups every
//! confined command joins; it joins them itself, so each child it forks is already a member
//! (joining the memory group is a third of a millisecond on cgroup v1, paid once instead of
//! per command), and runs each request's arguments exactly as a command line of its own
//! (`run_request`). A child takes everything else (limits, enclave, bubblewrap, Landlock,
//! seccomp) from its request, as the program started per command does; only the enclave's
//! namespaces come opened from the launcher (see [`Opened`]), and the next command of an
//! enclave finds its front made ahead (see `spare`).

use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
use std::rc::Rc;

use dsh_launcher::SOCKET_FD;

use crate::args::{EnclaveRef, Request, UsageError};
use crate::enclave::Namespaces;
use crate::spare::{self, Spare};

/// A `--serve` command line this program does not take.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum ServeUsage {
    #[error("--join-cgroup needs a directory")]
    NoDirectory,
    #[error("--serve takes only --join-cgroup, not `{0}`")]
    Unknown(String),
}

/// The launcher's command line after `--serve`: `--join-cgroup DIR` pairs.
fn groups(args: &[String]) -> Result<Vec<String>, ServeUsage> {
    let mut groups = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match (arg.as_str(), rest.next()) {
            ("--join-cgroup", Some(dir)) => groups.push(dir.clone()),
            ("--join-cgroup", None) => return Err(ServeUsage::NoDirectory),
            (other, _) => return Err(ServeUsage::Unknown(other.to_owned())),
        }
    }
    Ok(groups)
}

/// Whether descriptor 3 is a socket (the launcher's request socket, as the host starts it).
#[allow(unsafe_code, reason = "fstat on a raw descriptor number")]
fn socket_given() -> bool {
    // SAFETY: `stat` is plain data the call fills; a closed descriptor answers EBADF.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(SOCKET_FD, &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFSOCK
    }
}

/// Runs the launcher; answers its exit code.
#[allow(
    unsafe_code,
    reason = "taking descriptor 3, which the host opened for this process"
)]
pub(crate) fn run(args: &[String]) -> i32 {
    let joined = match groups(args) {
        Ok(groups) => groups,
        Err(problem) => {
            eprintln!("dsh-sandbox-exec: {problem}");
            return 2;
        }
    };
    if !socket_given() {
        eprintln!("dsh-sandbox-exec: --serve needs its request socket on descriptor {SOCKET_FD}");
        return 2;
    }
    for dir in &joined {
        let procs = std::path::Path::new(dir).join("cgroup.procs");
        if let Err(error) = std::fs::write(procs, "0") {
            eprintln!("dsh-sandbox-exec: control group {dir}: {error}");
            return 126;
        }
    }
    // SAFETY: descriptor 3 is the socket checked above, owned by nothing else in this process.
    let socket = unsafe { OwnedFd::from_raw_fd(SOCKET_FD) };
    dsh_launcher::serve(
        socket,
        Served {
            joined,
            opened: Opened::default(),
            spare: None,
            next: None,
        },
    )
}

/// A request read in the launcher.
struct Read {
    request: Request,
    /// Its enclave's namespaces, where the launcher has them open.
    namespaces: Option<Rc<Namespaces>>,
    /// What a spare that serves it is made for (see `spare::key`), where one can.
    spare_key: Option<String>,
}

type Prepared = Result<Read, UsageError>;

/// The launcher's program: each request's arguments run as `dsh-sandbox-exec`'s own command
/// line would, its enclave's namespaces kept open, the next command's front made ahead.
struct Served {
    /// The control groups the launcher joined (its children are members).
    joined: Vec<String>,
    opened: Opened,
    spare: Option<Spare>,
    /// What the spare for the next command is to be made for, once no command runs.
    next: Option<(String, Request, Rc<Namespaces>)>,
}

impl dsh_launcher::Program for Served {
    type Prepared = Prepared;

    fn prepare(&mut self, args: Vec<String>) -> Prepared {
        let mut request = crate::args::parse(&args)?;
        request.cgroups.retain(|dir| !self.joined.contains(dir));
        let namespaces = request
            .enclave
            .as_ref()
            .and_then(|enclave| self.opened.get(enclave));
        let spare_key = namespaces.as_ref().and_then(|_| spare::key(&request));
        Ok(Read {
            request,
            namespaces,
            spare_key,
        })
    }

    fn hand_over(
        &mut self,
        prepared: &Prepared,
        _cwd: &str,
        env: &[(String, String)],
        stdio: [OwnedFd; 3],
        status_pipe: BorrowedFd<'_>,
        announce: &mut dyn FnMut(libc::pid_t),
    ) -> Result<libc::pid_t, [OwnedFd; 3]> {
        let Some(spare) = self.spare.take() else {
            return Err(stdio);
        };
        match prepared {
            Ok(Read {
                request,
                spare_key: Some(key),
                ..
            }) => spare.hand_over(key, request, env, stdio, status_pipe, announce),
            _ => {
                spare.end();
                Err(stdio)
            }
        }
    }

    fn run(&self, prepared: &Prepared, status_pipe: BorrowedFd<'_>) -> i32 {
        match prepared {
            Ok(read) => {
                crate::run_request(&read.request, read.namespaces.as_deref(), Some(status_pipe))
            }
            Err(problem) => {
                eprintln!("dsh-sandbox-exec: {problem}");
                2
            }
        }
    }

    fn started(&mut self, prepared: &Prepared) {
        self.next = prepared.as_ref().ok().and_then(|read| {
            Some((
                read.spare_key.clone()?,
                read.request.clone(),
                read.namespaces.clone()?,
            ))
        });
    }

    fn settled(&mut self, forker: &mut dsh_launcher::Forker<'_>) {
        if self.spare.is_some() {
            return;
        }
        if let Some((key, request, namespaces)) = self.next.take() {
            self.spare = Spare::start(key, &request, &namespaces, forker);
        }
    }

    fn ended(&mut self, pid: libc::pid_t) {
        if self.spare.as_ref().is_some_and(|spare| spare.pid() == pid) {
            self.spare = None;
        }
    }

    fn descriptors(&self) -> Vec<std::os::fd::RawFd> {
        self.spare.iter().map(Spare::socket_fd).collect()
    }
}

/// Enclaves kept open at once; the least recently used goes first.
const KEPT_OPEN: usize = 16;

/// The namespaces of the enclaves this launcher's commands entered, kept open so that the next
/// command skips finding the holder and opening them (a dozen reads of `/proc`). An entry is
/// used only while its bubblewrap still runs (the same pid and start time); otherwise it is
/// dropped and the enclave looked up again, as a command started on its own would.
#[derive(Default)]
struct Opened {
    kept: Vec<((u32, u64), Rc<Namespaces>)>,
}

impl Opened {
    /// `enclave`'s namespaces; `None` when they cannot be opened now (the command then opens
    /// them itself, waiting for a new enclave's holder in its own process, or finds it cannot
    /// and starts bubblewrap).
    fn get(&mut self, enclave: &EnclaveRef) -> Option<Rc<Namespaces>> {
        let key = (enclave.pid, enclave.start);
        let alive = |(pid, start): (u32, u64)| crate::enclave::start_time(pid) == Some(start);
        if let Some(at) = self.kept.iter().position(|(kept, _)| *kept == key) {
            let entry = self.kept.remove(at);
            if alive(key) {
                let namespaces = entry.1.clone();
                self.kept.push(entry);
                return Some(namespaces);
            }
        }
        let namespaces = Rc::new(crate::enclave::open_ready(enclave).ok()?);
        self.kept.retain(|(kept, _)| alive(*kept));
        if self.kept.len() >= KEPT_OPEN {
            self.kept.remove(0);
        }
        self.kept.push((key, namespaces.clone()));
        Some(namespaces)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launchers_command_line_takes_control_groups_only() {
        let args = |list: &[&str]| list.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            groups(&args(&["--join-cgroup", "/a", "--join-cgroup", "/b"])),
            Ok(vec!["/a".to_owned(), "/b".to_owned()])
        );
        assert!(groups(&args(&["--join-cgroup"])).is_err());
        assert!(groups(&args(&["--seccomp"])).is_err());
    }
}
