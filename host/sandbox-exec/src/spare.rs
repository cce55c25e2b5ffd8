//! Spares: once a command in an enclave has ended, the launcher starts the front of the next
//! one ahead of time, while the model is still thinking. The spare enters the enclave, makes its
//! pid, mount and IPC namespaces, mounts its `/proc`, drops every capability and installs the
//! filter, exactly as a command's front and init do; then its init waits. When the next request
//! for the same enclave under the same limits and filter comes, the launcher sends it the
//! program, its directory, its environment and its three streams, and the init starts it.
//! Everything a command gets it still gets, and a spare serves one command only; what is saved
//! is the wait for all of it (most of confining a command), which a spare did before it was
//! needed. A request the spare does not fit ends the spare; so does the end of its enclave or
//! of the launcher.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::rc::Rc;

use crate::args::Request;
use crate::enclave::{Namespaces, Outcome, Task};

/// The second message of a hand-over, which carries the status pipe.
const STATUS_MESSAGE: &[u8] = b"status";

/// A spare front, waiting for its request.
pub(crate) struct Spare {
    /// What a request must match to be handed over (see [`key`]).
    key: String,
    pid: libc::pid_t,
    /// The launcher's end of the socket the spare's init reads its request from.
    socket: OwnedFd,
}

/// What a spare was made for: the enclave, the limits, the filter, the control groups left to
/// join. `None` for a request no spare serves (not an enclave's).
pub(crate) fn key(request: &Request) -> Option<String> {
    let enclave = request.enclave.as_ref()?;
    if request.landlock.is_some() || request.probe || request.bwrap.is_none() {
        return None;
    }
    Some(format!(
        "{}:{} {:?} {} {:?} {:?} {:?}",
        enclave.pid,
        enclave.start,
        request.limits,
        request.seccomp,
        request.denied_sockets,
        request.cgroups,
        request.bwrap
    ))
}

impl Spare {
    /// Starts a spare for requests like `request` in the enclave of `namespaces`.
    pub(crate) fn start(
        key: String,
        request: &Request,
        namespaces: &Rc<Namespaces>,
        forker: &mut dsh_launcher::Forker<'_>,
    ) -> Option<Self> {
        let (ours, theirs) = dsh_launcher::socket_pair().ok()?;
        let ours_fd = ours.as_raw_fd();
        let pid = forker
            .fork(|| {
                #[allow(unsafe_code, reason = "close(2) of the launcher's end in the child")]
                // SAFETY: the descriptor is this child's copy, closed once and not used after.
                unsafe {
                    libc::close(ours_fd);
                }
                front(request, namespaces, &theirs)
            })
            .ok()?;
        drop(theirs);
        Some(Self {
            key,
            pid,
            socket: ours,
        })
    }

    pub(crate) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    pub(crate) fn socket_fd(&self) -> std::os::fd::RawFd {
        self.socket.as_raw_fd()
    }

    /// Hands `request` over (its program, directory and environment after `env`, and
    /// `stdio`) when the spare was made for it, `announce`s the spare's pid, then hands over
    /// `status_pipe`; otherwise the spare ends, and `stdio` comes back.
    pub(crate) fn hand_over(
        self,
        key: &str,
        request: &Request,
        env: &[(String, String)],
        stdio: [OwnedFd; 3],
        status_pipe: BorrowedFd<'_>,
        announce: &mut dyn FnMut(libc::pid_t),
    ) -> Result<libc::pid_t, [OwnedFd; 3]> {
        let Some(enclave) = request.enclave.as_ref().filter(|_| self.key == key) else {
            self.end();
            return Err(stdio);
        };
        let split = request.command.len() - enclave.program_len;
        let mut whole_env = env.to_vec();
        whole_env.extend(request.env.iter().cloned());
        let message = dsh_launcher::Request {
            cwd: request.chdir.clone().unwrap_or_else(|| "/".to_owned()),
            args: request.command[split..].to_vec(),
            env: whole_env,
        };
        let sent = message.encode().ok().and_then(|bytes| {
            let fds = [stdio[0].as_fd(), stdio[1].as_fd(), stdio[2].as_fd()];
            dsh_launcher::send(self.socket.as_fd(), &bytes, &fds).ok()
        });
        match sent {
            Some(()) => {
                announce(self.pid);
                // Its init starts the program once it has the pipe (or once this end closes).
                let _ = dsh_launcher::send(self.socket.as_fd(), STATUS_MESSAGE, &[status_pipe]);
                Ok(self.pid)
            }
            None => {
                self.end();
                Err(stdio)
            }
        }
    }

    /// Ends the spare (its group: the front and, by its parent death signal, the init).
    pub(crate) fn end(self) {
        #[allow(unsafe_code, reason = "kill(2) of a process group this launcher made")]
        // SAFETY: plain integers; the group is the spare's own (reaped later by the launcher).
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
    }
}

/// The spare's front: the limits, then the enclave with an init that waits for its request.
fn front(request: &Request, namespaces: &Namespaces, socket: &OwnedFd) -> i32 {
    if let Err(refusal) = crate::confine(request) {
        eprintln!("dsh-sandbox-exec: spare: {refusal}");
        return 126;
    }
    match crate::enclave::enter(namespaces, request, Task::Awaited(socket), None) {
        Outcome::Exited(code) => code,
        Outcome::Unusable(why) | Outcome::Broken(why) => {
            eprintln!("dsh-sandbox-exec: spare: {why}");
            126
        }
    }
}

/// In a spare's init, confined: the request the launcher sends, its streams put in place and
/// its directory entered; the program to start, and the status pipe where its end is told
/// (the second message; none when the launcher closed its end instead). `Err` is the init's
/// exit code.
pub(crate) fn awaited(socket: &OwnedFd) -> Result<(std::process::Command, Option<OwnedFd>), i32> {
    let (bytes, fds) = match dsh_launcher::receive(socket.as_fd(), 3) {
        Ok(Some(message)) => message,
        // The launcher let the spare go unused.
        Ok(None) => return Err(0),
        Err(error) => {
            eprintln!("dsh-sandbox-exec: spare: {error}");
            return Err(126);
        }
    };
    let request = match dsh_launcher::Request::decode(&bytes) {
        Ok(request) => request,
        Err(error) => {
            eprintln!("dsh-sandbox-exec: spare: {error}");
            return Err(126);
        }
    };
    for (fd, to) in fds.iter().zip([0, 1, 2]) {
        #[allow(unsafe_code, reason = "dup2(2) of the streams the request brought")]
        // SAFETY: both descriptors are this process's; the originals close when `fds` drops.
        if unsafe { libc::dup2(fd.as_raw_fd(), to) } < 0 {
            return Err(126);
        }
    }
    drop(fds);
    if let Err(error) = std::env::set_current_dir(&request.cwd) {
        eprintln!("dsh-sandbox-exec: cannot enter {}: {error}", request.cwd);
        return Err(126);
    }
    let Some((name, args)) = request.args.split_first() else {
        return Err(2);
    };
    let command = crate::program::command(name, args, &request.env, crate::program::Base::Cleared);
    let status_pipe = match dsh_launcher::receive(socket.as_fd(), 1) {
        Ok(Some((_, mut fds))) => fds.pop(),
        _ => None,
    };
    Ok((command, status_pipe))
}
