//! One run: the working directory, the replay (when asked), the model route, the agent (or a
//! bare session), the task sent as a followup, and the wait for the turn's end, which gives way
//! to a signal by cancelling the turn and waiting for it to close its log.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::{RSome, RString, RVec};
use dsh_agents_seam::{
    AGENT_LOOP_SERVICE, AGENTS_SERVICE, AgentLoopService, AgentsExt, AgentsService, TurnRequest,
};
use dsh_plugin_api::cancel::{CancelFlag, Either, first_of};
use dsh_plugin_api::io::control::HostControlService;
use dsh_plugin_api::{Context, Json, Service, lock};
use dsh_protocol::{
    AbortCause, AgentOptions, AgentSummary, ContentBlock, Message, MessageSource, TurnEndReason,
    TurnOutcome,
};
use dsh_sessions_seam::{CreateSession, SessionsService};
use dsh_trust_seam::{TRUST_SERVICE, TrustService};

use crate::args::{self, Args, Output, UsageError};
use crate::output::{err, exit_code, out, print_event, print_result};

/// How long the first turn waits for the rest of the tree to start.
const TREE_START: Duration = Duration::from_secs(5);

/// The run in progress, for the stop listener and the event printer.
pub(crate) struct Current {
    /// The session whose events are printed (stream-json) and whose turn a signal cancels.
    pub(crate) session: Option<String>,
    pub(crate) stream_json: bool,
    /// With stream-json, the events committed before the run knew its session id.
    pub(crate) early: Option<Vec<(String, String)>>,
    /// A signal arrived: the cause its turn is (or would be) cancelled with.
    pub(crate) stop: Option<AbortCause>,
    /// Fired with `stop`.
    pub(crate) stopped: Arc<CancelFlag>,
    /// Fired when the run has printed its result.
    pub(crate) done: Arc<CancelFlag>,
}

impl Default for Current {
    fn default() -> Self {
        Self {
            session: None,
            stream_json: false,
            early: None,
            stop: None,
            stopped: CancelFlag::new(),
            done: CancelFlag::new(),
        }
    }
}

pub(crate) struct Runner {
    pub(crate) ctx: Context,
    pub(crate) sessions: Service<SessionsService>,
    pub(crate) host: Service<HostControlService>,
    pub(crate) config_model: Option<String>,
    pub(crate) current: Arc<Mutex<Current>>,
}

/// Why a run could not start its turn.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// Says `--replay` itself.
    #[error("{0}")]
    Replay(String),
    #[error("{0}")]
    Start(String),
}

/// The model route, in the documented order of preference.
fn choose_model(args: &Args, config: Option<&str>) -> Result<(String, String), UsageError> {
    if let Some(route) = &args.model {
        return Ok(route.clone());
    }
    if args.replay.is_some() {
        return Ok(("replay".to_owned(), "replay".to_owned()));
    }
    if let Some(route) = config {
        return args::split_route(route)
            .map_err(|error| UsageError(format!("row config `model`: {error}")));
    }
    if std::env::var_os("DEEPSEEK_API_KEY").is_some_and(|key| !key.is_empty()) {
        return Ok((
            "deepseek-official".to_owned(),
            "deepseek-v4-flash".to_owned(),
        ));
    }
    Ok((String::new(), String::new()))
}

/// Ends the early buffering of a run when it is dropped.
struct StopBuffering(Arc<Mutex<Current>>);

impl Drop for StopBuffering {
    fn drop(&mut self) {
        lock(&self.0).early = None;
    }
}

/// How long cancelled children are given to close their turns before the run ends.
pub(crate) const CHILDREN_STOP: Duration = Duration::from_secs(5);

/// What the turn runs with.
struct Route {
    cwd: String,
    provider: String,
    model: String,
}

impl Runner {
    /// A new agent (or the resumed one) through the registry; answers its id.
    async fn start_agent(
        &self,
        agents: &AgentsService,
        args: &Args,
        route: &Route,
    ) -> Result<String, RunError> {
        let options = AgentOptions {
            cwd: route.cwd.clone(),
            resume: args.resume.clone(),
            session_id: None,
            provider: route.provider.clone(),
            model: route.model.clone(),
            scope: Vec::new(),
            agent_preset: args.preset.clone(),
            ..AgentOptions::default()
        };
        let id = agents
            .create(Json::encode(&options))
            .await
            .into_result()
            .map(RString::into_string)
            .map_err(|error| RunError::Start(error.to_string()))?;
        // A resumed session whose preset is gone runs on another: say which and why.
        let listed: Vec<AgentSummary> = agents.list().decode().unwrap_or_default();
        if let Some(note) = listed
            .iter()
            .find(|agent| agent.id == id)
            .and_then(|agent| agent.preset_note.as_deref())
        {
            err(&format!("note: {note}"));
        }
        Ok(id)
    }

    /// A session without an agent registry; answers its id.
    async fn open_session(&self, args: &Args, route: &Route) -> Result<String, RunError> {
        let session = match &args.resume {
            Some(id) => self.sessions.open(id.as_str().into()).await,
            None => {
                self.sessions
                    .create(CreateSession {
                        cwd: RSome(route.cwd.as_str().into()),
                        ..CreateSession::default()
                    })
                    .await
            }
        };
        session
            .into_result()
            .map(|session| session.id().into_string())
            .map_err(|error| RunError::Start(error.to_string()))
    }

    /// Mounts `llm-replay` on `log` and waits until it listens.
    async fn replay(&self, log: &std::path::Path) -> Result<(), RunError> {
        dsh_llm_seam::mount_replay(&self.ctx, log)
            .await
            .map_err(|error| match error {
                dsh_llm_seam::ReplayError::Missing(_) => {
                    RunError::Usage(UsageError(error.to_string()))
                }
                other => RunError::Replay(other.to_string()),
            })
    }

    pub(crate) async fn run(&self, args: Args) -> i32 {
        if args.output == Output::StreamJson {
            lock(&self.current).early = Some(Vec::new());
        }
        // However the run ends, nothing is buffered after it.
        let _stop_buffering = StopBuffering(self.current.clone());
        match self.prepare(&args).await {
            Ok(Some((id, agents, route))) => self.turn(args, id, agents, route).await,
            Ok(None) => 1,
            Err(error @ RunError::Usage(_)) => {
                err(&format!("dsh: {error}"));
                2
            }
            Err(error) => {
                err(&format!("dsh: {error}"));
                1
            }
        }
    }

    /// The working directory, the replay, the route and the session; `None` when a signal
    /// came before the turn started (said on stderr).
    async fn prepare(
        &self,
        args: &Args,
    ) -> Result<Option<(String, Option<Service<AgentsService>>, Route)>, RunError> {
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        let cwd = match cwd.canonicalize() {
            Ok(dir) if dir.is_dir() => dir,
            _ => {
                return Err(RunError::Usage(UsageError(format!(
                    "--cwd {}: not a directory",
                    cwd.display()
                ))));
            }
        };
        if let Some(log) = &args.replay {
            self.replay(log).await?;
        }
        // Every row that can start has started (the tools the first request offers, the
        // sandbox their processes run in); a tree still busy after the bound starts anyway.
        let _ = first_of(self.ctx.tree_settled(), self.ctx.sleep(TREE_START)).await;
        self.trust_project(&cwd, args.trust_project).await;
        let (provider, model) = choose_model(args, self.config_model.as_deref())?;
        let route = Route {
            cwd: cwd.to_string_lossy().into_owned(),
            provider,
            model,
        };
        let agents = match self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => Some(agents),
            _ => None,
        };
        let id = match &agents {
            Some(agents) => self.start_agent(agents, args, &route).await?,
            None => self.open_session(args, &route).await?,
        };
        let mut current = lock(&self.current);
        // What the run logged before it knew its session (a plugin may stage context when the
        // agent's session starts) is printed first, under the printer's lock, so the stream
        // keeps the log's order.
        for (session, json) in current.early.take().unwrap_or_default() {
            if session == id {
                print_event(&session, &json);
            }
        }
        if current.stop.is_some() {
            // A signal came before the turn started: nothing to cancel, nothing to run.
            err(&format!(
                "dsh: stopped before the turn started; session {id}"
            ));
            return Ok(None);
        }
        current.session = Some(id.clone());
        current.stream_json = args.output == Output::StreamJson;
        Ok(Some((id, agents, route)))
    }

    /// Trusts the project of `cwd` for this run when asked (its MCP servers have started when
    /// this returns); otherwise says on stderr what of the project's own waits for trust.
    async fn trust_project(&self, cwd: &std::path::Path, trust: bool) {
        let Ok(Some(service)) = self.ctx.get::<TrustService>(TRUST_SERVICE) else {
            return;
        };
        let cwd = RString::from(cwd.to_string_lossy().as_ref());
        if trust {
            if let Err(error) = service.trust(cwd, false).await.into_result() {
                err(&format!(
                    "warning: the project could not be trusted: {error}"
                ));
            }
            return;
        }
        let Ok(project) = service.describe(cwd).decode() else {
            return;
        };
        if !project.trusted && !project.waiting.is_empty() {
            err(&format!(
                "warning: the project {} is not trusted, so its {} wait; pass --trust-project to use them in this run, or list the folder under `trust: {{roots: [...]}}` in settings.yaml",
                project.root,
                project.waiting.join(", ")
            ));
        }
    }

    /// Runs the task's turn and prints what it came to; answers the exit code.
    async fn turn(
        &self,
        args: Args,
        id: String,
        agents: Option<Service<AgentsService>>,
        route: Route,
    ) -> i32 {
        let stopped = lock(&self.current).stopped.clone();
        let tasks: Vec<&str> = std::iter::once(args.task.as_str())
            .chain(args.then.iter().map(String::as_str))
            .collect();
        // The registry is not held across the tasks: if its row unloads, a wait ends.
        let registry = agents.is_some();
        drop(agents);
        let mut outcome = None;
        let mut usage = dsh_protocol::TokenUsage::default();
        for (index, text) in tasks.iter().enumerate() {
            // A later task runs only after the one before it completed.
            let completed = outcome
                .as_ref()
                .is_none_or(|last: &TurnOutcome| last.reason == TurnEndReason::Completed);
            if index > 0 && (!completed || stopped.is_fired()) {
                break;
            }
            outcome = match self.task(registry, &id, &route, text, &stopped).await {
                Ok(outcome) => outcome,
                Err(code) => return code,
            };
            if let Some(last) = &outcome {
                usage = usage.saturating_add(last.usage);
            }
        }
        let outcome = outcome.map(|last| TurnOutcome { usage, ..last });
        let outcome = outcome.unwrap_or_else(|| {
            TurnOutcome::unopened(
                id.as_str(),
                TurnEndReason::error("UNKNOWN", "the turn reported no outcome"),
            )
        });
        lock(&self.current).stream_json = false;
        if let Some(failure) = outcome.reason.failure() {
            err(&format!("dsh: {}: {}", failure.code, failure.message));
        }
        match args.output {
            Output::Text => {
                if !outcome.output.is_empty() {
                    out(&outcome.output);
                }
            }
            Output::StreamJson => print_result(&id, &outcome.output, &outcome.usage),
        }
        err(&format!("dsh: session {id}"));
        exit_code(&outcome.reason)
    }

    /// Runs one task on session `id`: through the agents registry (a followup, then the
    /// wait for everything it started to settle), or straight on the driver without one.
    async fn task(
        &self,
        registry: bool,
        id: &str,
        route: &Route,
        text: &str,
        stopped: &Arc<CancelFlag>,
    ) -> Result<Option<TurnOutcome>, i32> {
        let task = Message::user("", vec![ContentBlock::text(text)], MessageSource::user());
        match registry {
            // The task is a followup: queued on next-turn (logged), it wakes the idle agent,
            // whose driver runs the turn that claims it.
            true => {
                let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS_SERVICE) else {
                    err("dsh: the `agents` registry went away");
                    return Err(1);
                };
                let queued = agents.followup(id, &task);
                drop(agents);
                if let Err(error) = queued {
                    err(&format!("dsh: {error}"));
                    return Err(1);
                }
                self.until_settled(id, stopped).await.map_err(|error| {
                    err(&format!("dsh: {error}"));
                    1
                })
            }
            // Without an agent registry the turn takes the task directly.
            false => {
                let Ok(Some(driver)) = self.ctx.get::<AgentLoopService>(AGENT_LOOP_SERVICE) else {
                    err("dsh: neither an `agents` nor an `agent_loop` service is mounted");
                    return Err(1);
                };
                let running = driver.run_turn(TurnRequest {
                    session: id.into(),
                    input: Json::encode(&vec![task]),
                    inbox: abi_stable::std_types::RNone,
                    provider: route.provider.as_str().into(),
                    model: route.model.as_str().into(),
                    cwd: route.cwd.as_str().into(),
                    scope: RVec::new(),
                });
                let mut running = std::pin::pin!(running);
                let outcome = match first_of(running.as_mut(), stopped.wait()).await {
                    Either::Left(outcome) => outcome,
                    Either::Right(()) => {
                        driver.cancel(id.into(), Json::encode(&self.cause()));
                        running.await
                    }
                };
                Ok(outcome.decode().ok())
            }
        }
    }

    /// The cause a signal cancels the turn with.
    pub(crate) fn cause(&self) -> AbortCause {
        lock(&self.current).stop.clone().unwrap_or(AbortCause::User)
    }

    /// Ends the host with `code`.
    pub(crate) fn exit(&self, code: i32) {
        self.host.exit(code);
    }
}
