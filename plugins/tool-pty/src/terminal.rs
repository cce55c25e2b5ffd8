//! One interactive bash on a terminal of its own, started through the sandbox's
//! `sandbox_pty` (so it and everything it runs are confined by the session's policy, as
//! `bash -c` is) on the host's terminals. A task on the host runtime reads what the terminal
//! shows into a [`Screen`] for as long as the shell lives; calls wait on it by polling the
//! host's timer, since a plugin owns no runtime of its own. The shell's prompt carries a
//! marker, so a call knows when the shell is back at its prompt, reading its input.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abi_stable::std_types::{RNone, ROption, RSome, RString, RVec};
use dsh_plugin_api::io::piped::ProcessStdinBox;
use dsh_plugin_api::io::pty::{PtyControlBox, PtySize};
use dsh_plugin_api::io::subprocess::{EnvVar, ExitStatus, ProcessBox, SpawnRequest};
use dsh_plugin_api::{Context, SeamError, lock};
use dsh_sandbox_seam::SandboxPtyService;

use crate::screen::{PROMPT_MARKER, Screen};

/// The prompt a shell shows (after its invisible marker).
pub(crate) const PROMPT: &str = "dsh> ";

/// How often a waiting call looks at the screen: at first every millisecond (most commands
/// are done in a few), then less often, down to every [`POLL`].
const FIRST_POLL: Duration = Duration::from_millis(1);
const POLL: Duration = Duration::from_millis(20);

/// How long a closed shell gets between the hangup and `SIGKILL`.
const CLOSE_GRACE_MS: u64 = 500;

/// Why a wait returned (the reference's `TerminalWaitReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitReason {
    /// The shell is back at its prompt, reading its input.
    StdinRead,
    /// No output for the silence period.
    InferredIdle,
    Timeout,
    /// The shell itself exited.
    SessionExit,
    Cancelled,
}

impl WaitReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::StdinRead => "stdin_read",
            Self::InferredIdle => "inferred_idle",
            Self::Timeout => "timeout",
            Self::SessionExit => "session_exit",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What a wait stops at besides its deadline, the shell's exit and cancellation.
pub(crate) enum Until {
    /// The next prompt, or `silence` without output.
    Prompt { silence: Duration },
    /// A marker whose payload starts with this prefix.
    Marker(String),
}

/// How a wait ended: why, where the screen was, and the marker's payload when one ended it.
pub(crate) struct Waited {
    pub(crate) reason: WaitReason,
    pub(crate) end: u64,
    pub(crate) payload: Option<String>,
}

struct State {
    screen: Screen,
    last_output: Instant,
    /// Set once the terminal's output ended and the shell was reaped.
    exit: Option<ExitStatus>,
    ended: bool,
}

pub(crate) struct Terminal {
    process: ProcessBox,
    input: ProcessStdinBox,
    control: PtyControlBox,
    state: Mutex<State>,
    /// Prompts seen when input was last typed.
    typed_at: std::sync::atomic::AtomicU64,
    /// Set while a send (in the foreground or as a job) waits on the terminal: one at a time,
    /// or each would take the other's output and prompt for its own.
    sending: AtomicBool,
}

/// The right to send to a terminal, given back when dropped.
pub(crate) struct Sending(Arc<Terminal>);

impl Drop for Sending {
    fn drop(&mut self) {
        self.0.sending.store(false, Ordering::Release);
    }
}

/// Where and how a shell starts.
pub(crate) struct Start<'a> {
    pub(crate) session: &'a str,
    /// The session's working directory: the sandbox's workspace root.
    pub(crate) root: &'a str,
    /// Where the shell starts (default: `root`).
    pub(crate) cwd: &'a str,
    pub(crate) call_id: &'a str,
}

impl Terminal {
    /// Starts a shell and its reader.
    pub(crate) fn start(
        ctx: &Context,
        sandbox: &SandboxPtyService,
        start: &Start<'_>,
    ) -> Result<Arc<Self>, SeamError> {
        let mut env = vec![
            var("PS1", &format!("\\[\\e]{PROMPT_MARKER}\\a\\]{PROMPT}")),
            var("PS2", ""),
            var("TERM", "dumb"),
            // History would be written to the user's home when the shell exits.
            var("HISTFILE", ""),
            var("DSH_SHELL", "1"),
        ];
        if !start.session.is_empty() {
            env.push(var("DSH_SESSION_ID", start.session));
        }
        if let Ok(home) = std::env::var("DSH_HOME") {
            env.push(var("DSH_HOME", &home));
        }
        let request = SpawnRequest {
            program: "bash".into(),
            args: ["--noprofile", "--norc", "--noediting", "-i"]
                .into_iter()
                .map(RString::from)
                .collect::<RVec<_>>(),
            cwd: RSome(RString::from(start.cwd)),
            env: RVec::from(env),
            remove_env: RVec::from(vec![
                RString::from("DSH_*"),
                RString::from("PROMPT_COMMAND"),
                RString::from("BASH_ENV"),
                RString::from("ENV"),
            ]),
            stdin: RNone,
        };
        let pty = sandbox
            .spawn_pty(
                start.session.into(),
                start.root.into(),
                start.call_id.into(),
                request,
                PtySize {
                    rows: 50,
                    cols: 200,
                },
            )
            .into_result()?;
        let terminal = Arc::new(Self {
            process: pty.process,
            input: pty.input,
            control: pty.control,
            state: Mutex::new(State {
                screen: Screen::default(),
                last_output: Instant::now(),
                exit: None,
                ended: false,
            }),
            typed_at: std::sync::atomic::AtomicU64::new(0),
            sending: AtomicBool::new(false),
        });
        let reader = terminal.clone();
        ctx.spawn(async move { reader.read_all().await })
            .map_err(|error| SeamError::failed(error.to_string()))?;
        Ok(terminal)
    }

    /// Reads the terminal until every process holding it is gone: the shell exited, or was
    /// closed (which ends its whole session). Until then this task owns the terminal too.
    async fn read_all(self: Arc<Self>) {
        while let RSome(chunk) = self.process.next_output().await {
            let mut state = lock(&self.state);
            state.screen.push(&chunk.bytes);
            state.last_output = Instant::now();
        }
        let status = self.process.wait().await;
        let mut state = lock(&self.state);
        state.exit = status.into_result().ok();
        state.ended = true;
    }

    /// The right to send, unless another send holds it.
    pub(crate) fn try_send(self: &Arc<Self>) -> Option<Sending> {
        self.sending
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Sending(self.clone()))
    }

    /// The screen's position now.
    pub(crate) fn position(&self) -> u64 {
        lock(&self.state).screen.position()
    }

    pub(crate) fn prompts(&self) -> u64 {
        lock(&self.state).screen.prompts
    }

    /// Runs `f` on the screen.
    pub(crate) fn with_screen<T>(&self, f: impl FnOnce(&Screen) -> T) -> T {
        f(&lock(&self.state).screen)
    }

    /// `None` while the shell runs; how it ended once it did.
    pub(crate) fn exited(&self) -> Option<Option<ExitStatus>> {
        let state = lock(&self.state);
        state.ended.then_some(state.exit)
    }

    pub(crate) async fn type_text(&self, text: &str) -> Result<(), SeamError> {
        self.typed_at.store(self.prompts(), Ordering::Release);
        self.input
            .write(RVec::from(text.as_bytes().to_vec()))
            .await
            .into_result()
            .map_err(|error| SeamError::failed(error.to_string()))
    }

    /// Waits from `from` (a position) with `prompts` prompts seen before, until `until`, the
    /// shell's exit, `timeout` or `cancelled`.
    pub(crate) async fn wait(
        &self,
        ctx: &Context,
        from: u64,
        prompts: u64,
        until: &Until,
        timeout: Duration,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Waited {
        let started = Instant::now();
        let mut poll = FIRST_POLL;
        loop {
            {
                let state = lock(&self.state);
                let end = state.screen.position();
                let done = |reason| Waited {
                    reason,
                    end,
                    payload: None,
                };
                match until {
                    Until::Marker(prefix) => {
                        if let Some((at, payload)) = state.screen.marker_after(from, prefix) {
                            return Waited {
                                reason: WaitReason::StdinRead,
                                end: at,
                                payload: Some(payload),
                            };
                        }
                    }
                    Until::Prompt { silence } => {
                        if state.screen.prompts > prompts {
                            return done(WaitReason::StdinRead);
                        }
                        let quiet = state.last_output.elapsed() >= *silence
                            && started.elapsed() >= *silence;
                        if quiet && !state.ended {
                            return done(WaitReason::InferredIdle);
                        }
                    }
                }
                if state.ended {
                    return done(WaitReason::SessionExit);
                }
                if cancelled() {
                    return done(WaitReason::Cancelled);
                }
                if started.elapsed() >= timeout {
                    return done(WaitReason::Timeout);
                }
            }
            ctx.sleep(poll).await;
            poll = (poll * 2).min(POLL);
        }
    }

    /// Sends `signal` to the terminal's foreground process group; answers the group.
    pub(crate) fn signal(&self, signal: i32) -> Result<u32, SeamError> {
        self.control
            .signal_foreground(signal)
            .into_result()
            .map_err(|error| SeamError::failed(error.to_string()))
    }

    /// Whether the shell is at its prompt (a prompt came after the last input), so that a
    /// signal to the foreground group would reach the shell itself. Judged from the screen,
    /// since inside the sandbox's pid namespace the shell's group is not the process the
    /// host started.
    pub(crate) fn foreground_is_shell(&self) -> bool {
        self.prompts() > self.typed_at.load(Ordering::Acquire)
    }

    /// Ends the shell and everything it started (so the reader stops too).
    pub(crate) async fn close(&self) {
        let _ = self.process.terminate(CLOSE_GRACE_MS).await;
    }

    /// Closes the shell in a task of its own (for a caller that cannot wait). When the row is
    /// going away its tasks are dropped instead, the reader's with them, and the last owner's
    /// drop ends the shell's session.
    pub(crate) fn abandon(self: &Arc<Self>, ctx: &Context) {
        let terminal = self.clone();
        let _ = ctx.spawn(async move { terminal.close().await });
    }
}

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: value.into(),
    }
}

/// How the shell ended, for a result: `exited (code N)`, `killed by signal SIG` or `exited`.
pub(crate) fn describe_exit(status: Option<ExitStatus>) -> String {
    match status.map(|status| (status.code, status.signal)) {
        Some((ROption::RSome(code), _)) => format!("exited (code {code})"),
        Some((ROption::RNone, ROption::RSome(signal))) => {
            format!("killed by signal {}", signal_name(signal))
        }
        _ => "exited".to_owned(),
    }
}

pub(crate) fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".to_owned(),
        2 => "SIGINT".to_owned(),
        9 => "SIGKILL".to_owned(),
        15 => "SIGTERM".to_owned(),
        20 => "SIGTSTP".to_owned(),
        other => format!("signal {other}"),
    }
}
