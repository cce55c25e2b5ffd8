//! The `agents` service over the registry: create, send (with the wake rules), cancel,
//! when-idle, list and dispose.

use std::sync::{Arc, Mutex};

use abi_stable::std_types::{ROk, RResult, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::{AGENT_CREATED, AGENT_ROUTE, AGENT_SESSION_START, Agents, AgentsError};
use dsh_plugin_api::{Json, lock};
use dsh_protocol::{
    AbortCause, AgentNoticeData, AgentOptions, AgentPresetSelectedEvent, AgentStatus, AgentSummary,
    InboxListing, InboxTarget, Message, QueueAction, SessionStartSource, SpliceOutcome,
    TurnOutcome,
};
use dsh_sessions_seam::{
    CreateSession, SESSIONS_SERVICE, SessionExt, SessionSeed, SessionsService,
};
use tokio::sync::oneshot;

use crate::driver::wake;
use crate::error::AgentError;
use crate::preset::{self, with_preset};
use crate::registry::{Agent, Phase, Registry, Route};

pub(crate) struct Service(pub(crate) Arc<Registry>);

/// An agent's idleness: now (its last outcome), or later.
enum Idle {
    Now(Box<Option<TurnOutcome>>),
    Later(oneshot::Receiver<Option<TurnOutcome>>),
}

impl Idle {
    async fn wait(self, agent: &str) -> Result<Option<TurnOutcome>, AgentError> {
        match self {
            Idle::Now(last) => Ok(*last),
            Idle::Later(wait) => wait.await.map_err(|_| AgentError::Gone(agent.to_owned())),
        }
    }
}

fn done<T>(result: Result<T, AgentError>) -> RResult<T, AgentsError> {
    result.map_err(AgentsError::from).into()
}

impl Service {
    async fn create(&self, options: AgentOptions) -> Result<RString, AgentError> {
        let registry = &self.0;
        let Ok(Some(sessions)) = registry.ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
            return Err(AgentError::NoSessions);
        };
        // Every turn resolves paths against it and the file tools fence writes to it: an agent
        // without one could not be confined.
        if options.cwd.is_empty() || !std::path::Path::new(&options.cwd).is_absolute() {
            return Err(AgentError::Cwd(options.cwd));
        }
        // A new session's preset must run before the session exists: a refused preset leaves
        // no empty session behind.
        let wanted = match (&options.resume, &options.agent_preset) {
            (None, Some(id)) => Some(id.clone()),
            // A top-level session runs the configured default; the standard one is the
            // plain agent and is not written down (logs stay as the reference writes them).
            (None, None) if options.delegation_depth == 0 && options.seed.is_none() => {
                preset::default_preset(&registry.ctx).filter(|id| id != preset::STANDARD)
            }
            _ => None,
        };
        let chosen = match wanted {
            Some(id) => Some(preset::activate(&registry.ctx, &id).await?),
            None => None,
        };
        let (opened, source) = match &options.resume {
            Some(id) => (
                sessions.open(RString::from(id.as_str())).await,
                SessionStartSource::Resume,
            ),
            None => {
                let request = CreateSession {
                    id: match &options.session_id {
                        Some(id) => RSome(RString::from(id.as_str())),
                        None => CreateSession::default().id,
                    },
                    cwd: RSome(RString::from(options.cwd.as_str())),
                    parent: options.parent.as_deref().map(RString::from).into(),
                    delegation_depth: options.delegation_depth,
                    seed: options
                        .seed
                        .as_ref()
                        .map(|seed| SessionSeed {
                            source: RString::from(seed.session.as_str()),
                            prefix_len: seed.prefix_len,
                        })
                        .into(),
                    agent_preset: chosen
                        .as_ref()
                        .map(|preset| RString::from(preset.id.as_str()))
                        .into(),
                };
                (sessions.create(request).await, SessionStartSource::Startup)
            }
        };
        let session = opened.into_result().map_err(|error| AgentError::Session {
            id: options.resume.clone().unwrap_or_default(),
            error,
        })?;
        let id = session.id().to_string();
        let resolved = match (chosen, session.agent_preset().into_option()) {
            (Some(preset), _) => preset::Resolved {
                preset: Some(preset),
                note: None,
            },
            (None, Some(logged)) => preset::resume(&registry.ctx, &id, &logged).await,
            (None, None) => preset::Resolved::default(),
        };
        let scope = with_preset(
            with_workspace(options.scope, &options.cwd),
            None,
            resolved.preset.as_ref(),
        );
        let agent = Arc::new(Agent {
            id: id.clone(),
            route: Mutex::new(Route {
                provider: options.provider,
                model: options.model,
                scope,
                cwd: options.cwd,
                preset: resolved.preset,
                preset_note: resolved.note,
            }),
            session: Arc::new(session),
            phase: Mutex::new(Phase::default()),
        });
        {
            let mut agents = lock(&registry.agents);
            if agents.iter().any(|known| known.id == id) {
                return Err(AgentError::Exists(id));
            }
            agents.push(agent);
        }
        registry.notify(&AGENT_CREATED, &id, AgentNoticeData::Created);
        registry.notify(
            &AGENT_SESSION_START,
            &id,
            AgentNoticeData::SessionStart {
                source,
                delegated: options.delegation_depth > 0,
            },
        );
        Ok(RString::from(id))
    }

    fn send(
        &self,
        agent: &str,
        message: Message,
        mut target: InboxTarget,
        wakeup: bool,
    ) -> Result<RString, AgentError> {
        let registry = &self.0;
        let known = registry.agent(agent);
        if wakeup
            && known
                .as_ref()
                .is_some_and(|known| lock(&known.phase).disposing)
        {
            return Err(AgentError::Disposing(agent.to_owned()));
        }
        if wakeup && known.is_none() {
            return Err(AgentError::NoAgentToWake(agent.to_owned()));
        }
        // A waking message cannot join a turn that is being cancelled: it opens the next one.
        let after_abort = wakeup
            && known.as_ref().is_some_and(|known| {
                let phase = lock(&known.phase);
                phase.running && phase.aborting.is_some()
            });
        if after_abort {
            target = InboxTarget::NextTurn;
        }
        let session = registry.session(agent)?;
        let id = registry.insert(&session, target, message)?;
        if let Some(known) = known.filter(|_| wakeup) {
            if target == InboxTarget::NextStep {
                let mut phase = lock(&known.phase);
                phase.steps_owed |= phase.running;
            }
            wake(registry, &known, after_abort);
        }
        Ok(RString::from(id))
    }

    fn cancel(&self, agent: &str, cause: AbortCause, keep_inbox: bool) -> Result<(), AgentError> {
        let registry = &self.0;
        let known = registry
            .agent(agent)
            .ok_or_else(|| AgentError::Unknown(agent.to_owned()))?;
        if !keep_inbox {
            lock(&known.phase).wake_latched = false;
            registry.clear(&known.session)?;
        }
        let running = {
            let mut phase = lock(&known.phase);
            if phase.running && phase.aborting.is_none() {
                phase.aborting = Some(cause.clone());
            }
            phase.running
        };
        if running {
            registry.cancel_turn(agent, &cause);
        }
        Ok(())
    }

    fn update_queue(&self, session: &str, id: &str, action: QueueAction) -> Result<(), AgentError> {
        let registry = &self.0;
        let live = registry.session(session)?;
        match action {
            QueueAction::Remove => registry
                .remove_pending(&live, id, Some(SpliceOutcome::Canceled))
                .map(|_| ()),
            QueueAction::Edit { content } => registry.edit_pending(&live, id, content),
            QueueAction::Steer => {
                let at = registry.with_inbox(&live, |inbox| inbox.position(id));
                match at {
                    None => Err(AgentError::NotQueued(id.to_owned())),
                    Some((InboxTarget::NextStep, _)) => {
                        Err(AgentError::AlreadySteering(id.to_owned()))
                    }
                    Some((InboxTarget::NextTurn, _)) => {
                        // Moved, not dropped: the removal carries no cancel outcome, and the
                        // message joins next-step under the same id.
                        let (_, message) = registry.remove_pending(&live, id, None)?;
                        self.send(session, message, InboxTarget::NextStep, true)
                            .map(|_| ())
                    }
                }
            }
        }
    }

    /// What waiting for `agent` to be idle takes: its last outcome now, or a receiver. Decided
    /// before any await, so a waiter holds neither the agent nor the registry: when the
    /// registry goes away (its row unloads) the sender goes with it and the waiter is told.
    fn idle_wait(&self, agent: &str) -> Result<Idle, AgentError> {
        let known = self
            .0
            .agent(agent)
            .ok_or_else(|| AgentError::Unknown(agent.to_owned()))?;
        let mut phase = lock(&known.phase);
        if !phase.running {
            return Ok(Idle::Now(Box::new(phase.last.clone())));
        }
        let (tell, wait) = oneshot::channel();
        phase.waiters.push(tell);
        Ok(Idle::Later(wait))
    }

    async fn dispose(&self, agent: String) -> Result<(), AgentError> {
        // From here no wake starts a driver, so the agent is removed idle.
        if let Some(known) = self.0.agent(&agent) {
            lock(&known.phase).disposing = true;
        }
        self.cancel(&agent, AbortCause::Disposed, false)?;
        self.idle_wait(&agent)?.wait(&agent).await?;
        let registry = &self.0;
        registry.retire(&agent);
        // The session goes with its agent: written out and its lock released.
        if let Ok(Some(sessions)) = registry.ctx.get::<SessionsService>(SESSIONS_SERVICE) {
            sessions
                .close(RString::from(agent.as_str()))
                .await
                .into_result()
                .map_err(|error| AgentError::Close {
                    agent: agent.clone(),
                    error,
                })?;
        }
        Ok(())
    }
}

impl Service {
    /// Switches a session that has had no turn to preset `id`, logged before it applies.
    async fn set_preset(&self, agent: &str, id: &str) -> Result<(), AgentError> {
        let registry = &self.0;
        let known = registry
            .agent(agent)
            .ok_or_else(|| AgentError::Unknown(agent.to_owned()))?;
        if has_had_turn(&known) {
            return Err(AgentError::PresetAfterTurn(agent.to_owned()));
        }
        let active = preset::activate(&registry.ctx, id).await?;
        // A turn may have started while the preset's rows mounted.
        if has_had_turn(&known) {
            return Err(AgentError::PresetAfterTurn(agent.to_owned()));
        }
        known
            .session
            .log(&AgentPresetSelectedEvent {
                agent_preset: active.id.clone(),
            })
            .map_err(|error| AgentError::Session {
                id: agent.to_owned(),
                error,
            })?;
        let mut route = lock(&known.route);
        route.scope = with_preset(
            std::mem::take(&mut route.scope),
            route.preset.as_ref(),
            Some(&active),
        );
        route.preset = Some(active);
        route.preset_note = None;
        Ok(())
    }
}

/// Whether agent `agent`'s session has opened a turn (now, before, or in an earlier run).
fn has_had_turn(agent: &Agent) -> bool {
    {
        let phase = lock(&agent.phase);
        if phase.running || phase.last.is_some() {
            return true;
        }
    }
    let count = agent.session.event_count();
    agent
        .session
        .events(0, count)
        .iter()
        .any(|record| record.kind.as_str() == dsh_protocol::kinds::TURN_START)
}

impl Agents for Service {
    fn create(&self, options: Json<AgentOptions>) -> FfiFuture<RResult<RString, AgentsError>> {
        let service = Service(self.0.clone());
        async move {
            match options.decode() {
                Ok(options) => done(service.create(options).await),
                Err(error) => done(Err(AgentError::Options(error))),
            }
        }
        .into_ffi()
    }

    fn send(
        &self,
        agent: RString,
        message: Json<Message>,
        target: Json<InboxTarget>,
        wakeup: bool,
    ) -> RResult<RString, AgentsError> {
        let decoded = message
            .decode()
            .map_err(AgentError::Message)
            .and_then(|message| Ok((message, target.decode().map_err(AgentError::Target)?)));
        done(
            decoded
                .and_then(|(message, target)| Service::send(self, &agent, message, target, wakeup)),
        )
    }

    fn cancel(
        &self,
        agent: RString,
        cause: Json<AbortCause>,
        keep_inbox: bool,
    ) -> RResult<(), AgentsError> {
        // A cause that does not read is an ordinary cancel.
        let cause = cause.decode().unwrap_or(AbortCause::User);
        done(Service::cancel(self, &agent, cause, keep_inbox))
    }

    fn when_idle(
        &self,
        agent: RString,
    ) -> FfiFuture<RResult<Json<Option<TurnOutcome>>, AgentsError>> {
        let waiting = self.idle_wait(&agent);
        async move {
            let idle = match waiting {
                Ok(idle) => idle.wait(&agent).await,
                Err(error) => Err(error),
            };
            done(idle.map(|last| Json::encode(&last)))
        }
        .into_ffi()
    }

    fn list(&self) -> Json<Vec<AgentSummary>> {
        let agents: Vec<AgentSummary> = lock(&self.0.agents)
            .iter()
            .map(|agent| {
                let route = lock(&agent.route).clone();
                AgentSummary {
                    id: agent.id.clone(),
                    status: match lock(&agent.phase).running {
                        true => AgentStatus::Running,
                        false => AgentStatus::Idle,
                    },
                    cwd: route.cwd,
                    provider: route.provider,
                    model: route.model,
                    agent_preset: route.preset.map(|preset| preset.id),
                    preset_note: route.preset_note,
                }
            })
            .collect();
        Json::encode(&agents)
    }

    fn set_preset(&self, agent: RString, preset: RString) -> FfiFuture<RResult<(), AgentsError>> {
        let service = Service(self.0.clone());
        async move { done(service.set_preset(&agent, &preset).await) }.into_ffi()
    }

    fn set_route(
        &self,
        agent: RString,
        provider: RString,
        model: RString,
    ) -> RResult<(), AgentsError> {
        let (provider, model) = (provider.into_string(), model.into_string());
        {
            let agents = lock(&self.0.agents);
            let Some(found) = agents.iter().find(|known| known.id == agent.as_str()) else {
                return done(Err(AgentError::Unknown(agent.into_string())));
            };
            let mut route = lock(&found.route);
            route.provider.clone_from(&provider);
            route.model.clone_from(&model);
        }
        // Told with no lock held: a listener may ask the registry back.
        self.0.notify(
            &AGENT_ROUTE,
            agent.as_str(),
            AgentNoticeData::Route { provider, model },
        );
        ROk(())
    }

    fn inbox(&self, session: RString) -> RResult<Json<InboxListing>, AgentsError> {
        let registry = &self.0;
        done(registry.session(&session).map(|live| {
            registry.with_inbox(&live, |inbox| {
                Json::encode(&InboxListing {
                    next_turn: inbox.next_turn.clone(),
                    next_step: inbox.next_step.clone(),
                })
            })
        }))
    }

    fn update_queue(
        &self,
        session: RString,
        message: RString,
        action: Json<QueueAction>,
    ) -> RResult<(), AgentsError> {
        done(
            action
                .decode()
                .map_err(AgentError::Action)
                .and_then(|action| Service::update_queue(self, &session, &message, action)),
        )
    }

    fn dispose(&self, agent: RString) -> FfiFuture<RResult<(), AgentsError>> {
        let service = Service(self.0.clone());
        async move { done(service.dispose(agent.into_string()).await) }.into_ffi()
    }
}

/// The scope chain of an agent working in `cwd`: its directory's tool scope first, unless the
/// chain starts with it already (a child's, which begins with its parent's chain).
fn with_workspace(mut scope: Vec<String>, cwd: &str) -> Vec<String> {
    let workspace = dsh_agents_seam::workspace_scope(cwd);
    if scope.first() != Some(&workspace) {
        scope.insert(0, workspace);
    }
    scope
}
