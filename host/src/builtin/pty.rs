//! `subprocess_pty` (provided by the `dsh-host/subprocess` row): a process on a
//! pseudo-terminal of its own. The host opens the terminal pair, starts the program as the
//! leader of a new session whose controlling terminal is the pair's far side, and reads the
//! near side on its runtime (`AsyncFd`), so that plugins, which own no threads, get its output
//! as chunks like any process's. Waiting is `subprocess`'s; terminating hangs the terminal up
//! first, because an interactive shell ignores `SIGTERM`, and ends by killing every process
//! left in the terminal's session: a shell keeps its jobs in process groups of their own, and
//! a background job still holding the terminal would otherwise outlive it (and keep the
//! terminal open). A process that left the session on purpose (`setsid`) is not followed;
//! under the sandbox's pid namespace it ends with the namespace anyway.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, ROption, RResult, RSome, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::piped::{ProcessStdin, ProcessStdin_TO};
use dsh_plugin_api::io::pty::{
    PtyControl, PtyControl_TO, PtyProcess, PtySize, PtySubprocess, PtySubprocess_TO,
    PtySubprocessService,
};
use dsh_plugin_api::io::subprocess::{
    ExitStatus, OutputChunk, OutputStream, Process, Process_TO, SpawnRequest, SubprocessError,
    SubprocessErrorKind,
};
use tokio::io::unix::AsyncFd;
use tokio::sync::{Mutex, mpsc};

use super::subprocess::{Running, command_of, failure, kind_of, signal_group};

pub(super) fn service() -> PtySubprocessService {
    PtySubprocess_TO::from_value(PtyLauncher, TD_Opaque)
}

struct PtyLauncher;

impl PtySubprocess for PtyLauncher {
    fn spawn_pty(
        &self,
        request: SpawnRequest,
        size: PtySize,
    ) -> RResult<PtyProcess, SubprocessError> {
        start(request, size).into()
    }
}

fn os_error(what: &str) -> SubprocessError {
    let error = std::io::Error::last_os_error();
    failure(kind_of(&error), format!("{what}: {error}"))
}

fn winsize(size: PtySize) -> libc::winsize {
    libc::winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// Opens a terminal pair: (near side, far side), both close-on-exec, the near side
/// non-blocking for the runtime.
fn open_pair(size: PtySize) -> Result<(OwnedFd, OwnedFd), SubprocessError> {
    let (mut near, mut far): (RawFd, RawFd) = (-1, -1);
    let window = winsize(size);
    #[allow(
        unsafe_code,
        reason = "openpty(3) and fcntl(2) on descriptors it returns"
    )]
    // SAFETY: the out-pointers are valid locals; the name and termios are optional (null); the
    // descriptors are owned by the `OwnedFd`s right after and by nothing else.
    unsafe {
        if libc::openpty(
            &mut near,
            &mut far,
            std::ptr::null_mut(),
            std::ptr::null(),
            &window,
        ) != 0
        {
            return Err(os_error("cannot open a terminal"));
        }
        let (near, far) = (OwnedFd::from_raw_fd(near), OwnedFd::from_raw_fd(far));
        for fd in [near.as_raw_fd(), far.as_raw_fd()] {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        let flags = libc::fcntl(near.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(near.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        Ok((near, far))
    }
}

fn start(request: SpawnRequest, size: PtySize) -> Result<PtyProcess, SubprocessError> {
    let (near, far) = open_pair(size)?;
    let mut command = command_of(&request);
    let stdio = || {
        far.try_clone()
            .map(std::process::Stdio::from)
            .map_err(|error| failure(kind_of(&error), format!("cannot open a terminal: {error}")))
    };
    command.stdin(stdio()?).stdout(stdio()?).stderr(stdio()?);
    #[allow(unsafe_code, reason = "setsid(2) and ioctl(2) between fork and exec")]
    // SAFETY: only async-signal-safe calls run in the child before exec: a new session, then
    // its controlling terminal (stdin, the far side, dup'ed there by the spawn).
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|error| {
        failure(
            kind_of(&error),
            format!("cannot start `{}`: {error}", request.program),
        )
    })?;
    // The far side stays open in the child alone, so reading the near side ends (EIO) once
    // every process holding the terminal is gone.
    drop(command);
    drop(far);
    let Some(pid) = child.id() else {
        return Err(failure(
            SubprocessErrorKind::Failed,
            format!("`{}` exited before it could be tracked", request.program),
        ));
    };
    #[allow(
        unsafe_code,
        reason = "registering a descriptor with the runtime's reactor"
    )]
    // SAFETY: an `OwnedFd` stays open, on the same description, for as long as it is owned,
    // and the `AsyncFd` owns it from here on.
    let watched = unsafe { AsyncFd::register(near) };
    let near = Arc::new(watched.map_err(|error| {
        failure(
            SubprocessErrorKind::Failed,
            format!("cannot watch the terminal: {error}"),
        )
    })?);
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(pump(near.clone(), sender));
    let input = Input {
        near: near.clone(),
        order: Arc::new(Mutex::new(())),
    };
    if let RSome(bytes) = &request.stdin {
        let (input, bytes) = (input.clone(), bytes.to_vec());
        tokio::spawn(async move { input.write_all(&bytes).await });
    }
    let running = Running {
        pid,
        child: Arc::new(Mutex::new(child)),
        output: Arc::new(Mutex::new(receiver)),
        exited: Arc::new(std::sync::OnceLock::new()),
    };
    Ok(PtyProcess {
        process: Process_TO::from_value(
            OnTerminal {
                running,
                near: near.clone(),
            },
            TD_Opaque,
        ),
        input: ProcessStdin_TO::from_value(input, TD_Opaque),
        control: PtyControl_TO::from_value(Control { near }, TD_Opaque),
    })
}

/// Forwards what the terminal shows until every process holding it is gone (EIO).
async fn pump(near: Arc<AsyncFd<OwnedFd>>, sender: mpsc::UnboundedSender<OutputChunk>) {
    let mut buffer = vec![0_u8; 16 * 1024];
    loop {
        let Ok(mut ready) = near.readable().await else {
            break;
        };
        let read = ready.try_io(|fd| {
            #[allow(unsafe_code, reason = "read(2) into a buffer this task owns")]
            // SAFETY: the buffer is valid for its length; the descriptor is open (held by `near`).
            let read =
                unsafe { libc::read(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
            usize::try_from(read).map_err(|_| std::io::Error::last_os_error())
        });
        match read {
            Err(_would_block) => {}
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(count)) => {
                let chunk = OutputChunk {
                    stream: OutputStream::Stdout,
                    bytes: RVec::from(buffer[..count].to_vec()),
                };
                if sender.send(chunk).is_err() {
                    break;
                }
            }
        }
    }
}

/// Typing into the terminal; writes are whole and in call order.
#[derive(Clone)]
struct Input {
    near: Arc<AsyncFd<OwnedFd>>,
    order: Arc<Mutex<()>>,
}

impl Input {
    async fn write_all(&self, mut bytes: &[u8]) -> Result<(), SubprocessError> {
        let _turn = self.order.lock().await;
        while !bytes.is_empty() {
            let mut ready = self.near.writable().await.map_err(|error| {
                failure(
                    kind_of(&error),
                    format!("writing to the terminal failed: {error}"),
                )
            })?;
            let written = ready.try_io(|fd| {
                #[allow(unsafe_code, reason = "write(2) from a borrowed slice")]
                // SAFETY: the slice is valid for its length; the descriptor is open.
                let written =
                    unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
                usize::try_from(written).map_err(|_| std::io::Error::last_os_error())
            });
            match written {
                Err(_would_block) => {}
                Ok(Ok(count)) => bytes = &bytes[count..],
                Ok(Err(error)) => {
                    return Err(failure(
                        SubprocessErrorKind::Closed,
                        format!("writing to the terminal failed: {error}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl ProcessStdin for Input {
    fn write(&self, bytes: RVec<u8>) -> FfiFuture<RResult<(), SubprocessError>> {
        let input = self.clone();
        async move { input.write_all(&bytes).await.into() }.into_ffi()
    }

    /// A terminal has no end of file to send short of hanging up: this types `^D`, which a
    /// program reading lines takes as one.
    fn close(&self) -> FfiFuture<()> {
        let input = self.clone();
        async move {
            let _ = input.write_all(&[4]).await;
        }
        .into_ffi()
    }
}

/// The terminal's foreground process group, if it still has one.
fn foreground(near: &AsyncFd<OwnedFd>) -> Option<u32> {
    #[allow(unsafe_code, reason = "tcgetpgrp(3) on an open descriptor")]
    // SAFETY: plain call on a descriptor `near` holds open.
    let group = unsafe { libc::tcgetpgrp(near.as_raw_fd()) };
    u32::try_from(group).ok().filter(|group| *group > 0)
}

struct Control {
    near: Arc<AsyncFd<OwnedFd>>,
}

impl PtyControl for Control {
    fn resize(&self, size: PtySize) -> RResult<(), SubprocessError> {
        let window = winsize(size);
        #[allow(unsafe_code, reason = "ioctl(2) TIOCSWINSZ with a valid winsize")]
        // SAFETY: the descriptor is open and the pointer is to a live local.
        let done = unsafe { libc::ioctl(self.near.as_raw_fd(), libc::TIOCSWINSZ, &window) };
        if done < 0 {
            return RErr(os_error("cannot resize the terminal"));
        }
        ROk(())
    }

    fn signal_foreground(&self, signal: i32) -> RResult<u32, SubprocessError> {
        match foreground(&self.near) {
            Some(group) => {
                signal_group(group, signal);
                ROk(group)
            }
            None => RErr(failure(
                SubprocessErrorKind::Closed,
                "the terminal has no foreground process group",
            )),
        }
    }
}

/// A [`Running`] whose termination hangs its terminal up first.
struct OnTerminal {
    running: Running,
    near: Arc<AsyncFd<OwnedFd>>,
}

/// Sends `signal` to every process of the session led by `leader` (a scan of `/proc`).
fn signal_session(leader: u32, signal: libc::c_int) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp session ...`: the name may hold spaces and parentheses.
        let session = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(3))
            .and_then(|session| session.parse::<u32>().ok());
        if session == Some(leader) {
            #[allow(
                unsafe_code,
                reason = "kill(2) on a process of a session this host started"
            )]
            // SAFETY: plain syscall; a process gone since the scan yields ESRCH.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }
}

impl OnTerminal {
    fn hang_up(&self) {
        if let Some(group) = foreground(&self.near) {
            signal_group(group, libc::SIGHUP);
        }
        signal_group(self.running.pid, libc::SIGHUP);
    }
}

impl Process for OnTerminal {
    fn pid(&self) -> u32 {
        self.running.pid()
    }

    fn next_output(&self) -> FfiFuture<ROption<OutputChunk>> {
        self.running.next_output()
    }

    fn wait(&self) -> FfiFuture<RResult<ExitStatus, SubprocessError>> {
        self.running.wait()
    }

    fn terminate(&self, grace_ms: u64) -> FfiFuture<RResult<ExitStatus, SubprocessError>> {
        self.hang_up();
        let (ending, leader) = (self.running.terminate(grace_ms), self.running.pid);
        async move {
            let status = ending.await;
            signal_session(leader, libc::SIGKILL);
            status
        }
        .into_ffi()
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        // The jobs of a shell live in groups of their own: whatever is left of the session
        // goes with it (the leader's group gets SIGKILL from `Running`'s drop).
        self.hang_up();
        signal_session(self.running.pid, libc::SIGKILL);
    }
}
