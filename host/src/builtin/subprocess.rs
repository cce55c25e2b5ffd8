//! `dsh-host/subprocess`: the `subprocess` service, tokio processes on the host runtime, each in
//! a process group of its own so that terminating a tool call ends everything it started. The
//! same row provides `subprocess_piped` (processes whose stdin stays open, see
//! `dsh_plugin_api::io::piped`), `subprocess_pty` (processes on a terminal, see `pty`) and
//! `subprocess_launcher` (processes a launcher forks, see `launcher`).

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::launcher::{LAUNCHER_SERVICE, Launchers_TO};
use dsh_plugin_api::io::piped::{
    PIPED_SUBPROCESS_SERVICE, PipedProcess, PipedSubprocess, PipedSubprocess_TO, ProcessStdin,
    ProcessStdin_TO,
};
use dsh_plugin_api::io::pty::PTY_SUBPROCESS_SERVICE;
use dsh_plugin_api::io::subprocess::{
    ExitStatus, OutputChunk, OutputStream, Process, Process_TO, ProcessBox, SUBPROCESS_SERVICE,
    SpawnRequest, Subprocess, Subprocess_TO, SubprocessError, SubprocessErrorKind,
};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc};

pub(crate) struct SubprocessPlugin;

impl Plugin for SubprocessPlugin {
    const NAME: &'static str = "subprocess";
    const PROVIDES: &'static [&'static str] = &[
        SUBPROCESS_SERVICE,
        PIPED_SUBPROCESS_SERVICE,
        PTY_SUBPROCESS_SERVICE,
        LAUNCHER_SERVICE,
    ];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.provide(
            SUBPROCESS_SERVICE,
            Subprocess_TO::from_value(Launcher, TD_Opaque),
        )?;
        ctx.provide(
            PIPED_SUBPROCESS_SERVICE,
            PipedSubprocess_TO::from_value(Launcher, TD_Opaque),
        )?;
        ctx.provide(
            LAUNCHER_SERVICE,
            Launchers_TO::from_value(super::launcher::Opener, TD_Opaque),
        )?;
        ctx.provide(PTY_SUBPROCESS_SERVICE, super::pty::service())
    }
}

struct Launcher;

pub(super) fn failure(
    kind: SubprocessErrorKind,
    message: impl std::fmt::Display,
) -> SubprocessError {
    SubprocessError::new(kind, message.to_string())
}

/// The class of an operating system's refusal to start or feed a process.
pub(super) fn kind_of(error: &std::io::Error) -> SubprocessErrorKind {
    match error.kind() {
        std::io::ErrorKind::NotFound => SubprocessErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied => SubprocessErrorKind::PermissionDenied,
        std::io::ErrorKind::BrokenPipe => SubprocessErrorKind::Closed,
        _ => SubprocessErrorKind::Failed,
    }
}

fn removed(name: &str, patterns: &RVec<RString>) -> bool {
    patterns
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern.as_str(),
        })
}

/// Sends `signal` to every process of the group led by `pgid`.
pub(super) fn signal_group(pgid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    #[allow(unsafe_code, reason = "kill(2) on a process group this host started")]
    // SAFETY: plain syscall; a negative pid addresses the group, which exists or yields ESRCH.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

impl Subprocess for Launcher {
    fn spawn(&self, request: SpawnRequest) -> RResult<ProcessBox, SubprocessError> {
        start(request, false).map(|(process, _)| Process_TO::from_value(process, TD_Opaque))
    }
}

impl PipedSubprocess for Launcher {
    fn spawn_piped(&self, request: SpawnRequest) -> RResult<PipedProcess, SubprocessError> {
        start(request, true).map(|(process, pipe)| PipedProcess {
            process: Process_TO::from_value(process, TD_Opaque),
            stdin: ProcessStdin_TO::from_value(
                Stdin {
                    pipe: pipe.unwrap_or_default(),
                },
                TD_Opaque,
            ),
        })
    }
}

/// Starts `request`; with `keep_stdin` its stdin is piped and handed back open (after the
/// request's own bytes), otherwise it gets those bytes and is closed, or is empty.
fn start(
    request: SpawnRequest,
    keep_stdin: bool,
) -> RResult<(Running, Option<Pipe>), SubprocessError> {
    let mut command = command_of(&request);
    command
        .stdin(if keep_stdin || request.stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let spawned = command.spawn();
    started(request, keep_stdin, spawned)
}

/// The command of `request`: program, arguments, directory and environment (the caller
/// chooses its stdio).
pub(super) fn command_of(request: &SpawnRequest) -> tokio::process::Command {
    let search = dsh_launcher::search_path(
        request
            .env
            .iter()
            .map(|var| (var.name.as_str(), var.value.as_str())),
        !removed("PATH", &request.remove_env),
    );
    let mut command = match dsh_launcher::resolve_program(&request.program, search.as_deref()) {
        Some(found) => tokio::process::Command::new(found),
        None => tokio::process::Command::new(request.program.as_str()),
    };
    // The name the program sees as its `argv[0]` stays the one asked for.
    command.arg0(request.program.as_str());
    command.args(request.args.iter().map(RString::as_str));
    if let RSome(cwd) = &request.cwd {
        command.current_dir(cwd.as_str());
    }
    for (name, _) in std::env::vars_os() {
        if let Some(name) = name.to_str()
            && removed(name, &request.remove_env)
        {
            command.env_remove(name);
        }
    }
    for var in request.env.iter() {
        command.env(var.name.as_str(), var.value.as_str());
    }
    command
}

/// The whole environment of `request`'s process: the host's (less `remove_env`), then the
/// request's own variables (a later one wins). A variable that is not UTF-8 is left out.
pub(super) fn environment_of(request: &SpawnRequest) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| !removed(name, &request.remove_env))
        .collect();
    for var in request.env.iter() {
        match env.iter_mut().find(|(name, _)| name == var.name.as_str()) {
            Some((_, value)) => *value = var.value.to_string(),
            None => env.push((var.name.to_string(), var.value.to_string())),
        }
    }
    env
}

/// The rest of `start`, once its command is spawned.
fn started(
    request: SpawnRequest,
    keep_stdin: bool,
    spawned: std::io::Result<tokio::process::Child>,
) -> RResult<(Running, Option<Pipe>), SubprocessError> {
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            return RErr(failure(
                kind_of(&error),
                format!("cannot start `{}`: {error}", request.program),
            ));
        }
    };
    let Some(pid) = child.id() else {
        return RErr(failure(
            SubprocessErrorKind::Failed,
            format!("`{}` exited before it could be tracked", request.program),
        ));
    };
    let mut kept = None;
    match (request.stdin, child.stdin.take()) {
        (RSome(input), Some(mut stdin)) if keep_stdin => {
            // Written before anything the caller writes: the pipe is locked here, before
            // the caller has it, and this task releases it once the bytes are written.
            let pipe: Pipe = Arc::new(Mutex::new(None));
            kept = Some(pipe.clone());
            if let Ok(mut held) = pipe.try_lock_owned() {
                tokio::spawn(async move {
                    if stdin.write_all(&input).await.is_ok() {
                        *held = Some(stdin);
                    }
                });
            }
        }
        (RSome(input), Some(mut stdin)) => {
            tokio::spawn(async move {
                let _ = stdin.write_all(&input).await;
            });
        }
        (RNone, Some(stdin)) if keep_stdin => {
            kept = Some(Arc::new(Mutex::new(Some(stdin))));
        }
        _ => {}
    }
    let (sender, receiver) = mpsc::unbounded_channel();
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(pump(stdout, OutputStream::Stdout, sender.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(pump(stderr, OutputStream::Stderr, sender));
    }
    let process = Running {
        pid,
        child: Arc::new(Mutex::new(child)),
        output: Arc::new(Mutex::new(receiver)),
        exited: Arc::new(std::sync::OnceLock::new()),
    };
    ROk((process, kept))
}

/// A kept stdin; `None` once closed (or when the request's own bytes could not be written).
type Pipe = Arc<Mutex<Option<tokio::process::ChildStdin>>>;

struct Stdin {
    pipe: Pipe,
}

impl ProcessStdin for Stdin {
    fn write(&self, bytes: RVec<u8>) -> FfiFuture<RResult<(), SubprocessError>> {
        let pipe = self.pipe.clone();
        async move {
            let mut pipe = pipe.lock().await;
            let Some(stdin) = pipe.as_mut() else {
                return RErr(failure(SubprocessErrorKind::Closed, "stdin is closed"));
            };
            let written = async {
                stdin.write_all(&bytes).await?;
                stdin.flush().await
            };
            match written.await {
                Ok(()) => ROk(()),
                Err(error) => {
                    *pipe = None;
                    RErr(failure(
                        kind_of(&error),
                        format!("writing to stdin failed: {error}"),
                    ))
                }
            }
        }
        .into_ffi()
    }

    fn close(&self) -> FfiFuture<()> {
        let pipe = self.pipe.clone();
        async move {
            pipe.lock().await.take();
        }
        .into_ffi()
    }
}

/// Forwards one output stream until it closes.
pub(super) async fn pump(
    mut stream: impl tokio::io::AsyncRead + Unpin,
    which: OutputStream,
    sender: mpsc::UnboundedSender<OutputChunk>,
) {
    let mut buffer = vec![0_u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let chunk = OutputChunk {
                    stream: which,
                    bytes: RVec::from(buffer[..read].to_vec()),
                };
                if sender.send(chunk).is_err() {
                    break;
                }
            }
        }
    }
}

pub(super) struct Running {
    pub(super) pid: u32,
    pub(super) child: Arc<Mutex<tokio::process::Child>>,
    pub(super) output: Output,
    pub(super) exited: Arc<std::sync::OnceLock<ExitStatus>>,
}

fn status_of(status: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus {
        code: status.code().into(),
        signal: status.signal().into(),
    }
}

async fn wait_for(
    child: &Mutex<tokio::process::Child>,
    exited: &std::sync::OnceLock<ExitStatus>,
) -> RResult<ExitStatus, SubprocessError> {
    if let Some(status) = exited.get() {
        return ROk(*status);
    }
    match child.lock().await.wait().await {
        Ok(status) => {
            let status = *exited.get_or_init(|| status_of(status));
            ROk(status)
        }
        Err(error) => RErr(failure(
            kind_of(&error),
            format!("waiting for the process failed: {error}"),
        )),
    }
}

impl Process for Running {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn next_output(&self) -> FfiFuture<ROption<OutputChunk>> {
        next_chunk(self.output.clone())
    }

    fn wait(&self) -> FfiFuture<RResult<ExitStatus, SubprocessError>> {
        let (child, exited) = (self.child.clone(), self.exited.clone());
        async move { wait_for(&child, &exited).await }.into_ffi()
    }

    fn terminate(&self, grace_ms: u64) -> FfiFuture<RResult<ExitStatus, SubprocessError>> {
        let (pid, child, exited) = (self.pid, self.child.clone(), self.exited.clone());
        async move { terminate_group(pid, grace_ms, || wait_for(&child, &exited)).await }.into_ffi()
    }
}

/// The next chunk of a process's output (both streams, in arrival order); `RNone` once both
/// closed.
pub(super) fn next_chunk(output: Output) -> FfiFuture<ROption<OutputChunk>> {
    async move {
        match output.lock().await.recv().await {
            Some(chunk) => RSome(chunk),
            None => RNone,
        }
    }
    .into_ffi()
}

/// What a process's output pumps send to.
pub(super) type Output = Arc<Mutex<mpsc::UnboundedReceiver<OutputChunk>>>;

/// SIGTERM to the process group led by `pid`, `wait` for up to `grace_ms`, then SIGKILL to
/// whatever of the group is left; the end `wait` reports.
pub(super) async fn terminate_group<F>(
    pid: u32,
    grace_ms: u64,
    wait: impl Fn() -> F,
) -> RResult<ExitStatus, SubprocessError>
where
    F: std::future::Future<Output = RResult<ExitStatus, SubprocessError>>,
{
    signal_group(pid, libc::SIGTERM);
    let waited = tokio::time::timeout(Duration::from_millis(grace_ms), wait()).await;
    // The leader may be gone while others of its group live on: they get SIGKILL too.
    signal_group(pid, libc::SIGKILL);
    match waited {
        Ok(status) => status,
        Err(_) => wait().await,
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Whatever the caller did, nothing it started outlives its handle.
        signal_group(self.pid, libc::SIGKILL);
    }
}
