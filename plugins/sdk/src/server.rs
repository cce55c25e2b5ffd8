//! The runtime itself: the replay it mounts, the loop that reads stdin line by line and answers
//! each request in order, and the methods it owns. `initialize` fixes the route SDK sessions run
//! on; `session/prompt` creates the agent of an unknown session id (or resumes the stored one),
//! refuses a second prompt while the session runs, and queues the prompt as a followup;
//! `shutdown` disposes the SDK's agents and ends the host with 0. The end of stdin, SIGINT and
//! SIGTERM cancel every running turn (each closes its log `aborted`) before the host exits.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use abi_stable::std_types::RString;
use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_clients_seam::{CLIENTS_SERVICE, ClientsService};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::cancel::first_of;
use dsh_plugin_api::io::control::HostControlService;
use dsh_plugin_api::{Context, Json, Service, lock};
use dsh_protocol::{AbortCause, AgentOptions, AgentStatus, Message, MessageSource};
use serde_json::{Value, json};

use crate::args::Args;
use crate::door::{Handshake, merged};
use crate::follow::Follow;
use crate::methods::{InitializeParams, Method, PromptParams, parse};
use dsh_json_rpc::wire::{
    AGENT_BUSY, Incoming, Line, NOT_INITIALIZED, PARSE_ERROR, RpcError, SHUTTING_DOWN, classify,
};

/// How long `initialize` waits for the rest of the tree to start, and the start for the
/// client protocol's row.
const TREE_START: Duration = Duration::from_secs(5);
/// How often the start looks for the client protocol's row.
const DOOR_LOOK: Duration = Duration::from_millis(2);
/// How long cancelled turns are given to close their logs before the host exits.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long `shutdown` waits for the SDK's agents to be disposed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What SDK sessions run with.
#[derive(Debug, Clone)]
struct Route {
    cwd: String,
    provider: String,
    model: String,
}

#[derive(Default)]
pub(crate) struct State {
    route: Option<Route>,
    /// A replay answers every model request, whatever provider it names.
    replaying: bool,
    /// `shutdown`, the end of stdin or a signal: no new work is taken.
    closing: bool,
}

/// Whether the read loop goes on after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// `shutdown` was answered: the runtime ends.
    Exit,
}

pub(crate) struct Server {
    pub(crate) ctx: Context,
    pub(crate) host: Service<HostControlService>,
    pub(crate) follow: Follow,
    pub(crate) args: Args,
    pub(crate) state: Mutex<State>,
    /// The connection to the client protocol's service, for the methods the runtime does
    /// not own.
    pub(crate) door: crate::door::Door,
}

impl Server {
    /// Waits (a bounded while) until every row that can start has started.
    pub(crate) async fn started(&self) {
        let _ = first_of(self.ctx.tree_settled(), self.ctx.sleep(TREE_START)).await;
    }

    /// Waits (a bounded while) for the client protocol's row: the host reads stdin from the
    /// moment this row is up, and that row may start a moment later (a client writing at once
    /// met "unknown method"). A tree without one is waited for until it settles; a row slow to
    /// start (an MCP server's first attempt) is not waited for.
    pub(crate) async fn door_open(&self) {
        let mounted = async {
            while !matches!(self.ctx.get::<ClientsService>(CLIENTS_SERVICE), Ok(Some(_))) {
                self.ctx.sleep(DOOR_LOOK).await;
            }
        };
        let either = first_of(mounted, self.ctx.tree_settled());
        let _ = first_of(either, self.ctx.sleep(TREE_START)).await;
    }

    /// Mounts `llm-replay` on `log` (its children's logs beside it) and waits until it listens.
    pub(crate) async fn replay(&self, log: &Path) -> Result<(), dsh_llm_seam::ReplayError> {
        dsh_llm_seam::mount_replay(&self.ctx, log).await?;
        lock(&self.state).replaying = true;
        Ok(())
    }

    /// Handles one line of stdin.
    pub(crate) async fn line(&self, line: Line) -> Flow {
        let out = &self.follow.out;
        let text = match line {
            Line::Text(text) => text,
            Line::TooLong => {
                let error = RpcError::new(PARSE_ERROR, "Parse error: the line is over 16 MiB");
                out.answer(&Value::Null, Err(error));
                return Flow::Continue;
            }
            Line::NotUtf8 => {
                let error = RpcError::new(PARSE_ERROR, "Parse error: the line is not UTF-8");
                out.answer(&Value::Null, Err(error));
                return Flow::Continue;
            }
        };
        if text.trim().is_empty() {
            return Flow::Continue;
        }
        match classify(&text) {
            Err(rejected) => {
                let (id, error) = *rejected;
                out.answer(&id, Err(error));
            }
            // A notification is never answered; none is defined for the client to send.
            Ok(Incoming::Notification { .. } | Incoming::Response) => {}
            Ok(Incoming::Request { id, method, params }) => {
                let (outcome, flow) = self.request(&method, params).await;
                out.answer(&id, outcome);
                return flow;
            }
        }
        Flow::Continue
    }

    async fn request(&self, method: &str, params: Value) -> (Result<Value, RpcError>, Flow) {
        // The client protocol's handshake alone (no model route to set up).
        let handshake = Handshake::of(&params);
        if method == crate::methods::INITIALIZE
            && handshake.protocol_version.is_some()
            && handshake.provider.is_none()
        {
            let answer = self
                .door
                .call(&self.ctx, &self.follow.out, method, params)
                .await;
            return (answer, Flow::Continue);
        }
        let parsed = match parse(method, params.clone()) {
            Ok(parsed) => parsed,
            Err(error) => return (Err(error), Flow::Continue),
        };
        match parsed {
            Some(Method::Initialize(init)) => {
                let own = self.initialize(init).await;
                let answer = match (own, Handshake::of(&params).protocol_version) {
                    (Ok(own), Some(_)) => self
                        .door
                        .call(&self.ctx, &self.follow.out, method, params)
                        .await
                        .map(|handshake| merged(own, handshake)),
                    (own, _) => own,
                };
                (answer, Flow::Continue)
            }
            Some(Method::Prompt(params)) => (self.prompt(params).await, Flow::Continue),
            Some(Method::Shutdown) => (Ok(self.shutdown().await), Flow::Exit),
            None => (
                self.door
                    .call(&self.ctx, &self.follow.out, method, params)
                    .await,
                Flow::Continue,
            ),
        }
    }

    fn refuse_when_closing(&self) -> Result<(), RpcError> {
        match lock(&self.state).closing {
            true => Err(RpcError::coded(
                SHUTTING_DOWN,
                "shutting-down",
                "the SDK runtime is shutting down",
            )),
            false => Ok(()),
        }
    }

    async fn initialize(&self, params: InitializeParams) -> Result<Value, RpcError> {
        self.refuse_when_closing()?;
        let base = match &self.args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        };
        let cwd = match &params.cwd {
            Some(cwd) => base.join(cwd),
            None => base,
        };
        let cwd = match cwd.canonicalize() {
            Ok(dir) if dir.is_dir() => dir,
            _ => {
                return Err(RpcError::invalid_params(
                    "cwd",
                    format!("{} is not a directory", cwd.display()),
                ));
            }
        };
        if let Some(max_tokens) = params.max_tokens {
            lock(&self.follow.book).max_tokens = Some(max_tokens);
        }
        // The first request offers every tool.
        self.started().await;
        self.check_provider(&params.provider)?;
        lock(&self.state).route = Some(Route {
            cwd: cwd.to_string_lossy().into_owned(),
            provider: params.provider,
            model: params.model,
        });
        Ok(json!({"serverInfo": {
            "name": "deepseek-harness-sdk-runtime",
            "version": env!("CARGO_PKG_VERSION"),
        }}))
    }

    /// A provider no adapter serves is refused now rather than at the first turn (a replay
    /// answers every provider).
    fn check_provider(&self, provider: &str) -> Result<(), RpcError> {
        if lock(&self.state).replaying {
            return Ok(());
        }
        let Ok(Some(llm)) = self.ctx.get::<LlmService>(LLM_SERVICE) else {
            return Err(RpcError::invalid_params(
                "provider",
                "no `llm` service is mounted to serve it",
            ));
        };
        let providers: Vec<String> = llm
            .providers()
            .into_iter()
            .map(RString::into_string)
            .collect();
        match providers.iter().any(|known| known == provider) {
            true => Ok(()),
            false => Err(RpcError::invalid_params(
                "provider",
                format!(
                    "no model adapter serves `{provider}` (registered: {})",
                    providers.join(", ")
                ),
            )),
        }
    }

    fn agents(&self) -> Result<Service<AgentsService>, RpcError> {
        match self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => Ok(agents),
            _ => Err(RpcError::internal("no `agents` registry is mounted")),
        }
    }

    async fn prompt(&self, params: PromptParams) -> Result<Value, RpcError> {
        self.refuse_when_closing()?;
        let Some(route) = lock(&self.state).route.clone() else {
            return Err(RpcError::coded(
                NOT_INITIALIZED,
                "not-initialized",
                "call `initialize` before `session/prompt`",
            ));
        };
        let id = params.session_id;
        let agents = self.agents()?;
        {
            let mut book = lock(&self.follow.book);
            if book.busy.contains(&id) || agents.is_running(&id) {
                return Err(RpcError::coded(
                    AGENT_BUSY,
                    "agent-busy",
                    format!("session {id} is running a turn: wait for its `session.status` idle"),
                )
                .with_data(json!({"code": "agent-busy", "sessionId": id})));
            }
            book.busy.insert(id.clone());
        }
        let queued = self.queue(&agents, &id, &route, params.content).await;
        if queued.is_err() {
            lock(&self.follow.book).busy.remove(&id);
        }
        queued.map(|message| json!({"messageId": message}))
    }

    /// Makes sure session `id` has a live agent, then queues `content` on it as a followup;
    /// answers the message id.
    async fn queue(
        &self,
        agents: &AgentsService,
        id: &str,
        route: &Route,
        content: Vec<dsh_protocol::ContentBlock>,
    ) -> Result<String, RpcError> {
        let live = agents
            .list()
            .decode()
            .unwrap_or_default()
            .iter()
            .any(|agent| agent.id == id);
        if !live {
            // Owned before it exists: its first events are not held back as a stranger's.
            lock(&self.follow.book).owned.insert(id.to_owned());
            if let Err(error) = self.create(agents, id, route).await {
                lock(&self.follow.book).owned.remove(id);
                return Err(error);
            }
        }
        let message = Message::user(dsh_protocol::fresh_uuid(), content, MessageSource::user());
        agents
            .followup(id, &message)
            .map_err(|error| RpcError::internal(format!("session {id}: {error}")))
    }

    /// A new agent and session named `id`; when a stored session has that id, it is resumed.
    async fn create(
        &self,
        agents: &AgentsService,
        id: &str,
        route: &Route,
    ) -> Result<(), RpcError> {
        let options = AgentOptions {
            cwd: route.cwd.clone(),
            session_id: Some(id.to_owned()),
            provider: route.provider.clone(),
            model: route.model.clone(),
            ..AgentOptions::default()
        };
        let created = agents.create(Json::encode(&options)).await.into_result();
        let Err(error) = created else {
            return Ok(());
        };
        let resume = AgentOptions {
            resume: Some(id.to_owned()),
            session_id: None,
            ..options
        };
        match agents.create(Json::encode(&resume)).await.into_result() {
            Ok(_) => Ok(()),
            Err(_) => Err(RpcError::internal(format!(
                "session {id} could not be created: {error}"
            ))),
        }
    }

    /// `shutdown`: notifications stop, the SDK's agents are disposed (their turns cancelled,
    /// their logs closed), then the answer.
    async fn shutdown(&self) -> Value {
        lock(&self.state).closing = true;
        self.follow.out.quiet();
        let owned: Vec<String> = lock(&self.follow.book).owned.iter().cloned().collect();
        if let Ok(agents) = self.agents() {
            let disposals = owned
                .iter()
                .map(|id| agents.dispose(id.as_str().into()))
                .collect::<Vec<_>>();
            drop(agents);
            let all = async {
                for disposal in disposals {
                    let _ = disposal.await;
                }
            };
            let _ = first_of(all, self.ctx.sleep(SHUTDOWN_GRACE)).await;
        }
        json!({})
    }

    /// The end of stdin or a signal: no new work; every running turn is cancelled with
    /// `cause` and given [`STOP_GRACE`] to close its log.
    pub(crate) async fn stop(&self, cause: AbortCause) {
        lock(&self.state).closing = true;
        let Ok(agents) = self.agents() else {
            return;
        };
        let running: Vec<String> = agents
            .list()
            .decode()
            .unwrap_or_default()
            .into_iter()
            .filter(|agent| agent.status == AgentStatus::Running)
            .map(|agent| agent.id)
            .collect();
        for id in &running {
            let _ = agents.cancel(id.as_str().into(), Json::encode(&cause), false);
        }
        let idle = running
            .iter()
            .map(|id| agents.when_idle(id.as_str().into()))
            .collect::<Vec<_>>();
        drop(agents);
        let deadline = Instant::now() + STOP_GRACE;
        for wait in idle {
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = first_of(wait, self.ctx.sleep(left)).await;
        }
    }

    /// Ends the host with `code`.
    pub(crate) fn exit(&self, code: i32) {
        self.host.exit(code);
    }
}
