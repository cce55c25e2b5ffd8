//! Enclaves: one bubblewrap sandbox kept running per session and mount layout, which the
//! session's confined commands enter (`dsh-sandbox-exec --enclave`) instead of starting
//! bubblewrap each time. Starting bubblewrap (a user namespace, every bind mount, `/dev` and
//! `/proc`) is most of what confining a command costs; entering its namespaces and making the
//! command's own pid, mount and IPC namespaces under them is a fraction of it (see
//! `dsh-sandbox-exec`'s `enclave`).
//!
//! An enclave is named by its mount layout: the bubblewrap arguments the policy gives at the
//! moment of the call, so a protected path that appears, a root granted or a mode changed makes
//! the next command start (and use) a new one; nothing a command sees is decided by an older
//! policy. An enclave goes when its session's layout changes, after [`IDLE`] without a new
//! command, or (the least recently used first) when more than [`KEPT`] are kept. A command
//! already running in it goes on: it holds the namespaces it entered, and its pid namespace is
//! its own, not the enclave's. Its holder (`sleep`) dies with the host, and the enclave with it.

use std::time::{Duration, Instant};

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::io::subprocess::{EnvVar, ProcessBox, SpawnRequest};
use dsh_plugin_api::lock;
use dsh_protocol::{SandboxMode, SandboxPolicy};

use crate::bwrap;
use crate::landlock::Inner;
use crate::service::{Backend, SandboxImpl};

/// Where an enclave's holder program is looked for.
const HOLDER_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The program an enclave holds open (found by its name by `dsh-sandbox-exec`).
pub(crate) const HOLDER: [&str; 2] = ["sleep", "infinity"];

/// Enclaves kept at once, for all sessions.
const KEPT: usize = 8;

/// How long an enclave no new command entered is kept.
const IDLE: Duration = Duration::from_secs(600);

/// One running enclave.
struct Enclave {
    session: String,
    /// Its mount layout (the bubblewrap arguments before the command's own).
    layout: String,
    /// Held for its drop, which ends the holder's process group and so the enclave.
    _holder: ProcessBox,
    pid: u32,
    start: u64,
    last_used: Instant,
}

impl Enclave {
    /// Whether its bubblewrap still runs (and is still the process of that pid).
    fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// Where a command may run: the enclave's bubblewrap pid and start time.
pub(crate) struct Ticket {
    pub(crate) pid: u32,
    pub(crate) start: u64,
}

/// The start time of process `pid` (field 22 of its `stat`), which tells it from a later
/// process given the same pid.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    use std::io::Read;
    // One read: `/proc` says its files are empty, so reading to the end would grow a small
    // buffer read by read (six calls for one line, on every confined command).
    let mut line = [0_u8; 1024];
    let read = std::fs::File::open(format!("/proc/{pid}/stat"))
        .and_then(|mut file| file.read(&mut line))
        .ok()?;
    let stat = std::str::from_utf8(&line[..read]).ok()?;
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The enclaves of this sandbox row.
#[derive(Default)]
pub(crate) struct Enclaves {
    kept: std::sync::Mutex<Vec<Enclave>>,
}

impl Enclaves {
    /// A ticket into `session`'s enclave of `layout`, started with `start` (which answers its
    /// holder's process) when there is none; `None` when it cannot be started, and the command
    /// should start bubblewrap itself.
    pub(crate) fn ticket(
        &self,
        session: &str,
        layout: &str,
        start: impl FnOnce() -> Option<ProcessBox>,
    ) -> Option<Ticket> {
        // Dropped after the lock is let go: dropping a holder ends its process group.
        let mut gone = Vec::new();
        let ticket = {
            let mut kept = lock(&self.kept);
            let now = Instant::now();
            let (stale, live): (Vec<Enclave>, Vec<Enclave>) =
                std::mem::take(&mut *kept).into_iter().partition(|enclave| {
                    !enclave.alive()
                        || now.duration_since(enclave.last_used) > IDLE
                        || (enclave.session == session && enclave.layout != layout)
                });
            *kept = live;
            gone.extend(stale);
            let found = kept
                .iter()
                .position(|enclave| enclave.session == session && enclave.layout == layout);
            let at = match found {
                Some(at) => Some(at),
                None => {
                    if kept.len() >= KEPT {
                        let oldest = (0..kept.len()).min_by_key(|&at| kept[at].last_used);
                        gone.extend(oldest.map(|at| kept.remove(at)));
                    }
                    start().and_then(|holder| {
                        let pid = holder.pid();
                        let start = start_time(pid)?;
                        kept.push(Enclave {
                            session: session.to_owned(),
                            layout: layout.to_owned(),
                            _holder: holder,
                            pid,
                            start,
                            last_used: now,
                        });
                        Some(kept.len() - 1)
                    })
                }
            };
            at.map(|at| {
                let enclave = &mut kept[at];
                enclave.last_used = now;
                Ticket {
                    pid: enclave.pid,
                    start: enclave.start,
                }
            })
        };
        drop(gone);
        ticket
    }

    /// Ends every enclave (the row is disposed): a holder's process group ends when its
    /// handle is dropped.
    pub(crate) fn clear(&self) {
        let all = std::mem::take(&mut *lock(&self.kept));
        drop(all);
    }
}

impl SandboxImpl {
    /// Whether a command under `policy` may run in an enclave: not where each command gets a
    /// private `/tmp` of its own.
    pub(crate) fn enclave_serves(&self, policy: &SandboxPolicy) -> bool {
        self.settings.enclaves
            && !self.settings.fresh_tmp
            && policy.mode == SandboxMode::WorkspaceWrite
    }

    /// A ticket into `session`'s enclave of `layout`, starting it (its holder under the same
    /// wrappers as any command) when there is none.
    pub(crate) fn enclave_ticket(
        &self,
        session: &str,
        policy: &SandboxPolicy,
        layout: &[String],
    ) -> Option<Ticket> {
        let Backend::Bwrap { bwrap, exec, .. } = &self.backend else {
            return None;
        };
        let key = layout.join("\0");
        self.enclaves.ticket(session, &key, || {
            let holder: Vec<String> = HOLDER
                .iter()
                .map(|arg| (*arg).to_owned())
                .collect();
            let command = bwrap::Command {
                cwd: "/",
                env: &[],
                argv: &holder,
            };
            let mut bwrap_args = layout.to_vec();
            bwrap_args.extend(bwrap::command_arguments(&command));
            let inner = Inner {
                policy,
                limits: &self.settings.limits,
                env: &[],
                program: HOLDER[0],
                args: &holder[1..],
            };
            let argv = crate::landlock::front_arguments(
                bwrap,
                &inner,
                &self.join_arguments(),
                bwrap_args,
            );
            // The holder needs no variable of the host's (no secret lingers in it), only where
            // its program is.
            let request = SpawnRequest {
                program: RString::from(exec.as_str()),
                args: argv.into_iter().map(RString::from).collect(),
                cwd: abi_stable::std_types::RSome(RString::from("/")),
                env: RVec::from(vec![EnvVar {
                    name: RString::from("PATH"),
                    value: RString::from(HOLDER_PATH),
                }]),
                remove_env: RVec::from(vec![RString::from("*")]),
                ..SpawnRequest::default()
            };
            match self.subprocess.spawn(request).into_result() {
                Ok(holder) => {
                    self.ctx.log(
                        dsh_plugin_api::LogLevel::Debug,
                        &format!("session {session}: enclave started (pid {})", holder.pid()),
                    );
                    Some(holder)
                }
                Err(error) => {
                    self.ctx.log(
                        dsh_plugin_api::LogLevel::Warn,
                        &format!("session {session}: no enclave ({error}); its commands start bubblewrap each"),
                    );
                    None
                }
            }
        })
    }
}
