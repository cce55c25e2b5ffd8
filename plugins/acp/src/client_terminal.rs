//! The client's terminal for the shell commands of this connection's sessions (the
//! `client_terminal` service), in editor mode where the row's `clientTerminal` asks for it and
//! the client said at `initialize` that it has terminals. The shell tool hands over only the
//! commands of full-access sessions (see the service's docs). A command is `terminal/create`d,
//! shown in its tool call at once (`{type: terminal}` content, so the editor embeds it live),
//! waited for (`terminal/wait_for_exit`) against the call's timeout and cancellation, killed
//! when either fires, and its output read (`terminal/output`) before the terminal is released;
//! the finished call keeps showing it. A run dropped half-way (its turn cancelled) still kills
//! and releases its terminal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, ROption, RResult, RStr, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::io::client_terminal::{
    CLIENT_TERMINAL_SERVICE, ClientTerminal, ClientTerminal_TO, TerminalCommand, TerminalOutcome,
};
use dsh_plugin_api::{PluginError, SeamError, lock};
use serde::{Deserialize, Serialize};

use crate::server::{AcpSession, Server};
use crate::updates::{SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate};
use crate::wire::CallError;

const CREATE: &str = "terminal/create";
const WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
const KILL: &str = "terminal/kill";
const OUTPUT: &str = "terminal/output";
const RELEASE: &str = "terminal/release";

/// How long the requests after a command's end wait for the client (a client that does not
/// answer them must not hold the call).
const AFTERWARDS: Duration = Duration::from_secs(5);

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Create {
    session_id: String,
    command: &'static str,
    args: [String; 2],
    env: Vec<Variable>,
    cwd: String,
    output_byte_limit: u64,
}

#[derive(Serialize)]
struct Variable {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    terminal_id: String,
}

/// The params of the requests about one terminal.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Terminal<'a> {
    session_id: &'a str,
    terminal_id: &'a str,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Exit {
    exit_code: Option<u32>,
    signal: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    output: String,
    #[serde(default)]
    truncated: bool,
    #[serde(default)]
    exit_status: Option<Exit>,
}

/// Offers the client's terminal as the `client_terminal` service, for as long as the row runs.
pub(crate) fn provide(server: &Arc<Server>) -> Result<(), PluginError> {
    let terminal = EditorTerminal {
        server: Arc::downgrade(server),
    };
    server.ctx.provide(
        CLIENT_TERMINAL_SERVICE,
        ClientTerminal_TO::from_value(terminal, TD_Opaque),
    )
}

struct EditorTerminal {
    server: Weak<Server>,
}

impl EditorTerminal {
    /// The connection and the session, while the session is the connection's, it is open
    /// and its client has terminals.
    fn held(&self, session: &str) -> Option<(Arc<Server>, Arc<AcpSession>)> {
        let server = self.server.upgrade()?;
        if !lock(&server.client).terminal {
            return None;
        }
        let session = server.editor_session(session)?;
        Some((server, session))
    }
}

impl ClientTerminal for EditorTerminal {
    fn serves(&self, session: RStr<'_>) -> bool {
        self.held(session.as_str()).is_some()
    }

    fn run(
        &self,
        command: TerminalCommand,
        cancel: CancelBox,
    ) -> FfiFuture<RResult<TerminalOutcome, SeamError>> {
        let held = self.held(command.session.as_str());
        async move {
            let Some((server, session)) = held else {
                return RErr(SeamError::unavailable(format!(
                    "session {} has no client terminal",
                    command.session
                )));
            };
            match run(&server, &session, &command, &cancel).await {
                Ok(outcome) => ROk(outcome),
                Err(error) => RErr(error),
            }
        }
        .into_ffi()
    }
}

/// How the wait for the command's end ended.
enum Ended {
    Exited(Exit),
    TimedOut,
    Cancelled,
    /// The client answered the wait with an error.
    Unknown,
}

async fn run(
    server: &Arc<Server>,
    session: &Arc<AcpSession>,
    command: &TerminalCommand,
    cancel: &CancelBox,
) -> Result<TerminalOutcome, SeamError> {
    let id = session.id.as_str();
    let create = Create {
        session_id: id.to_owned(),
        command: "bash",
        args: ["-c".to_owned(), command.command.to_string()],
        env: command
            .env
            .iter()
            .map(|var| Variable {
                name: var.name.to_string(),
                value: var.value.to_string(),
            })
            .collect(),
        cwd: command.cwd.to_string(),
        output_byte_limit: command.output_limit,
    };
    // Its requests are about the terminal, not withdrawn with the session's questions when
    // its prompt is cancelled: the cancel is watched here, and a terminal the client made
    // must be known to be killed.
    let subject = format!("terminal of {id}");
    // The call's timeout counts from here, the terminal's creation included.
    let mut deadline = std::pin::pin!(server.ctx.sleep(Duration::from_millis(command.timeout_ms)));
    let mut creating = {
        let (server, subject) = (server.clone(), subject.clone());
        Box::pin(async move {
            server
                .wire
                .request::<_, Created>(&subject, CREATE, create)
                .await
        })
    };
    let stop = first_of(cancel.cancelled(), deadline.as_mut());
    let created = match first_of(creating.as_mut(), stop).await {
        Either::Left(created) => created.map_err(no_terminal)?,
        Either::Right(stopped) => {
            // The client may still make it: it is killed and released once it says so.
            let left = Left {
                server: server.clone(),
                session: id.to_owned(),
                subject: subject.clone(),
                terminal: None,
            };
            let ending = server.endings.begin();
            let _ = server.ctx.spawn(async move {
                let _ending = ending;
                let mut left = left;
                if let Ok(created) = creating.await {
                    left.terminal = Some(created.terminal_id);
                }
            });
            return Ok(unstarted(matches!(stopped, Either::Right(()))));
        }
    };
    let terminal = created.terminal_id;
    // A signal cancels the turn, then waits for this before the wire closes. Made before
    // `left`, so it is dropped after it: a dropped run's terminal is counted throughout.
    let _ending = server.endings.begin();
    let mut left = Left {
        server: server.clone(),
        session: id.to_owned(),
        subject: subject.clone(),
        terminal: Some(terminal.clone()),
    };
    session.editor.ran_in(&command.call_id, &terminal);
    server.update(
        id,
        SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: command.call_id.to_string(),
            status: Some(ToolCallStatus::InProgress),
            content: Some(vec![ToolCallContent::Terminal {
                terminal_id: terminal.clone(),
            }]),
            ..ToolCallUpdate::default()
        }),
    );
    let about = Terminal {
        session_id: id,
        terminal_id: &terminal,
    };
    let waited = server
        .wire
        .request::<_, Exit>(&subject, WAIT_FOR_EXIT, &about);
    let ended = match first_of(waited, first_of(cancel.cancelled(), deadline)).await {
        Either::Left(Ok(exit)) => Ended::Exited(exit),
        Either::Left(Err(CallError::Answered(_))) => Ended::Unknown,
        Either::Left(Err(_)) | Either::Right(Either::Left(())) => Ended::Cancelled,
        Either::Right(Either::Right(())) => Ended::TimedOut,
    };
    if matches!(ended, Ended::TimedOut | Ended::Cancelled) {
        let _ = afterwards::<serde::de::IgnoredAny>(server, &subject, KILL, &about).await;
    }
    let output = afterwards::<Output>(server, &subject, OUTPUT, &about).await;
    let _ = afterwards::<serde::de::IgnoredAny>(server, &subject, RELEASE, &about).await;
    left.terminal = None;
    let (text, truncated, reported) = match output {
        Some(output) => (output.output, output.truncated, output.exit_status),
        None => (String::new(), false, None),
    };
    let (timed_out, cancelled) = (
        matches!(ended, Ended::TimedOut),
        matches!(ended, Ended::Cancelled),
    );
    let exit = match ended {
        Ended::Exited(exit) => exit,
        _ => reported.unwrap_or_default(),
    };
    Ok(TerminalOutcome {
        output: RString::from(text),
        truncated,
        exit_code: exit.exit_code.into(),
        signal: exit.signal.map(RString::from).into(),
        timed_out,
        cancelled,
    })
}

/// Why the client made no terminal: [`SeamError::unavailable`] when it said so (the caller may
/// run the command itself), failed when what it did is unknown.
fn no_terminal(error: CallError) -> SeamError {
    match error {
        CallError::Answered(refused) => {
            SeamError::unavailable(format!("the editor made no terminal: {}", refused.message))
        }
        other => SeamError::failed(format!(
            "the editor's terminal did not start as asked: {other}"
        )),
    }
}

/// The outcome of a command whose terminal was not made before it was cancelled or timed out.
fn unstarted(timed_out: bool) -> TerminalOutcome {
    TerminalOutcome {
        output: RString::new(),
        truncated: false,
        exit_code: ROption::RNone,
        signal: ROption::RNone,
        timed_out,
        cancelled: !timed_out,
    }
}

/// A terminal nobody releases otherwise (its run was dropped half-way, its turn cancelled and
/// the call with it; or the client made it after its call stopped): killed and released when
/// this goes, so the command does not go on in the editor.
struct Left {
    server: Arc<Server>,
    session: String,
    subject: String,
    terminal: Option<String>,
}

impl Drop for Left {
    fn drop(&mut self) {
        let Some(terminal) = self.terminal.take() else {
            return;
        };
        let server = self.server.clone();
        let session = std::mem::take(&mut self.session);
        let subject = std::mem::take(&mut self.subject);
        let ending = server.endings.begin();
        let _ = self.server.ctx.spawn(async move {
            let _ending = ending;
            let about = Terminal {
                session_id: &session,
                terminal_id: &terminal,
            };
            for method in [KILL, RELEASE] {
                let _ =
                    afterwards::<serde::de::IgnoredAny>(&server, &subject, method, &about).await;
            }
        });
    }
}

/// The terminals this connection is still killing or releasing. When a signal stops the host,
/// the connection cancels its turns, which ends their commands' terminals in tasks of their
/// own; the wire closes only once those are done (within the shutdown's bound), else the
/// client heard the kill and never the release.
#[derive(Default)]
pub(crate) struct Endings {
    pending: AtomicUsize,
    done: tokio::sync::Notify,
}

impl Endings {
    /// One terminal's ending, counted until the returned guard goes.
    fn begin(self: &Arc<Self>) -> Ending {
        self.pending.fetch_add(1, Ordering::AcqRel);
        Ending(self.clone())
    }

    /// Resolves once no terminal is being ended.
    pub(crate) async fn settled(&self) {
        loop {
            // Made before the count is read: a wakeup between the two is not lost.
            let notified = self.done.notified();
            if self.pending.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

struct Ending(Arc<Endings>);

impl Drop for Ending {
    fn drop(&mut self) {
        if self.0.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.done.notify_waiters();
        }
    }
}

/// A request after the command's end, answered within [`AFTERWARDS`] or given up.
async fn afterwards<R: serde::de::DeserializeOwned>(
    server: &Arc<Server>,
    subject: &str,
    method: &str,
    about: &Terminal<'_>,
) -> Option<R> {
    let asked = server.wire.request::<_, R>(subject, method, about);
    match first_of(asked, server.ctx.sleep(AFTERWARDS)).await {
        Either::Left(Ok(answer)) => Some(answer),
        _ => None,
    }
}
