//! Editor mode: what Zed, JetBrains, Neovim and the other ACP clients show and ask for, beyond
//! the reference's automation contract. The conversation streams as it happens (`live`), tool
//! calls carry their kind, files, input and result (`calls`), a session's modes are the
//! permission presets and its model a config option (`modes`), stored sessions can be listed,
//! loaded (replayed as updates) and resumed (`sessions`), and a prompt that is a single `/name`
//! line runs that command for the person instead of reaching the model.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dsh_client_protocol::{ClientRequest, CommandList, NoParams, RunCommand};
use dsh_plugin_api::lock;
use dsh_protocol::{ApprovalOutcome, CommandKind, CommandOutcome, TurnEndReason};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::schema::{SessionState, methods};
use crate::server::{AcpSession, Inflight, Mode, Server};
use crate::updates::{
    AvailableCommand, CommandInput, Content, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallUpdate,
};
use crate::wire::Id;

/// The methods only editor mode serves.
pub(crate) fn serves(method: &str) -> bool {
    [
        methods::SESSION_LOAD,
        methods::SESSION_LIST,
        methods::SESSION_RESUME,
        methods::SESSION_SET_MODE,
        methods::SESSION_SET_CONFIG_OPTION,
    ]
    .contains(&method)
}

/// Answers one of the methods [`serves`] names.
pub(crate) fn request(server: &Arc<Server>, id: Id, method: &str, raw: Option<&RawValue>) {
    match method {
        methods::SESSION_LOAD => crate::stored::open(server, id, raw, true),
        methods::SESSION_RESUME => crate::stored::open(server, id, raw, false),
        methods::SESSION_LIST => crate::stored::list(server, id, raw),
        methods::SESSION_SET_MODE => crate::modes::set_mode(server, id, raw),
        _ => crate::options::set_config_option(server, id, raw),
    }
}

/// A session's modes and config options, for the answer that opens it (none in automation
/// mode).
pub(crate) async fn session_state(server: &Server, session: &AcpSession) -> SessionState {
    match server.mode {
        Mode::Automation => SessionState::default(),
        Mode::Editor => SessionState {
            modes: Some(crate::modes::mode_state(
                server,
                &session.id,
                crate::modes::plan_offered(server).await,
            )),
            config_options: Some(crate::options::config_options(server, &session.id).await),
        },
    }
}

/// After a session was opened: the commands a person can run in it.
pub(crate) fn announce(server: &Arc<Server>, session: &Arc<AcpSession>) {
    if server.mode != Mode::Editor {
        return;
    }
    let (server, session) = (server.clone(), session.clone());
    let _ = server.ctx.clone().spawn(async move {
        let listed: Result<CommandList, _> = server
            .door
            .call(&server.ctx, ClientRequest::CommandsList(NoParams {}))
            .await;
        let specs = match listed {
            Ok(listed) if !listed.commands.is_empty() => listed.commands,
            _ => return,
        };
        let available_commands = specs
            .into_iter()
            .map(|spec| AvailableCommand {
                input: spec.usage.map(|hint| CommandInput { hint }),
                name: spec.name,
                description: spec.description,
            })
            .collect();
        server.update(
            &session.id,
            SessionUpdate::AvailableCommandsUpdate { available_commands },
        );
    });
}

/// Runs the command line `line` for the person in `session`: its outcome is the answer's
/// text, and a model or mode it changed is announced.
pub(crate) async fn run_command(
    server: &Arc<Server>,
    session: &Arc<AcpSession>,
    inflight: &Arc<Inflight>,
    line: &str,
) {
    let ran = {
        // A model the command sets is announced below, with the outcome.
        let _choosing = session.editor.choosing_options();
        run_line(server, &session.id, line).await
    };
    let text = match ran {
        Ok(outcome) if outcome.kind == CommandKind::Error => format!("Error: {}", outcome.text),
        Ok(outcome) => outcome.text,
        Err(refused) => format!("Error: {}", refused.message),
    };
    server.update(
        &session.id,
        SessionUpdate::AgentMessageChunk {
            content: Content::text(text),
        },
    );
    crate::options::announce_options(server, &session.id, None);
    lock(&inflight.state).end = Some(TurnEndReason::Completed);
}

/// While it lives, the editor is setting one of its session's options (model, agent preset).
pub(crate) struct ChoosingOptions<'a>(&'a AtomicBool);

impl Drop for ChoosingOptions<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// What editor mode keeps per session.
#[derive(Default)]
pub(crate) struct EditorState {
    inner: Mutex<Inner>,
    /// The editor is setting one of this session's options itself (its answer says so).
    choosing_options: AtomicBool,
}

#[derive(Default)]
struct Inner {
    /// The steps whose text arrived as chunks (their whole message is not sent again).
    streamed: HashSet<(u64, u64)>,
    /// Every call announced, by id.
    calls: HashMap<String, ToolCall>,
    /// Answers given "always", by subject.
    rules: HashMap<String, ApprovalOutcome>,
    /// The changes announced calls were asked to make, until their result.
    asked: HashMap<String, Vec<ToolCallContent>>,
    /// The client's terminal each call's command ran in, until its result.
    terminals: HashMap<String, String>,
}

/// The arguments a rule's subject is read from.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Subject {
    command: Option<String>,
    file_path: Option<String>,
    path: Option<String>,
}

impl EditorState {
    /// Marks the editor as setting one of the session's options itself until the guard drops:
    /// the change that causes (an `agent/route` notice, a logged preset) is not announced, the
    /// editor's answer (or the command's outcome) carrying the options already.
    pub(crate) fn choosing_options(&self) -> ChoosingOptions<'_> {
        self.choosing_options.store(true, Ordering::Release);
        ChoosingOptions(&self.choosing_options)
    }

    /// Whether the editor is setting one of the session's options itself.
    pub(crate) fn is_choosing_options(&self) -> bool {
        self.choosing_options.load(Ordering::Acquire)
    }

    /// What an "always" answer about call `call_id` covers: the tool on the same file, path
    /// or command (the tool alone when it names none).
    pub(crate) fn subject_of(&self, call_id: &str, tool: &str) -> String {
        let inner = lock(&self.inner);
        let subject: Subject = inner
            .calls
            .get(call_id)
            .and_then(|call| call.raw_input.clone())
            .and_then(|input| serde_json::from_value(input).ok())
            .unwrap_or_default();
        // A file or path first: `str_replace_editor`'s `command` is its verb, not a subject.
        match subject.file_path.or(subject.path).or(subject.command) {
            Some(what) => format!("{tool}({what})"),
            None => tool.to_owned(),
        }
    }

    pub(crate) fn ruled(&self, subject: &str) -> Option<ApprovalOutcome> {
        lock(&self.inner).rules.get(subject).copied()
    }

    pub(crate) fn rule(&self, subject: String, outcome: ApprovalOutcome) {
        lock(&self.inner).rules.insert(subject, outcome);
    }

    /// The call as a permission question shows it.
    pub(crate) fn call_view(&self, call_id: &str) -> ToolCallUpdate {
        let inner = lock(&self.inner);
        let call = inner.calls.get(call_id);
        ToolCallUpdate {
            tool_call_id: call_id.to_owned(),
            title: call.map(|call| call.title.clone()),
            kind: call.map(|call| call.kind),
            locations: call
                .map(|call| call.locations.clone())
                .filter(|locations| !locations.is_empty()),
            raw_input: call.and_then(|call| call.raw_input.clone()),
            ..ToolCallUpdate::default()
        }
    }

    /// Keeps an announced call, and the changes it was asked to make (if any).
    pub(crate) fn remember(&self, call: &ToolCall, asked: Vec<ToolCallContent>) {
        let mut inner = lock(&self.inner);
        inner.calls.insert(call.tool_call_id.clone(), call.clone());
        if !asked.is_empty() {
            inner.asked.insert(call.tool_call_id.clone(), asked);
        }
    }

    /// The changes call `call_id` was asked to make, once (its result came).
    pub(crate) fn asked_changes(&self, call_id: &str) -> Vec<ToolCallContent> {
        lock(&self.inner).asked.remove(call_id).unwrap_or_default()
    }

    /// Call `call_id`'s command runs in the client's terminal `terminal_id`.
    pub(crate) fn ran_in(&self, call_id: &str, terminal_id: &str) {
        let mut inner = lock(&self.inner);
        inner
            .terminals
            .insert(call_id.to_owned(), terminal_id.to_owned());
    }

    /// The client's terminal call `call_id` ran in, once (its result came).
    pub(crate) fn terminal_of(&self, call_id: &str) -> Option<String> {
        lock(&self.inner).terminals.remove(call_id)
    }

    pub(crate) fn streamed(&self, turn: u64, step: u64) {
        lock(&self.inner).streamed.insert((turn, step));
    }

    pub(crate) fn was_streamed(&self, turn: u64, step: u64) -> bool {
        lock(&self.inner).streamed.contains(&(turn, step))
    }
}

/// Runs command line `line` in `session` through the clients service (`commands.run`).
pub(crate) async fn run_line(
    server: &Server,
    session: &str,
    line: &str,
) -> Result<CommandOutcome, crate::door::Refused> {
    server
        .door
        .call(
            &server.ctx,
            ClientRequest::CommandsRun(RunCommand {
                session_id: session.to_owned(),
                line: line.to_owned(),
            }),
        )
        .await
}
