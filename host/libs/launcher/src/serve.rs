//! The launcher's loop: one thread waiting on the request socket and on its children's ends
//! (a `signalfd` of `SIGCHLD`), so each fork happens in a process with no other thread (no lock
//! another thread could hold is copied into the child taken).

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::{DESCRIPTORS, Request, STDERR, STDIN, STDOUT, Status, receive};

/// What a launcher's program does with requests (in the launcher unless said otherwise).
pub trait Program {
    /// A request read, ready to be run.
    type Prepared;
    /// Reads a request's arguments (what is kept here lasts from one request to the next).
    fn prepare(&mut self, args: Vec<String>) -> Self::Prepared;
    /// Gives the request to a process already running that takes it (a spare the program
    /// started earlier), with the request's directory, environment and stdin, stdout and
    /// stderr, then calls `announce` with that process's pid (which writes
    /// [`Status::Started`]), and only then gives it the status pipe (for [`report_end`], which
    /// must come after). Answers the pid, whose end the launcher then reports as the
    /// request's. `Err` hands the streams back, and a child is forked for the request.
    fn hand_over(
        &mut self,
        prepared: &Self::Prepared,
        cwd: &str,
        env: &[(String, String)],
        stdio: [OwnedFd; 3],
        status_pipe: BorrowedFd<'_>,
        announce: &mut dyn FnMut(libc::pid_t),
    ) -> Result<libc::pid_t, [OwnedFd; 3]>;
    /// In the forked child, its streams, directory and environment in place: runs the
    /// request; answers the child's exit code. The status pipe is there for [`report_end`].
    fn run(&self, prepared: &Self::Prepared, status_pipe: BorrowedFd<'_>) -> i32;
    /// After a request started (to remember what a spare for the next one would be).
    fn started(&mut self, prepared: &Self::Prepared);
    /// When no request's child is running (the last one ended): room to start a spare with
    /// [`Forker::fork`], off the time of any command.
    fn settled(&mut self, forker: &mut Forker<'_>);
    /// A child the program forked itself (a spare) has ended.
    fn ended(&mut self, pid: libc::pid_t);
    /// Descriptors of the program's own that no child may keep.
    fn descriptors(&self) -> Vec<RawFd>;
}

fn check(result: libc::c_int) -> std::io::Result<libc::c_int> {
    match result {
        -1 => Err(std::io::Error::last_os_error()),
        done => Ok(done),
    }
}

/// Writes `status` on a status pipe; a reader that went away is no concern of the launcher's.
#[allow(
    unsafe_code,
    reason = "write(2) on a raw descriptor, also used between fork and run"
)]
fn report(fd: RawFd, status: Status) {
    let bytes = status.encode();
    // SAFETY: `bytes` is live for the call; the descriptor is open (a closed one is EBADF).
    let _ = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// Writes how a request's program ended on its status pipe, from the child (or a process of
/// its own) as soon as it knows, before its own end: the host takes the first end it reads,
/// and the launcher's, written when it reaps the child, is then not waited for.
pub fn report_end(status_pipe: BorrowedFd<'_>, end: std::process::ExitStatus) {
    use std::os::unix::process::ExitStatusExt;
    let status = match (end.code(), end.signal()) {
        (_, Some(signal)) => Status::Signaled(signal),
        (code, None) => Status::Exited(code.unwrap_or(1)),
    };
    report(status_pipe.as_raw_fd(), status);
}

/// SIGCHLD blocked and readable from a descriptor instead.
#[allow(
    unsafe_code,
    reason = "sigprocmask and signalfd have no safe wrapper in std"
)]
fn child_signals() -> std::io::Result<OwnedFd> {
    // SAFETY: the set is plain data, initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        check(libc::sigprocmask(
            libc::SIG_BLOCK,
            &set,
            std::ptr::null_mut(),
        ))?;
        let fd = check(libc::signalfd(
            -1,
            &set,
            libc::SFD_CLOEXEC | libc::SFD_NONBLOCK,
        ))?;
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

/// Reports and forgets every child that has ended; tells `program` of its own.
#[allow(unsafe_code, reason = "waitpid has no safe wrapper in std")]
fn reap(children: &mut HashMap<libc::pid_t, OwnedFd>, program: &mut impl Program) {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a live integer the call writes.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        let Some(pipe) = children.remove(&pid) else {
            program.ended(pid);
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

/// Forks children that keep nothing of the launcher's: each in a process group of its own,
/// ending with the launcher, signals as a new process has them.
pub struct Forker<'a> {
    own: &'a [RawFd],
}

impl Forker<'_> {
    /// Forks a child that runs `run` and exits with its answer; the child's pid, or the
    /// `errno` of a fork that failed.
    #[allow(unsafe_code, reason = "fork has no safe wrapper in std")]
    pub fn fork(&mut self, run: impl FnOnce() -> i32) -> Result<libc::pid_t, i32> {
        // SAFETY: the launcher has one thread, so the child's copy of every lock is free.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)),
            0 => {
                clean_child(self.own);
                std::process::exit(run())
            }
            pid => {
                // Here too, so the group exists before anyone is told of the pid (a signal
                // to a group not made yet would be lost).
                // SAFETY: plain integers, on a child of this process.
                unsafe { libc::setpgid(pid, pid) };
                Ok(pid)
            }
        }
    }
}

/// The first steps of every child: the launcher's descriptors closed, signals unblocked and
/// `SIGPIPE` back to its default, a process group of its own, the end of the launcher its end.
#[allow(
    unsafe_code,
    reason = "raw syscalls between fork and run, on this child's own state"
)]
fn clean_child(own: &[RawFd]) {
    // SAFETY: plain integers and a live, initialised signal set.
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
    }
}

/// The launcher's descriptors, which no child keeps: its socket, its signal descriptor, the
/// children's status pipes and the program's own.
fn launcher_fds(
    socket: &OwnedFd,
    signals: &OwnedFd,
    children: &HashMap<libc::pid_t, OwnedFd>,
    program: &impl Program,
) -> Vec<RawFd> {
    [socket.as_raw_fd(), signals.as_raw_fd()]
        .into_iter()
        .chain(children.values().map(AsRawFd::as_raw_fd))
        .chain(program.descriptors())
        .collect()
}

/// Serves requests on `socket` until the host closes it, with `program` (see [`Program`]).
/// Answers the launcher's own exit code.
#[allow(unsafe_code, reason = "prctl and poll have no safe wrapper in std")]
pub fn serve(socket: OwnedFd, mut program: impl Program) -> i32 {
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
            reap(&mut children, &mut program);
            if children.is_empty() {
                let own = launcher_fds(&socket, &signals, &children, &program);
                program.settled(&mut Forker { own: &own });
            }
        }
        if polled[0].revents == 0 {
            continue;
        }
        let (bytes, fds) = match receive(socket.as_fd(), DESCRIPTORS) {
            Ok(Some(message)) => message,
            // The host is gone: so is every child (their parent death signal).
            Ok(None) => return 0,
            Err(error) => {
                eprintln!("dsh-launcher: {error}");
                continue;
            }
        };
        let Ok([stdin, stdout, stderr, status]) = <[OwnedFd; DESCRIPTORS]>::try_from(fds) else {
            continue;
        };
        let Request { cwd, args, env } = match Request::decode(&bytes) {
            Ok(request) => request,
            Err(error) => {
                eprintln!("dsh-launcher: a request: {error}");
                report(status.as_raw_fd(), Status::Failed(libc::EINVAL));
                continue;
            }
        };
        let prepared = program.prepare(args);
        let own = launcher_fds(&socket, &signals, &children, &program);
        let status_fd = status.as_raw_fd();
        let mut announce = |pid: libc::pid_t| report(status_fd, Status::Started(pid as u32));
        let handed = program.hand_over(
            &prepared,
            &cwd,
            &env,
            [stdin, stdout, stderr],
            status.as_fd(),
            &mut announce,
        );
        let started = match handed {
            Ok(pid) => Ok(pid),
            Err(stdio) => Forker { own: &own }.fork(|| {
                // The child's own group exists (see `clean_child`) before its pid is told,
                // and its pid is told before anything it runs could report its end.
                report(status_fd, Status::Started(std::process::id()));
                child(&cwd, &env, stdio, || program.run(&prepared, status.as_fd()))
            }),
        };
        match started {
            Ok(pid) => {
                children.insert(pid, status);
                program.started(&prepared);
            }
            Err(errno) => report(status.as_raw_fd(), Status::Failed(errno)),
        }
        // A child that ended before it was recorded is reported now.
        reap(&mut children, &mut program);
    }
}

/// The forked child of a request: its streams in place, its directory and environment set,
/// then `run`.
#[allow(
    unsafe_code,
    reason = "the steps between fork and run are raw syscalls on descriptors this child owns"
)]
fn child(
    cwd: &str,
    env: &[(String, String)],
    stdio: [OwnedFd; 3],
    run: impl FnOnce() -> i32,
) -> i32 {
    for (from, to) in stdio.into_iter().zip([STDIN, STDOUT, STDERR]) {
        // SAFETY: both descriptors are this child's; dup2 leaves `to` open without
        // close-on-exec, and the original closes when `from` drops.
        if unsafe { libc::dup2(from.as_raw_fd(), to as RawFd) } < 0 {
            return 127;
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
