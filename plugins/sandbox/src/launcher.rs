//! The row's launcher: one `dsh-sandbox-exec --serve` kept for the row (the host's
//! `subprocess_launcher`), which forks each confined command's front instead of the host
//! executing `dsh-sandbox-exec` for each. What the front does is the same either way (the
//! request's arguments are its command line); the launcher saves the `exec` of the front and
//! the control group joins, which it made once. A launcher found dead is replaced (once per
//! command); where none can serve (no service, a request it refused, one that keeps dying),
//! the command starts as before, and after a few launchers the row stops opening more.

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::LogLevel;
use dsh_plugin_api::io::launcher::{LAUNCHER_SERVICE, LauncherBox, LaunchersService};
use dsh_plugin_api::io::subprocess::{
    ProcessBox, SpawnRequest, SubprocessError, SubprocessErrorKind,
};
use dsh_plugin_api::lock;

use crate::service::{Backend, SandboxImpl};

/// Launchers opened for the row before it starts every command itself.
const OPENS: u32 = 3;

#[derive(Default)]
enum State {
    #[default]
    Closed,
    Open(LauncherBox),
}

/// The row's launcher, opened on the first confined command.
#[derive(Default)]
pub(crate) struct Launcher {
    state: std::sync::Mutex<State>,
    opened: std::sync::atomic::AtomicU32,
}

impl Launcher {
    /// Ends the launcher (the row is disposed).
    pub(crate) fn clear(&self) {
        let state = std::mem::take(&mut *lock(&self.state));
        drop(state);
    }
}

impl SandboxImpl {
    /// The front program of this row's backend.
    fn front(&self) -> Option<&str> {
        match &self.backend {
            Backend::Bwrap { exec, .. } | Backend::Landlock(exec) => Some(exec),
            Backend::Unavailable(_) => None,
        }
    }

    /// Starts `request`, a confined command whose program is the front, through the
    /// launcher: `Ok(None)` when it was not started (start it as before), `Err` when it may
    /// have started and failed (the launcher it went to is dropped, which ends it; it is not
    /// started again).
    pub(crate) fn launched(
        &self,
        request: &SpawnRequest,
    ) -> Result<Option<ProcessBox>, SubprocessError> {
        let Some(front) = self.front() else {
            return Ok(None);
        };
        if !self.settings.launcher || request.program.as_str() != front {
            return Ok(None);
        }
        let mut state = lock(&self.launcher.state);
        // A launcher found dead is replaced once, for this command.
        for _ in 0..2 {
            if let State::Closed = &*state {
                *state = self.open(front).map_or(State::Closed, State::Open);
            }
            let State::Open(launcher) = &*state else {
                return Ok(None);
            };
            match launcher.spawn(request.clone()).into_result() {
                Ok(process) => return Ok(Some(process)),
                Err(error) => {
                    let gone = !launcher.alive();
                    self.ctx.log(
                        LogLevel::Warn,
                        &format!("the sandbox's launcher did not start a command ({error})"),
                    );
                    if gone {
                        *state = State::Closed;
                    }
                    if error.kind != SubprocessErrorKind::Closed {
                        return Err(error);
                    }
                    if !gone {
                        return Ok(None);
                    }
                }
            }
        }
        Ok(None)
    }

    fn open(&self, front: &str) -> Option<LauncherBox> {
        use std::sync::atomic::Ordering;
        if self.launcher.opened.fetch_add(1, Ordering::Relaxed) >= OPENS {
            return None;
        }
        let launchers = self
            .ctx
            .get::<LaunchersService>(LAUNCHER_SERVICE)
            .ok()
            .flatten()?;
        let mut args = vec![RString::from("--serve")];
        args.extend(self.join_arguments().into_iter().map(RString::from));
        let request = SpawnRequest {
            program: RString::from(front),
            args: RVec::from(args),
            cwd: abi_stable::std_types::RSome(RString::from("/")),
            // Each command brings its whole environment; the launcher needs none.
            remove_env: RVec::from(vec![RString::from("*")]),
            ..SpawnRequest::default()
        };
        match launchers.open(request).into_result() {
            Ok(launcher) => {
                self.ctx.log(
                    LogLevel::Debug,
                    &format!("sandbox launcher started (pid {})", launcher.pid()),
                );
                Some(launcher)
            }
            Err(error) => {
                self.ctx.log(
                    LogLevel::Warn,
                    &format!("no sandbox launcher ({error}); each command starts its front"),
                );
                None
            }
        }
    }
}
