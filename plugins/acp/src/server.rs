//! The agent side of one ACP connection: the sessions it created (each an agent of the
//! `agents` registry), what each line from the client asks, and the answers. Methods that can
//! wait (creating an agent, a prompt's turn) run as tasks of this plugin's fiber, so a
//! `session/cancel` is read while a prompt runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENTS_SERVICE, AgentsService};
use dsh_client_protocol::{ClientRequest, CreateRequest, Created, McpServerSpec};
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::{Context, Json, Service, lock};
use dsh_protocol::{AbortCause, TurnEndReason};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::editor::EditorState;
use crate::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, Empty, Implementation,
    InitializeRequest, InitializeResponse, McpCapabilities, NewSessionRequest, NewSessionResponse,
    PROTOCOL_VERSION, PromptCapabilities, Served, SessionCapabilities, methods,
};
use crate::wire::{Frame, Id, RpcError, Wire, params, read_frame};

/// Which contract the agent keeps (the row's `mode`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, dsh_plugin_api::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub enum Mode {
    /// What editors show: streamed text and thoughts, tool calls, plans, usage, modes, and the
    /// session methods (load, list, resume).
    #[default]
    Editor,
    /// The reference's automation-only contract, exactly: committed assistant text, one-shot
    /// permission questions, nothing else.
    Automation,
}

/// A prompt in flight: from its admission to its answer.
#[derive(Default)]
pub(crate) struct Inflight {
    /// The id of the queued user message, to find the turn that claims it.
    pub(crate) message_id: String,
    pub(crate) state: Mutex<InflightState>,
    /// Fired once its answer was written.
    pub(crate) answered: Arc<CancelFlag>,
}

#[derive(Default)]
pub(crate) struct InflightState {
    /// The turn that claimed the message.
    pub(crate) turn: Option<u64>,
    /// How that turn ended.
    pub(crate) end: Option<TurnEndReason>,
    pub(crate) cancel_requested: bool,
    /// An agent error in another turn than this prompt's.
    pub(crate) agent_error: Option<String>,
}

/// What a person is told about a session once it is open (its MCP servers that did not start).
pub(crate) struct Note {
    pub(crate) session: String,
    pub(crate) text: String,
}

impl Note {
    /// The note of session `session` made of `notes`, if there are any.
    pub(crate) fn of(session: &str, notes: &[String]) -> Option<Self> {
        (!notes.is_empty()).then(|| Self {
            session: session.to_owned(),
            text: notes.join("\n"),
        })
    }
}

/// One session the client created, loaded or resumed.
pub(crate) struct AcpSession {
    pub(crate) id: String,
    pub(crate) cwd: String,
    pub(crate) inflight: Mutex<Option<Arc<Inflight>>>,
    /// What editor mode keeps per session (tool calls shown, rules answered "always").
    pub(crate) editor: EditorState,
}

/// The connection: its sessions and the one writer of stdout.
pub(crate) struct Server {
    pub(crate) ctx: Context,
    pub(crate) wire: Wire,
    pub(crate) mode: Mode,
    /// The model route of new sessions (`provider`, `model`); empty: no model.
    pub(crate) route: Mutex<(String, String)>,
    pub(crate) sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// Stdin closed or the host is stopping: no new work is taken.
    pub(crate) closed: AtomicBool,
    pub(crate) client: Mutex<ClientCapabilities>,
    /// The agent's connection to the `clients` service, through which the editor's changes to
    /// a session go.
    pub(crate) door: crate::door::Door,
    /// Editor terminals still being killed or released (see `client_terminal`).
    pub(crate) endings: Arc<crate::client_terminal::Endings>,
}

impl Server {
    pub(crate) fn new(ctx: Context, mode: Mode, route: (String, String)) -> Self {
        Self {
            ctx,
            wire: Wire::default(),
            mode,
            route: Mutex::new(route),
            sessions: Mutex::default(),
            closed: AtomicBool::new(false),
            client: Mutex::default(),
            door: crate::door::Door::default(),
            endings: Arc::default(),
        }
    }

    pub(crate) fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// Session `id`, while this is an open connection in editor mode holding it: what the
    /// client's files and terminal serve.
    pub(crate) fn editor_session(&self, id: &str) -> Option<Arc<AcpSession>> {
        if self.mode != Mode::Editor || self.is_closed() {
            return None;
        }
        self.session(id)
    }

    pub(crate) fn agents(&self) -> Result<Service<AgentsService>, RpcError> {
        match self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => Ok(agents),
            _ => Err(RpcError::internal("no `agents` registry is mounted")),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn assert_open(&self) -> Result<(), RpcError> {
        match self.is_closed() {
            true => Err(RpcError::internal("the ACP agent is shutting down")),
            false => Ok(()),
        }
    }

    /// Handles one line from the client.
    pub(crate) fn line(self: &Arc<Self>, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        match read_frame(line) {
            Err((id, error)) => self.wire.fail(id.as_ref(), &error),
            Ok(Frame::Response { id, outcome }) => self.wire.resolve(&id, outcome),
            Ok(Frame::Notification { method, params }) => self.notification(&method, params),
            Ok(Frame::Request { id, method, params }) => self.request(id, &method, params),
        }
    }

    fn notification(self: &Arc<Self>, method: &str, raw: Option<Box<RawValue>>) {
        // A notification is never answered: one this agent does not know is dropped.
        if method == methods::SESSION_CANCEL
            && let Ok(cancel) = params::<CancelNotification>(raw.as_deref())
        {
            self.cancel(&cancel.session_id);
        }
    }

    fn request(self: &Arc<Self>, id: Id, method: &str, raw: Option<Box<RawValue>>) {
        let raw = raw.as_deref();
        match method {
            methods::INITIALIZE => {
                self.answer(&id, params(raw).map(|request| self.initialize(request)))
            }
            methods::AUTHENTICATE => self.wire.respond(&id, Ok(Empty {})),
            methods::SESSION_NEW => match params::<NewSessionRequest>(raw) {
                Ok(request) => self.later_noting(id, move |server| async move {
                    server.new_session(request).await
                }),
                Err(error) => self.wire.fail(Some(&id), &error),
            },
            methods::SESSION_PROMPT => crate::prompt::start(self, id, raw),
            _ if self.mode == Mode::Editor && crate::editor::serves(method) => {
                crate::editor::request(self, id, method, raw)
            }
            _ => self
                .wire
                .fail(Some(&id), &RpcError::method_not_found(method)),
        }
    }

    pub(crate) fn answer<T: Serialize>(&self, id: &Id, result: Result<T, RpcError>) {
        self.wire.respond(id, result);
    }

    /// Runs `work` as a task of this fiber and answers request `id` with what it comes to.
    pub(crate) fn later<T, F, Fut>(self: &Arc<Self>, id: Id, work: F)
    where
        T: Serialize + 'static,
        F: FnOnce(Arc<Self>) -> Fut,
        Fut: std::future::Future<Output = Result<T, RpcError>> + Send + 'static,
    {
        self.later_noting(id, move |server| {
            let running = work(server);
            async move { running.await.map(|answer| (answer, None)) }
        });
    }

    /// [`Server::later`], where the work may also have a note for the person: sent after the
    /// answer (which makes the session known to the client) as a message of that session.
    pub(crate) fn later_noting<T, F, Fut>(self: &Arc<Self>, id: Id, work: F)
    where
        T: Serialize + 'static,
        F: FnOnce(Arc<Self>) -> Fut,
        Fut: std::future::Future<Output = Result<(T, Option<Note>), RpcError>> + Send + 'static,
    {
        let server = self.clone();
        let running = work(self.clone());
        let spawned = self.ctx.spawn(async move {
            match running.await {
                Ok((answer, note)) => {
                    server.wire.respond(&id, Ok(answer));
                    if let Some(note) = note {
                        server.update(
                            &note.session,
                            crate::updates::SessionUpdate::AgentMessageChunk {
                                content: crate::updates::Content::text(note.text),
                            },
                        );
                    }
                }
                Err(error) => server.wire.respond::<()>(&id, Err(error)),
            }
        });
        if let Err(error) = spawned {
            self.wire
                .fail(None, &RpcError::internal(format!("cannot run: {error}")));
        }
    }

    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        *lock(&self.client) = request.client_capabilities;
        // A single-version agent answers its one version whatever the client asked for; the
        // client decides whether it can speak it.
        let _ = request.protocol_version;
        let editor = self.mode == Mode::Editor;
        InitializeResponse {
            protocol_version: PROTOCOL_VERSION,
            agent_info: Implementation {
                name: "deepseek-harness-acp",
                version: "0.0.1",
            },
            agent_capabilities: AgentCapabilities {
                load_session: editor.then_some(true),
                // Images when a store is mounted and the model takes them.
                prompt_capabilities: PromptCapabilities {
                    image: crate::images::advertised(self),
                    audio: false,
                    // An editor's attached files and selections, as text.
                    embedded_context: editor,
                },
                mcp_capabilities: editor.then_some(McpCapabilities {
                    http: true,
                    sse: true,
                }),
                session_capabilities: editor.then_some(SessionCapabilities {
                    list: Served {},
                    resume: Served {},
                }),
            },
            auth_methods: Vec::new(),
        }
    }

    /// Checks a session's working directory and what else it asks for; answers its own MCP
    /// servers, read.
    pub(crate) fn check_scope(
        &self,
        cwd: &str,
        additional: &[String],
        mcp_servers: &[crate::schema::McpServer],
    ) -> Result<Vec<McpServerSpec>, RpcError> {
        if !std::path::Path::new(cwd).is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "cwd must be an absolute path: {cwd}"
            )));
        }
        // Editor mode's are checked by the clients service (absolute, a sandbox that gives
        // roots per session) when it makes the session.
        if self.mode == Mode::Automation && !additional.is_empty() {
            return Err(RpcError::invalid_params(
                "additionalDirectories is not supported",
            ));
        }
        match (self.mode, mcp_servers.first()) {
            (_, None) => Ok(Vec::new()),
            // The reference's automation contract mounts no client servers.
            (Mode::Automation, Some(server)) => Err(RpcError::invalid_params(format!(
                "mcpServers is not supported in automation mode (server `{}`)",
                server.name
            ))),
            (Mode::Editor, Some(_)) => crate::mcp::read(mcp_servers),
        }
    }

    async fn new_session(
        self: Arc<Self>,
        request: NewSessionRequest,
    ) -> Result<(NewSessionResponse, Option<Note>), RpcError> {
        self.assert_open()?;
        let servers = self.check_scope(
            &request.cwd,
            &request.additional_directories,
            &request.mcp_servers,
        )?;
        let create = CreateRequest {
            cwd: Some(request.cwd.clone()),
            model: self.route_asked(),
            additional_directories: request.additional_directories.clone(),
            mcp_servers: servers,
            ..CreateRequest::default()
        };
        let created: Created = self
            .door
            .call(&self.ctx, ClientRequest::SessionCreate(create))
            .await
            .map_err(|refused| refused.to_acp("session/new", ""))?;
        let id = created.session_id;
        let session = self.adopt(&id, &request.cwd);
        if self.is_closed() {
            return Err(RpcError::internal("connection closed during session/new"));
        }
        let state = crate::editor::session_state(&self, &session).await;
        crate::editor::announce(&self, &session);
        let note = Note::of(&id, &created.notes);
        Ok((
            NewSessionResponse {
                session_id: id,
                state,
            },
            note,
        ))
    }

    /// The route the agent was told to give its sessions (`--model`, the row's `model`), if any.
    pub(crate) fn route_asked(&self) -> Option<String> {
        let (provider, model) = lock(&self.route).clone();
        (!provider.is_empty()).then(|| format!("{provider}/{model}"))
    }

    /// Makes agent `id` one of this connection's sessions.
    pub(crate) fn adopt(&self, id: &str, cwd: &str) -> Arc<AcpSession> {
        let session = Arc::new(AcpSession {
            id: id.to_owned(),
            cwd: cwd.to_owned(),
            inflight: Mutex::default(),
            editor: EditorState::default(),
        });
        lock(&self.sessions).insert(id.to_owned(), session.clone());
        session
    }

    /// `session/cancel`: the prompt in flight answers `cancelled`; once its message is queued
    /// (or when none is in flight) the agent's work is cancelled. An unknown session is a no-op.
    pub(crate) fn cancel(&self, id: &str) {
        let Some(session) = self.session(id) else {
            return;
        };
        if let Some(inflight) = lock(&session.inflight).as_ref() {
            lock(&inflight.state).cancel_requested = true;
        }
        if let Ok(agents) = self.agents() {
            let _ = agents.cancel(id.into(), Json::encode(&AbortCause::User), false);
        }
        self.wire.withdraw(id);
    }
}
