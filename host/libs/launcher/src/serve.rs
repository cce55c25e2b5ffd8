//! The launcher's loop: one thread waiting on the request socket and on its children's ends
//! (a `signalfd` of `SIGCHLD`), so each fork happens in a process with no other thread (no lock
//! another thread could hold is copied into the child taken).

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::{DESCRIPTORS, Request, STATUS, STDERR, STDIN, STDOUT, Status, receive};

fn check(result: libc::c_int) -> std::io::Result<libc::c_int> {
    match result {
        -1 => Err(std::io::Error::last_os_error()),
        done => Ok(done),
    }
}

/// Writes `status` on a status pipe; a reader that went away is no concern of the launcher's.
#[allow(unsafe_code, reason = "write(2) on a raw descriptor, also used between fork and run")]
fn report(fd: RawFd, status: Status) {
    let bytes = status.encode();
    // SAFETY: `bytes` is live for the call; the descriptor is open (a closed one is EBADF).
    let _ = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// SIGCHLD blocked and readable from a descriptor instead.
#[allow(unsafe_code, reason = "sigprocmask and signalfd have no safe wrapper in std")]
fn child_signals() -> std::io::Result<OwnedFd> {
    // SAFETY: the set is plain data, initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        check(libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()))?;
        let fd = check(libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK))?;
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Reads every pending `SIGCHLD` notice (they only say "look").
#[allow(unsafe_code, reason = "read(2) of a signalfd into a plain buffer")]
fn drain(signals: &OwnedFd) {
    let mut info = [0_u8; 128];
    // SAFETY: `info` has room for one signalfd_siginfo (128 bytes) per read.
    while unsafe { libc::read(signals.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) } > 0 {}
}

/// Reports and forgets every child that has ended.
#[allow(unsafe_code, reason = "waitpid has no safe wrapper in std")]
fn reap(children: &mut HashMap<libc::pid_t, OwnedFd>) {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a live integer the call writes.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        let Some(pipe) = children.remove(&pid) else {
            continue;
        };
        let ended = if libc::WIFSIGNALED(status) {
            Status::Signaled(libc::WTERMSIG(status))
        } else {
            Status::Exited(libc::WEXITSTATUS(status))
        };
        report(pipe.as_raw_fd(), ended);
    }
}

/// Serves requests on `socket` until the host closes it: `prepare(args)` in the launcher
/// (where what it keeps, such as descriptors it opened once, lasts from one request to the
/// next), then `run` of what it answered in the child (whose answer is the child's exit code).
/// Answers the launcher's own exit code.
#[allow(unsafe_code, reason = "prctl, poll and fork have no safe wrapper in std")]
pub fn serve<T>(
    socket: OwnedFd,
    mut prepare: impl FnMut(Vec<String>) -> T,
    run: impl Fn(T) -> i32,
) -> i32 {
    // SAFETY: plain integers; the launcher ends with the host that started it.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    let signals = match child_signals() {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("dsh-launcher: SIGCHLD: {error}");
            return 1;
        }
    };
    let mut children: HashMap<libc::pid_t, OwnedFd> = HashMap::new();
    loop {
        let mut polled = [
            libc::pollfd {
                fd: socket.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: signals.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `polled` is live for the call and its length is what is passed.
        if unsafe { libc::poll(polled.as_mut_ptr(), 2, -1) } < 0 {
            continue;
        }
        if polled[1].revents != 0 {
            drain(&signals);
            reap(&mut children);
        }
        if polled[0].revents == 0 {
            continue;
        }
        let (bytes, fds) = match receive(socket.as_fd()) {
            Ok(Some(message)) => message,
            // The host is gone: so is every child (their parent death signal).
            Ok(None) => return 0,
            Err(error) => {
                eprintln!("dsh-launcher: {error}");
                continue;
            }
        };
        let Ok(fds) = <[OwnedFd; DESCRIPTORS]>::try_from(fds) else {
            continue;
        };
        let request = match Request::decode(&bytes) {
            Ok(request) => request,
            Err(error) => {
                eprintln!("dsh-launcher: a request: {error}");
                report(fds[STATUS].as_raw_fd(), Status::Failed(libc::EINVAL));
                continue;
            }
        };
        let Request { cwd, args, env } = request;
        let prepared = prepare(args);
        // SAFETY: this process has one thread, so the child's copy of every lock is free.
        match unsafe { libc::fork() } {
            -1 => {
                let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                report(fds[STATUS].as_raw_fd(), Status::Failed(errno));
            }
            0 => {
                // Nothing of the launcher's (its socket, the other children's status pipes)
                // stays open in the child.
                let own: Vec<RawFd> = [socket.as_raw_fd(), signals.as_raw_fd()]
                    .into_iter()
                    .chain(children.values().map(AsRawFd::as_raw_fd))
                    .collect();
                std::process::exit(child(&cwd, &env, &fds, &own, || run(prepared)));
            }
            pid => {
                let [_, _, _, status] = fds;
                children.insert(pid, status);
                // A child that ended before it was recorded is reported now.
                reap(&mut children);
            }
        }
    }
}

/// The forked child: its own process group, its pid reported, its streams in place, its
/// directory and environment set, then `run`.
#[allow(
    unsafe_code,
    reason = "the steps between fork and run are raw syscalls on descriptors this child owns"
)]
fn child(
    cwd: &str,
    env: &[(String, String)],
    fds: &[OwnedFd; DESCRIPTORS],
    own: &[RawFd],
    run: impl FnOnce() -> i32,
) -> i32 {
    // SAFETY: every call below takes plain integers or live, NUL-terminated data, and each
    // descriptor named is open in this process.
    unsafe {
        for &fd in own {
            libc::close(fd);
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        report(
            fds[STATUS].as_raw_fd(),
            Status::Started(std::process::id()),
        );
        libc::close(fds[STATUS].as_raw_fd());
        for (from, to) in [(STDIN, 0), (STDOUT, 1), (STDERR, 2)] {
            if libc::dup2(fds[from].as_raw_fd(), to) < 0 {
                return 127;
            }
            libc::close(fds[from].as_raw_fd());
        }
    }
    if !cwd.is_empty()
        && let Err(error) = std::env::set_current_dir(cwd)
    {
        eprintln!("dsh-launcher: cannot enter {cwd}: {error}");
        return 127;
    }
    // SAFETY: this child has one thread; nothing reads the environment while it changes.
    unsafe {
        libc::clearenv();
        for (name, value) in env {
            std::env::set_var(name, value);
        }
    }
    run()
}
