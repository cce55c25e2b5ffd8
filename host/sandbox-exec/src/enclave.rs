//! Entering a session's enclave: the namespaces of a bubblewrap sandbox kept running for the
//! session (its holder process sleeps in it), so that a command pays for a few `setns` calls
//! and two forks instead of building every mount again (bubblewrap's start is most of a
//! confined command's cost).
//!
//! The command still gets what a bubblewrap run of its own gives it: it joins the enclave's
//! user, mount, UTS and network namespaces, then makes fresh pid, mount and IPC namespaces of
//! its own under them, with a fresh `/proc` (its sensitive parts read-only, as bubblewrap
//! covers them) so it sees only its own processes; its first process is a small init that
//! starts the program, and when the program ends the init ends, which ends everything the
//! program left behind. Every capability is dropped, `no_new_privs` set and the seccomp filter
//! installed before the program starts, exactly as bubblewrap would.
//!
//! Which enclave is named by its bubblewrap's pid and start time; the holder is found as that
//! process's grandchild and must be the program the plugin starts there. Anything about it that
//! does not hold before the first namespace is entered makes the caller run bubblewrap as
//! usual instead; a failure after that ends the run (exit 126), never a less confined program.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use crate::args::{EnclaveRef, Request};

/// The program the sandbox plugin starts as the enclave's holder.
const HOLDER: &str = "sleep";

/// How long a command waits for a new enclave to finish its start.
const READY_WITHIN: Duration = Duration::from_secs(2);

/// The namespaces joined besides the user namespaces.
const JOINED: [(&str, libc::c_int); 3] = [
    ("mnt", libc::CLONE_NEWNS),
    ("uts", libc::CLONE_NEWUTS),
    ("net", libc::CLONE_NEWNET),
];

/// `NS_GET_USERNS` (`_IO(0xb7, 0x1)`): the user namespace that owns a namespace.
const NS_GET_USERNS: libc::c_ulong = 0xb701;

/// The parts of a fresh `/proc` that bubblewrap makes read-only (where they are writable).
const COVERED_PROC: [&str; 4] = ["sys", "sysrq-trigger", "irq", "bus"];

/// Why an enclave cannot be used, or entering it failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EnclaveError {
    #[error("enclave {0} is gone")]
    Gone(u32),
    #[error("enclave {0} did not start its holder")]
    NoHolder(u32),
    #[error("namespace {name} of {pid}: {error}")]
    Namespace {
        name: &'static str,
        pid: String,
        error: std::io::Error,
    },
    #[error("the holder shares this process's mount namespace")]
    NotASandbox,
    #[error("seccomp: {0}")]
    Seccomp(#[from] crate::seccomp::SeccompError),
    #[error("{what}: {error}")]
    Step { what: String, error: std::io::Error },
}

impl EnclaveError {
    fn step(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |error| Self::Step { what, error }
    }
}

/// How entering went.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The program ran in the enclave and ended with this exit code.
    Exited(i32),
    /// The enclave cannot be used, and nothing was changed: run bubblewrap instead.
    Unusable(String),
    /// Entering failed half-way: the run must end.
    Broken(String),
}

/// The start time of process `pid` (clock ticks after boot), which tells a process from a
/// later one given the same pid.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    use std::io::Read;
    // One read: `/proc` says its files are empty, so reading to the end would grow a small
    // buffer read by read (six calls for one line).
    let mut line = [0_u8; 1024];
    let read = File::open(format!("/proc/{pid}/stat"))
        .and_then(|mut file| file.read(&mut line))
        .ok()?;
    let stat = std::str::from_utf8(&line[..read]).ok()?;
    let (_, after) = stat.rsplit_once(')')?;
    // Field 22 of the line; what follows the command name starts at field 3.
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The children of `pid` (its main thread's).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The holder of `enclave`, once its bubblewrap has started it.
#[allow(
    clippy::disallowed_methods,
    reason = "a process of its own (no plugin thread to block), waiting before it starts"
)]
fn holder(enclave: &EnclaveRef, wait: Duration) -> Result<u32, EnclaveError> {
    let deadline = Instant::now() + wait;
    loop {
        if start_time(enclave.pid) != Some(enclave.start) {
            return Err(EnclaveError::Gone(enclave.pid));
        }
        let found = children(enclave.pid).into_iter().find_map(|init| {
            children(init).into_iter().find(|holder| {
                std::fs::read_to_string(format!("/proc/{holder}/comm"))
                    .is_ok_and(|comm| comm.trim_end() == HOLDER)
            })
        });
        if let Some(holder) = found {
            return Ok(holder);
        }
        if Instant::now() >= deadline {
            return Err(EnclaveError::NoHolder(enclave.pid));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn namespace(pid: &str, name: &str) -> std::io::Result<File> {
    File::open(format!("/proc/{pid}/ns/{name}"))
}

fn inode(file: &File) -> Option<u64> {
    file.metadata().map(|meta| meta.ino()).ok()
}

/// The enclave's namespaces, in the order they are joined.
pub(crate) struct Namespaces {
    /// The user namespace that owns its mount namespace (where its mounts were made), unless
    /// it is this process's own (a host without user namespaces).
    owner: Option<File>,
    /// Its mount, UTS and network namespaces that differ from this process's.
    joined: Vec<(File, libc::c_int)>,
    /// The holder's own user namespace, where it is another below the owner (an unprivileged
    /// bubblewrap makes one after its mounts, so that nothing in it is root): joined last,
    /// after the command's `/proc` is mounted.
    inner: Option<File>,
}

/// The holder's namespaces; its mount namespace must differ from this process's (otherwise
/// it is not a sandbox).
fn namespaces(holder: u32) -> Result<Namespaces, EnclaveError> {
    let pid = holder.to_string();
    let open = |pid: &str, name: &'static str| {
        namespace(pid, name).map_err(|error| EnclaveError::Namespace {
            name,
            pid: pid.to_owned(),
            error,
        })
    };
    let mut joined = Vec::new();
    for (name, kind) in JOINED {
        let theirs = open(&pid, name)?;
        let differs = inode(&theirs) != inode(&open("self", name)?);
        if name == "mnt" && !differs {
            return Err(EnclaveError::NotASandbox);
        }
        if differs {
            joined.push((theirs, kind));
        }
    }
    let owner = owning_user_namespace(&joined[0].0)
        .map_err(EnclaveError::step("the owner of the enclave's mounts"))?;
    let own_user = inode(&open("self", "user")?);
    let holder_user = open(&pid, "user")?;
    let inner = (inode(&holder_user) != inode(&owner)).then_some(holder_user);
    let owner = (inode(&owner) != own_user).then_some(owner);
    Ok(Namespaces {
        owner,
        joined,
        inner,
    })
}

#[allow(unsafe_code, reason = "ioctl has no safe wrapper in std")]
fn owning_user_namespace(namespace: &File) -> std::io::Result<File> {
    use std::os::fd::FromRawFd;
    // SAFETY: NS_GET_USERNS takes no argument and answers a new descriptor or -1.
    let fd = unsafe { libc::ioctl(namespace.as_raw_fd(), NS_GET_USERNS) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened by the kernel for this process and is owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// The namespaces of `enclave`, opened (they stay usable while the descriptors are open),
/// waiting for a new enclave's holder to start.
pub(crate) fn open(enclave: &EnclaveRef) -> Result<Namespaces, EnclaveError> {
    holder(enclave, READY_WITHIN).and_then(namespaces)
}

/// [`open`] without waiting: a new enclave whose holder has not started yet is an error (the
/// launcher, which serves every command, must not wait for one session's enclave).
pub(crate) fn open_ready(enclave: &EnclaveRef) -> Result<Namespaces, EnclaveError> {
    holder(enclave, Duration::ZERO).and_then(namespaces)
}

/// What the command's init runs.
#[derive(Clone, Copy)]
pub(crate) enum Task<'a> {
    /// The program and its arguments (with `request.env` and `request.chdir`).
    Given(&'a [String]),
    /// Whatever request a launcher sends on this socket once the init is ready (a spare; see
    /// `spare`): confined first, the program after.
    Awaited(&'a std::os::fd::OwnedFd),
}

/// Runs `program` of `request` in `enclave`.
pub(crate) fn run(
    enclave: &EnclaveRef,
    request: &Request,
    program: &[String],
    status_pipe: Option<BorrowedFd<'_>>,
) -> Outcome {
    match open(enclave) {
        Ok(namespaces) => enter(&namespaces, request, Task::Given(program), status_pipe),
        Err(why) => Outcome::Unusable(why.to_string()),
    }
}

/// Runs `task` of `request` in the enclave whose namespaces are `namespaces`; the init
/// reports the program's end on `status_pipe` (see `dsh_launcher::report_end`) before its own.
pub(crate) fn enter(
    namespaces: &Namespaces,
    request: &Request,
    task: Task<'_>,
    status_pipe: Option<BorrowedFd<'_>>,
) -> Outcome {
    let owner = namespaces
        .owner
        .as_ref()
        .map(|file| (file, libc::CLONE_NEWUSER));
    for (file, kind) in owner
        .into_iter()
        .chain(namespaces.joined.iter().map(|(file, kind)| (file, *kind)))
    {
        if let Err(error) = set_namespace(file, kind) {
            return Outcome::Broken(format!("entering the enclave ({kind:#x}): {error}"));
        }
    }
    if let Err(error) = unshare(libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC) {
        return Outcome::Broken(format!("new namespaces in the enclave: {error}"));
    }
    match fork() {
        Err(error) => Outcome::Broken(format!("fork: {error}")),
        Ok(0) => std::process::exit(init(request, task, namespaces.inner.as_ref(), status_pipe)),
        Ok(child) => {
            release_streams();
            Outcome::Exited(wait_for(child))
        }
    }
}

/// Puts `/dev/null` in place of this process's stdin, stdout and stderr, once the program has
/// its own copies: a reader of the program's output sees its end when the program's last
/// process ends, not after the init, this process and their namespaces are torn down.
#[allow(
    unsafe_code,
    reason = "dup2(2) over this process's standard descriptors"
)]
fn release_streams() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    for fd in 0..3 {
        // SAFETY: both descriptors are open in this process; dup2 closes the old `fd` first.
        unsafe { libc::dup2(null.as_raw_fd(), fd) };
    }
}

/// The first process of the command's pid namespace: finishes the confinement (its `/proc`,
/// the holder's user namespace, no capabilities, the filter), starts the program, and ends
/// with it (which ends everything it left running).
fn init(
    request: &Request,
    task: Task<'_>,
    inner_user: Option<&File>,
    status_pipe: Option<BorrowedFd<'_>>,
) -> i32 {
    let dir = match task {
        Task::Given(_) => request.chdir.as_deref().unwrap_or("/"),
        // A spare's directory comes with its request.
        Task::Awaited(_) => "/",
    };
    if let Err(why) = confine(request, dir, inner_user) {
        eprintln!("dsh-sandbox-exec: {why}");
        return 126;
    }
    let mut awaited_pipe = None;
    let mut command = match task {
        Task::Given(program) => {
            let Some((name, args)) = program.split_first() else {
                return 2;
            };
            crate::program::command(name, args, &request.env, crate::program::Base::Inherited)
        }
        Task::Awaited(socket) => match crate::spare::awaited(socket) {
            Ok((command, handed_pipe)) => {
                awaited_pipe = handed_pipe;
                command
            }
            Err(code) => return code,
        },
    };
    let status_pipe = status_pipe.or(awaited_pipe.as_ref().map(AsFd::as_fd));
    let name = command.get_program().to_string_lossy().into_owned();
    let child = command.spawn().inspect(|_| release_streams());
    match child.and_then(|mut child| child.wait()) {
        Ok(status) => {
            // Told now, not after this process and its namespaces are torn down.
            if let Some(pipe) = status_pipe {
                dsh_launcher::report_end(pipe, status);
            }
            exit_code(status)
        }
        Err(error) => {
            eprintln!("dsh-sandbox-exec: cannot run `{name}`: {error}");
            127
        }
    }
}

/// Everything between the fork and the program: the confinement `init` finishes.
fn confine(request: &Request, dir: &str, inner_user: Option<&File>) -> Result<(), EnclaveError> {
    die_with_parent().map_err(EnclaveError::step("parent death signal"))?;
    fresh_proc()?;
    if let Some(user) = inner_user {
        set_namespace(user, libc::CLONE_NEWUSER)
            .map_err(EnclaveError::step("the holder's user namespace"))?;
    }
    std::env::set_current_dir(dir).map_err(EnclaveError::step(format!("cannot enter {dir}")))?;
    drop_capabilities().map_err(EnclaveError::step("capabilities"))?;
    crate::set_no_new_privs().map_err(EnclaveError::step("no_new_privs"))?;
    if request.seccomp {
        crate::seccomp::install(&request.denied_sockets)?;
    }
    Ok(())
}

/// The code a shell would give `status`: its exit code, or 128 plus the signal that ended it.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

/// Mounts a `/proc` of the new pid namespace over the enclave's, with the parts bubblewrap
/// covers bound read-only.
fn fresh_proc() -> Result<(), EnclaveError> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    mount(Some(c"proc"), c"/proc", Some(c"proc"), flags)
        .map_err(EnclaveError::step("mounting /proc"))?;
    for covered in COVERED_PROC {
        let path = format!("/proc/{covered}");
        let Ok(path_c) = std::ffi::CString::new(path.clone()) else {
            continue;
        };
        if !writable(&path_c) {
            continue;
        }
        mount(Some(&path_c), &path_c, None, libc::MS_BIND | libc::MS_REC)
            .and_then(|()| {
                mount(
                    None,
                    &path_c,
                    None,
                    libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags,
                )
            })
            .map_err(EnclaveError::step(format!("covering {path}")))?;
    }
    Ok(())
}

#[allow(unsafe_code, reason = "access has no safe wrapper in std")]
fn writable(path: &std::ffi::CStr) -> bool {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

#[allow(unsafe_code, reason = "mount has no safe wrapper in std")]
fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    kind: Option<&std::ffi::CStr>,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let pointer = |value: Option<&std::ffi::CStr>| value.map_or(std::ptr::null(), |v| v.as_ptr());
    // SAFETY: every string is NUL-terminated and outlives the call; no data argument.
    let done = unsafe {
        libc::mount(
            pointer(source),
            target.as_ptr(),
            pointer(kind),
            flags,
            std::ptr::null(),
        )
    };
    check(done)
}

fn check(result: libc::c_int) -> std::io::Result<()> {
    match result {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[allow(unsafe_code, reason = "setns has no safe wrapper in std")]
fn set_namespace(file: &File, kind: libc::c_int) -> std::io::Result<()> {
    // SAFETY: the descriptor is open for the duration of the call.
    check(unsafe { libc::setns(file.as_raw_fd(), kind) })
}

#[allow(unsafe_code, reason = "unshare has no safe wrapper in std")]
fn unshare(flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: unshare takes plain flags and touches no memory of ours.
    check(unsafe { libc::unshare(flags) })
}

#[allow(unsafe_code, reason = "fork has no safe wrapper in std")]
fn fork() -> std::io::Result<libc::pid_t> {
    // SAFETY: this program has one thread, so the child's copy of every lock is free.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        pid => Ok(pid),
    }
}

#[allow(unsafe_code, reason = "prctl has no safe wrapper in std")]
fn die_with_parent() -> std::io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and touches no memory.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })
}

/// Empties the bounding, ambient, effective, permitted and inheritable sets: a program that
/// runs as root inside gains none back at `exec`.
#[allow(unsafe_code, reason = "prctl and capset have no safe wrapper in std")]
fn drop_capabilities() -> std::io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    for capability in 0..64 {
        // SAFETY: plain integers; a capability this kernel does not know answers EINVAL.
        let dropped = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) };
        if dropped != 0 {
            let error = std::io::Error::last_os_error();
            // Capabilities are numbered without gaps: the first unknown one ends them.
            if error.raw_os_error() == Some(libc::EINVAL) && capability > 0 {
                break;
            }
            return Err(error);
        }
    }
    // SAFETY: plain integers.
    check(unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    })?;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: version 3 reads one header and two data structs, both live for the call.
    let done = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    match done {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Waits for the command's init. A signal to the process group ends this process as it
/// would end bubblewrap (the host then reports the signal), and with it the init (its parent
/// death signal) and everything in its namespace.
#[allow(unsafe_code, reason = "waitpid has no safe wrapper in std")]
fn wait_for(child: libc::pid_t) -> i32 {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a live integer the call writes.
        let waited = unsafe { libc::waitpid(child, &mut status, 0) };
        if waited == child {
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 126;
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_start_time_and_a_later_one_would_differ() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(start > 0);
        assert_eq!(start_time(me), Some(start));
        assert_eq!(start_time(u32::MAX), None);
    }

    #[test]
    fn a_process_that_is_no_enclave_is_refused_before_anything_changes() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        // The right start time but no holder under it: refused within the wait.
        let refused = holder(
            &EnclaveRef {
                pid: me,
                start,
                program_len: 1,
            },
            READY_WITHIN,
        );
        assert!(matches!(refused, Err(EnclaveError::NoHolder(_))));
        // A start time that is not this process's: the enclave is gone.
        let gone = holder(
            &EnclaveRef {
                pid: me,
                start: start + 1,
                program_len: 1,
            },
            READY_WITHIN,
        );
        assert!(matches!(gone, Err(EnclaveError::Gone(_))));
    }
}
