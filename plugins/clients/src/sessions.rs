//! The `session.*` methods: list, history (the log folded into items, tail first), create (a
//! new agent), prompt (queue or steer a message; a stored session is resumed first) and cancel.

use abi_stable::std_types::RString;
use dsh_agents_seam::{AGENTS_SERVICE, AgentsErrorKind, AgentsExt, AgentsService};
use dsh_client_protocol::{
    ChatItem, HistoryRequest, ItemRequest, PromptAccepted, PromptMode, RpcErrorCode, RunCommand,
    SendPrompt, SessionHistory, SessionList, SessionRef, UpdateQueue,
};
use dsh_commands_seam::{COMMANDS_SERVICE, CommandsService};
use dsh_plugin_api::{Json, Service, lock};
use dsh_protocol::kinds;
use dsh_protocol::{
    AbortCause, AgentOptions, AgentSummary, ContentBlock, Message, MessageSource,
    RequestContextEvent, SessionSummary,
};
use dsh_sessions_seam::{
    SESSION_PERSISTENCE_SERVICE, SESSIONS_SERVICE, SessionErrorKind, SessionStoreService,
    SessionsService, last_activity, listed_title, open_live, waiting_for_a_person,
};

use crate::api::{Api, Failure};

/// What the list shows of a live session beyond its stored summary.
#[derive(Default)]
struct LiveListing {
    title: Option<String>,
    active_at: Option<i64>,
    waiting: bool,
}
use crate::fold::{wire_item, with_blocks};

/// Items a history page holds when the client does not say.
const PAGE: u64 = 200;

/// Client request ids remembered for `session.prompt`.
const REMEMBERED_PROMPTS: usize = 256;

pub(crate) fn not_found(session: &str) -> Failure {
    Failure(
        RpcErrorCode::SessionNotFound,
        format!("no session `{session}`"),
    )
}

impl Api {
    pub(crate) fn agents(&self) -> Result<Service<AgentsService>, Failure> {
        match self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => Ok(agents),
            _ => Err(Failure::internal("no `agents` service is running")),
        }
    }

    /// Stored sessions, newest first, with the live ones marked and titled from their logs; a
    /// live session the store has not written yet (a fork, a new one) comes first.
    pub(crate) async fn list(&self) -> Result<SessionList, Failure> {
        let mut sessions = self.stored().await?;
        let live: Vec<String> = match self.ctx.get::<SessionsService>(SESSIONS_SERVICE) {
            Ok(Some(service)) => service.live().iter().map(|id| id.to_string()).collect(),
            _ => Vec::new(),
        };
        for summary in &mut sessions {
            if live.contains(&summary.id) {
                summary.live = true;
                if let Some(listing) = self.live_listing(&summary.id) {
                    summary.title = listing.title;
                    summary.active_at = listing.active_at;
                    summary.waiting = listing.waiting;
                }
            }
        }
        let agents: Vec<AgentSummary> = self
            .agents()
            .ok()
            .and_then(|agents| agents.list().decode().ok())
            .unwrap_or_default();
        // A live session's preset is its agent's (switched, or fallen back on resume).
        for summary in &mut sessions {
            if let Some(agent) = agents.iter().find(|agent| agent.id == summary.id) {
                summary.agent_preset = agent.agent_preset.clone();
            }
        }
        let now = crate::now_ms();
        let unwritten: Vec<SessionSummary> = live
            .iter()
            .filter(|id| !sessions.iter().any(|summary| &summary.id == *id))
            .map(|id| {
                let listing = self.live_listing(id).unwrap_or_default();
                SessionSummary {
                    id: id.clone(),
                    cwd: agents.iter().find(|a| &a.id == id).map(|a| a.cwd.clone()),
                    created_at: now,
                    updated_at: now,
                    active_at: listing.active_at,
                    title: listing.title,
                    waiting: listing.waiting,
                    archived: false,
                    live: true,
                    subagent_of: None,
                    fork_of: None,
                    broken: None,
                    agent_preset: agents
                        .iter()
                        .find(|a| &a.id == id)
                        .and_then(|a| a.agent_preset.clone()),
                }
            })
            .collect();
        sessions.splice(0..0, unwritten);
        sessions.sort_by_key(|summary| {
            std::cmp::Reverse(summary.active_at.unwrap_or(summary.updated_at))
        });
        Ok(SessionList { sessions })
    }

    pub(crate) async fn stored(&self) -> Result<Vec<SessionSummary>, Failure> {
        let Ok(Some(store)) = self
            .ctx
            .get::<SessionStoreService>(SESSION_PERSISTENCE_SERVICE)
        else {
            return Ok(Vec::new());
        };
        store
            .list()
            .await
            .into_result()
            .map_err(|error| Failure::internal(format!("the session store: {error}")))?
            .decode()
            .map_err(|error| Failure::internal(format!("the session store's listing: {error}")))
    }

    /// What the list shows of a live session, from its events.
    fn live_listing(&self, id: &str) -> Option<LiveListing> {
        let session = open_live(&self.ctx, id).ok()?;
        let events = session.events(0, session.event_count());
        Some(LiveListing {
            title: listed_title(&events),
            active_at: last_activity(&events),
            waiting: waiting_for_a_person(&events),
        })
    }

    /// Session `id`'s log, opened through the `sessions` service.
    pub(crate) async fn open_session(
        &self,
        id: &str,
    ) -> Result<dsh_sessions_seam::SessionBox, Failure> {
        let Ok(Some(sessions)) = self.ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
            return Err(Failure::internal("no `sessions` service is running"));
        };
        let opened = sessions.open(RString::from(id)).await.into_result();
        // Held by another host: read a copy of it (its history shows; a prompt is refused).
        let opened = match opened {
            Err(problem) if problem.kind == SessionErrorKind::Locked => {
                sessions.view(RString::from(id)).await.into_result()
            }
            other => other,
        };
        opened.map_err(|error| match error.kind {
            SessionErrorKind::NotFound => not_found(id),
            _ => Failure::internal(error.to_string()),
        })
    }

    pub(crate) async fn history(&self, request: HistoryRequest) -> Result<SessionHistory, Failure> {
        let session = self.open_session(&request.session_id).await?;
        let limit = usize::try_from(request.limit.unwrap_or(PAGE).max(1)).unwrap_or(usize::MAX);
        let preset = self.presets.of(&session).map(|event| event.preset);
        let history = self.folds.read(&session, |fold| {
            let items = fold.items();
            let start = items.len().saturating_sub(limit);
            SessionHistory {
                session_id: request.session_id.clone(),
                items: items[start..].iter().map(wire_item).collect(),
                earlier: start as u64,
                last_seq: fold.last_seq,
                running: fold.running,
                title: fold.title.clone(),
                stats: fold.tally.session.clone(),
                preset,
                plan_mode: fold.plan_mode,
            }
        });
        Ok(history)
    }

    /// One item, whole.
    pub(crate) async fn item(&self, request: ItemRequest) -> Result<ChatItem, Failure> {
        let session = self.open_session(&request.session_id).await?;
        let found = self.folds.read(&session, |fold| {
            fold.items()
                .iter()
                .find(|item| item.id() == request.item_id)
                .cloned()
        });
        found.map(with_blocks).ok_or_else(|| {
            Failure(
                RpcErrorCode::BadRequest,
                format!(
                    "no item `{}` in session `{}`",
                    request.item_id, request.session_id
                ),
            )
        })
    }

    pub(crate) async fn start(&self, options: AgentOptions) -> Result<String, Failure> {
        self.agents()?
            .create(Json::encode(&options))
            .await
            .into_result()
            .map(|id| id.into_string())
            .map_err(|error| match error.kind {
                // A preset that cannot run is the caller's to fix, named as such.
                AgentsErrorKind::Preset => Failure(
                    RpcErrorCode::AgentPresetInvalid,
                    error.message.into_string(),
                ),
                _ => Failure::internal(format!("the agent could not start: {error}")),
            })
    }

    /// The agent of `session`: the live one, or the stored session resumed.
    pub(crate) async fn agent_of(&self, session: &str) -> Result<AgentSummary, Failure> {
        let agents = self.agents()?;
        let find = |agents: &Service<AgentsService>| {
            agents
                .list()
                .decode()
                .ok()
                .and_then(|list| list.into_iter().find(|agent| agent.id == session))
        };
        if let Some(agent) = find(&agents) {
            return Ok(agent);
        }
        let stored = self.stored().await?;
        let summary = stored
            .into_iter()
            .find(|summary| summary.id == session)
            .ok_or_else(|| not_found(session))?;
        let (provider, model) = self.resume_route(session).await;
        let options = AgentOptions {
            cwd: summary.cwd.unwrap_or_else(|| self.host_cwd.clone()),
            resume: Some(session.to_owned()),
            session_id: None,
            provider,
            model,
            scope: Vec::new(),
            ..AgentOptions::default()
        };
        self.start(options).await?;
        find(&agents)
            .ok_or_else(|| Failure::internal(format!("session `{session}` did not resume")))
    }

    /// The route stored session `session` resumes with: the one it last asked (its last
    /// request/context), else the default one; empty parts for none.
    pub(crate) async fn resume_route(&self, session: &str) -> (String, String) {
        let route = self
            .last_route(session)
            .await
            .or_else(|| self.default_model())
            .unwrap_or_default();
        let (provider, model) = crate::models::split_route(&route).unwrap_or(("", ""));
        (provider.to_owned(), model.to_owned())
    }

    /// The route of a stored session's last model request.
    async fn last_route(&self, session: &str) -> Option<String> {
        let sessions = self
            .ctx
            .get::<SessionsService>(SESSIONS_SERVICE)
            .ok()
            .flatten()?;
        let opened = sessions
            .open(RString::from(session))
            .await
            .into_result()
            .ok()?;
        let records = opened.events(0, opened.event_count());
        records
            .iter()
            .rev()
            .find_map(|record| record.decode::<RequestContextEvent>()?.ok())
            .map(|context| format!("{}/{}", context.provider, context.model))
    }

    pub(crate) async fn prompt(&self, request: SendPrompt) -> Result<PromptAccepted, Failure> {
        if let Some(id) = &request.client_request_id
            && let Some((_, message_id)) = lock(&self.prompted).iter().find(|(seen, _)| seen == id)
        {
            return Ok(PromptAccepted {
                message_id: message_id.clone(),
                command: None,
            });
        }
        if request.text.trim().is_empty() && request.images.is_empty() {
            return Err(Failure(
                RpcErrorCode::BadRequest,
                "the prompt is empty".to_owned(),
            ));
        }
        let agent = self.agent_of(&request.session_id).await?;
        // A single text starting with `/` runs a command instead of reaching the model.
        if request.images.is_empty()
            && dsh_protocol::command_line(&request.text).is_some()
            && let Ok(Some(commands)) = self.ctx.get::<CommandsService>(COMMANDS_SERVICE)
        {
            let outcome = run_line(commands, &agent.id, &request.text).await?;
            return Ok(PromptAccepted {
                message_id: String::new(),
                command: Some(outcome),
            });
        }
        self.check_prompt_images(&agent.id, &request.images).await?;
        let text = (!request.text.is_empty()).then(|| ContentBlock::text(request.text));
        let images = request
            .images
            .into_iter()
            .map(|attachment| ContentBlock::Image { attachment });
        let content = text.into_iter().chain(images).collect();
        let message = Message::user("", content, MessageSource::user());
        let agents = self.agents()?;
        let sent = match request.mode {
            PromptMode::Queue => agents.followup(&agent.id, &message),
            PromptMode::Steer => agents.steer(&agent.id, &message),
        };
        let message_id = sent.map_err(|error| match (request.mode, error.kind) {
            // An agent going away takes no steer: the page offers to queue the message instead.
            (
                PromptMode::Steer,
                AgentsErrorKind::Disposing
                | AgentsErrorKind::Gone
                | AgentsErrorKind::SteerUnavailable,
            ) => Failure(RpcErrorCode::SteerUnavailable, error.to_string()),
            _ => Failure::from(error),
        })?;
        if let Some(id) = request.client_request_id {
            let mut prompted = lock(&self.prompted);
            prompted.push_back((id, message_id.clone()));
            if prompted.len() > REMEMBERED_PROMPTS {
                prompted.pop_front();
            }
        }
        Ok(PromptAccepted {
            message_id,
            command: None,
        })
    }

    /// `commands.list`: the commands a prompt can run, for the page's `/` menu.
    pub(crate) async fn commands(&self) -> Result<serde_json::Value, Failure> {
        let specs = match self.ctx.get::<CommandsService>(COMMANDS_SERVICE) {
            Ok(Some(commands)) => commands.list().await.decode().unwrap_or_default(),
            _ => Vec::new(),
        };
        Ok(serde_json::json!({ "commands": specs }))
    }

    /// `commands.run`: the line run as a command in the session's agent (live, or the stored
    /// session resumed).
    pub(crate) async fn run_command(
        &self,
        request: RunCommand,
    ) -> Result<dsh_protocol::CommandOutcome, Failure> {
        if dsh_protocol::command_line(&request.line).is_none() {
            return Err(Failure(
                RpcErrorCode::BadRequest,
                format!(
                    "line: `{}` is not a command line (`/name args`)",
                    request.line
                ),
            ));
        }
        let agent = self.agent_of(&request.session_id).await?;
        let Ok(Some(commands)) = self.ctx.get::<CommandsService>(COMMANDS_SERVICE) else {
            return Err(Failure::internal(format!(
                "no `{COMMANDS_SERVICE}` row is running on this host, so commands cannot run"
            )));
        };
        run_line(commands, &agent.id, &request.line).await
    }

    pub(crate) fn cancel(&self, request: SessionRef) -> Result<serde_json::Value, Failure> {
        let agents = self.agents()?;
        agents
            .cancel(
                RString::from(request.session_id.as_str()),
                Json::encode(&AbortCause::User),
                false,
            )
            .into_result()
            .map_err(|error| match error.kind {
                AgentsErrorKind::NotFound => not_found(&request.session_id),
                _ => Failure::from(error),
            })?;
        Ok(serde_json::json!({}))
    }

    /// `session.updateQueue`: a waiting message dropped, edited or moved into the running turn.
    /// The registry's refusal says which rule the request broke (no such session, the message
    /// no longer waits, it joins the running turn already).
    pub(crate) fn update_queue(&self, request: UpdateQueue) -> Result<serde_json::Value, Failure> {
        self.agents()?
            .update_queue(
                RString::from(request.session_id.as_str()),
                RString::from(request.item_id.as_str()),
                Json::encode(&request.action),
            )
            .into_result()
            .map_err(|error| match error.kind {
                AgentsErrorKind::NotFound => not_found(&request.session_id),
                AgentsErrorKind::NotQueued => Failure(
                    RpcErrorCode::QueueItemNotFound,
                    format!(
                        "no message `{}` waits in session `{}` (it may have started)",
                        request.item_id, request.session_id
                    ),
                ),
                _ => Failure::from(error),
            })?;
        Ok(serde_json::json!({}))
    }

    /// `session.context`: the token meter of a session: the compaction service's (the
    /// provider's count of the latest request plus an estimate of what came since), or,
    /// without that row, the provider's count of its latest answered request against the
    /// model's window (the latest `request/context` that named one), as `session show` prints
    /// it.
    pub(crate) async fn context(&self, request: SessionRef) -> Result<serde_json::Value, Failure> {
        // The compaction row keeps each live session's meter up to date: ask it first.
        if let Ok(Some(compaction)) = self
            .ctx
            .get::<dsh_compaction_seam::CompactionService>(dsh_compaction_seam::COMPACTION_SERVICE)
            && let Ok(Some(meter)) = compaction
                .meter(RString::from(request.session_id.as_str()))
                .decode()
        {
            return Ok(serde_json::to_value(meter).unwrap_or_default());
        }
        let Ok(Some(sessions)) = self.ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
            return Err(Failure::internal("no `sessions` service is running"));
        };
        let session = sessions
            .open(RString::from(request.session_id.as_str()))
            .await
            .into_result()
            .map_err(|_| not_found(&request.session_id))?;
        let (mut tokens, mut window) = (None, None);
        for record in session.events(0, session.event_count()).iter() {
            match record.kind.as_str() {
                kinds::REQUEST_CONTEXT => {
                    if let Some(Ok(event)) = record.decode::<RequestContextEvent>() {
                        window = event.context_window.or(window);
                    }
                }
                kinds::ASSISTANT_CHUNK if record.json.contains("\"usage\"") => {
                    if let Some(Ok(event)) = record.decode::<dsh_protocol::AssistantChunkEvent>()
                        && let dsh_protocol::StreamChunk::Usage { usage } = event.chunk
                    {
                        tokens = Some(usage.input_tokens + usage.output_tokens);
                    }
                }
                _ => {}
            }
        }
        Ok(serde_json::json!({ "tokens": tokens, "window": window }))
    }
}

/// Runs command line `line` in agent `agent` with the `commands` row (let go before the run is
/// awaited, so a reload of the row does not wait for it).
async fn run_line(
    commands: Service<CommandsService>,
    agent: &str,
    line: &str,
) -> Result<dsh_protocol::CommandOutcome, Failure> {
    let running = commands.run(RString::from(agent), RString::from(line));
    drop(commands);
    running
        .await
        .decode()
        .map_err(|error| Failure::internal(format!("the command's outcome: {error}")))
}
