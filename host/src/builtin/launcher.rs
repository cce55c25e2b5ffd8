//! `subprocess_launcher`: processes a launcher forks for the host (the protocol of
//! `dsh-launcher`). The host makes each process's pipes (stdin, stdout, stderr and the status
//! pipe), hands their far ends over with the request, and follows the near ends on its runtime,
//! so a launched process is read, waited for and terminated (its process group) as a spawned
//! one is; only its exit comes from the status pipe, since the launcher, not the host, is its
//! parent.

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_launcher::{STATUS_LEN, Status};
use dsh_plugin_api::io::launcher::{Launcher, Launcher_TO, LauncherBox, Launchers};
use dsh_plugin_api::io::subprocess::{
    ExitStatus, OutputChunk, OutputStream, Process, Process_TO, ProcessBox, SpawnRequest,
    SubprocessError, SubprocessErrorKind,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{Mutex, mpsc, watch};

use super::subprocess::{
    Output, command_of, environment_of, failure, next_chunk, pump, signal_group, terminate_group,
};

/// How long a request waits for the launcher to report its child started.
const STARTED_WITHIN: Duration = Duration::from_secs(10);

pub(super) struct Opener;

impl Launchers for Opener {
    fn open(&self, request: SpawnRequest) -> RResult<LauncherBox, SubprocessError> {
        let (ours, theirs) = match dsh_launcher::socket_pair() {
            Ok(pair) => pair,
            Err(error) => return RErr(failure(SubprocessErrorKind::Failed, error)),
        };
        let mut command = command_of(&request);
        let theirs_fd = theirs.as_raw_fd();
        #[allow(unsafe_code, reason = "pre_exec: one dup2 between fork and exec")]
        // SAFETY: dup2 is async-signal-safe and touches no memory; it leaves the socket at
        // descriptor 3 without close-on-exec (the original, close-on-exec, goes at exec).
        unsafe {
            command.pre_exec(
                move || match libc::dup2(theirs_fd, dsh_launcher::SOCKET_FD) {
                    -1 => Err(std::io::Error::last_os_error()),
                    _ => Ok(()),
                },
            );
        }
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true);
        let child = match command.spawn() {
            Ok(child) => child,
            Err(error) => {
                return RErr(failure(
                    super::subprocess::kind_of(&error),
                    format!("cannot start the launcher `{}`: {error}", request.program),
                ));
            }
        };
        drop(theirs);
        let pid = child.id().unwrap_or(0);
        ROk(Launcher_TO::from_value(
            Open {
                pid,
                socket: std::sync::Mutex::new(ours),
                alive: AtomicBool::new(true),
                _child: child,
            },
            TD_Opaque,
        ))
    }
}

/// A running launcher; dropped, it is killed (and reaped by the runtime).
struct Open {
    pid: u32,
    socket: std::sync::Mutex<OwnedFd>,
    alive: AtomicBool,
    _child: tokio::process::Child,
}

fn pipe_pair() -> Result<(OwnedFd, OwnedFd), SubprocessError> {
    let (reader, writer) =
        std::io::pipe().map_err(|error| failure(SubprocessErrorKind::Failed, error))?;
    Ok((OwnedFd::from(reader), OwnedFd::from(writer)))
}

/// Why a launcher did not start or follow a process.
#[derive(Debug, Clone, thiserror::Error)]
enum LauncherTrouble {
    #[error("the launcher did not start it in time")]
    NotInTime,
    #[error("the launcher ended before the process did")]
    Ended,
    #[error("the launcher answered {0:?}, out of turn")]
    OutOfTurn(Option<Status>),
    #[error("the status pipe: {0}")]
    Pipe(String),
}

/// Waits (with [`STARTED_WITHIN`]) for the first message of a status pipe.
#[allow(unsafe_code, reason = "poll(2) on one descriptor")]
fn first_status(reader: &OwnedFd) -> Result<Status, LauncherTrouble> {
    let deadline = std::time::Instant::now() + STARTED_WITHIN;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut polled = libc::pollfd {
            fd: reader.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one live pollfd, as counted.
        let ready = unsafe { libc::poll(&mut polled, 1, timeout) };
        if ready > 0 {
            break;
        }
        // A signal to the host (a child's end, say) interrupts the wait; it goes on.
        let interrupted =
            ready < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
        if !interrupted || left.is_zero() {
            return Err(LauncherTrouble::NotInTime);
        }
    }
    let mut bytes = [0_u8; STATUS_LEN];
    let copy = reader
        .try_clone()
        .map_err(|error| LauncherTrouble::Pipe(error.to_string()))?;
    std::fs::File::from(copy)
        .read_exact(&mut bytes)
        .map_err(|_| LauncherTrouble::Ended)?;
    Status::decode(bytes).ok_or(LauncherTrouble::OutOfTurn(None))
}

impl Open {
    /// The launcher cannot serve, and this request did not start: `Closed`, so the caller may
    /// start it another way.
    fn refused(&self, message: impl std::fmt::Display) -> SubprocessError {
        self.alive.store(false, Ordering::Relaxed);
        failure(SubprocessErrorKind::Closed, format!("launcher: {message}"))
    }

    /// The launcher cannot serve, and this request may have started: `Failed`, so the caller
    /// does not start it again (dropping the launcher ends whatever it started).
    fn lost(&self, message: impl std::fmt::Display) -> SubprocessError {
        self.alive.store(false, Ordering::Relaxed);
        failure(SubprocessErrorKind::Failed, format!("launcher: {message}"))
    }
}

impl Launcher for Open {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }

    fn spawn(&self, request: SpawnRequest) -> RResult<ProcessBox, SubprocessError> {
        match self.launch(request) {
            Ok(process) => ROk(Process_TO::from_value(process, TD_Opaque)),
            Err(error) => RErr(error),
        }
    }
}

impl Open {
    fn launch(&self, request: SpawnRequest) -> Result<Launched, SubprocessError> {
        let wire = dsh_launcher::Request {
            cwd: match &request.cwd {
                RSome(cwd) => cwd.to_string(),
                RNone => String::new(),
            },
            args: request.args.iter().map(RString::to_string).collect(),
            env: environment_of(&request),
        };
        let bytes = wire
            .encode()
            .map_err(|error| failure(SubprocessErrorKind::Failed, error))?;
        let (stdin_read, stdin_write) = pipe_pair()?;
        let (stdout_read, stdout_write) = pipe_pair()?;
        let (stderr_read, stderr_write) = pipe_pair()?;
        let (status_read, status_write) = pipe_pair()?;
        {
            let socket = dsh_plugin_api::lock(&self.socket);
            let fds = [
                stdin_read.as_fd(),
                stdout_write.as_fd(),
                stderr_write.as_fd(),
                status_write.as_fd(),
            ];
            dsh_launcher::send(socket.as_fd(), &bytes, &fds)
                .map_err(|error| self.refused(error))?;
        }
        drop((stdin_read, stdout_write, stderr_write, status_write));
        let first = first_status(&status_read).map_err(|trouble| match trouble {
            // It ended before its child told its pid: its children end with it.
            LauncherTrouble::Ended => self.refused(trouble),
            other => self.lost(other),
        })?;
        let pid = match first {
            Status::Started(pid) => pid,
            Status::Failed(errno) => {
                let error = std::io::Error::from_raw_os_error(errno);
                return Err(failure(
                    super::subprocess::kind_of(&error),
                    format!("the launcher could not start it: {error}"),
                ));
            }
            other => return Err(self.lost(LauncherTrouble::OutOfTurn(Some(other)))),
        };
        // It runs: a failure from here on ends its group before it is reported.
        let running = |error: std::io::Error| {
            signal_group(pid, libc::SIGKILL);
            self.lost(error)
        };
        let stream = |fd: OwnedFd| pipe::Receiver::from_owned_fd(fd).map_err(running);
        let (stdout, stderr, status) = (
            stream(stdout_read)?,
            stream(stderr_read)?,
            stream(status_read)?,
        );
        match request.stdin {
            RSome(input) => {
                let mut writer = pipe::Sender::from_owned_fd(stdin_write).map_err(running)?;
                tokio::spawn(async move {
                    let _ = writer.write_all(&input).await;
                });
            }
            RNone => drop(stdin_write),
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(pump(stdout, OutputStream::Stdout, sender.clone()));
        tokio::spawn(pump(stderr, OutputStream::Stderr, sender));
        let (ended, exit) = watch::channel(None);
        tokio::spawn(follow_exit(status, ended));
        Ok(Launched {
            pid,
            output: Arc::new(Mutex::new(receiver)),
            exit,
        })
    }
}

/// What the launcher reports when it reaps the child; `Err` when it ended first.
type Ended = Result<ExitStatus, LauncherTrouble>;

async fn follow_exit(mut status: pipe::Receiver, ended: watch::Sender<Option<Ended>>) {
    let mut bytes = [0_u8; STATUS_LEN];
    let result = match status.read_exact(&mut bytes).await {
        Ok(_) => match Status::decode(bytes) {
            Some(Status::Exited(code)) => Ok(ExitStatus {
                code: RSome(code),
                signal: RNone,
            }),
            Some(Status::Signaled(signal)) => Ok(ExitStatus {
                code: RNone,
                signal: RSome(signal),
            }),
            other => Err(LauncherTrouble::OutOfTurn(other)),
        },
        Err(_) => Err(LauncherTrouble::Ended),
    };
    let _ = ended.send(Some(result));
}

struct Launched {
    pid: u32,
    output: Output,
    exit: watch::Receiver<Option<Ended>>,
}

async fn wait_for(
    mut exit: watch::Receiver<Option<Ended>>,
) -> RResult<ExitStatus, SubprocessError> {
    let ended = exit
        .wait_for(Option::is_some)
        .await
        .map(|ended| ended.clone());
    match ended {
        Ok(Some(Ok(status))) => ROk(status),
        Ok(Some(Err(trouble))) => RErr(failure(SubprocessErrorKind::Failed, trouble)),
        _ => RErr(failure(
            SubprocessErrorKind::Failed,
            "the process's status is gone",
        )),
    }
}

impl Process for Launched {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn next_output(&self) -> FfiFuture<ROption<OutputChunk>> {
        next_chunk(self.output.clone())
    }

    fn wait(&self) -> FfiFuture<RResult<ExitStatus, SubprocessError>> {
        wait_for(self.exit.clone()).into_ffi()
    }

    fn terminate(&self, grace_ms: u64) -> FfiFuture<RResult<ExitStatus, SubprocessError>> {
        let (pid, exit) = (self.pid, self.exit.clone());
        async move { terminate_group(pid, grace_ms, || wait_for(exit.clone())).await }.into_ffi()
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // Whatever the caller did, nothing it started outlives its handle.
        signal_group(self.pid, libc::SIGKILL);
    }
}
