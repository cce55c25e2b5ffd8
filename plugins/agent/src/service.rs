//! The `agents` service over the registry: create, send (with the wake rules), cancel,
//! when-idle, list, dispose, and the loop's claim.

use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RErr, ROk, RResult, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agent_seam::{AGENT_CREATED, AGENT_INBOX_CLAIMED, AGENT_SESSION_START, Agents};
use dsh_plugin_api::lock;
use dsh_session_seam::{CreateSession, SESSIONS, SessionsService};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::driver::wake;
use crate::inbox::{NEXT_TURN, target_of};
use crate::registry::{Agent, Phase, Registry, Route};

pub(crate) struct Service(pub(crate) Arc<Registry>);

/// An agent's idleness: now (its last outcome), or later.
enum Idle {
    Now(RString),
    Later(oneshot::Receiver<String>),
}

impl Idle {
    async fn wait(self, agent: &str) -> Result<RString, String> {
        match self {
            Idle::Now(last) => Ok(last),
            Idle::Later(wait) => wait.await.map(RString::from).map_err(|_| {
                format!("agent `{agent}` went away before it was idle (its registry was unloaded)")
            }),
        }
    }
}

fn done<T>(result: Result<T, String>) -> RResult<T, RString> {
    match result {
        Ok(value) => ROk(value),
        Err(error) => RErr(RString::from(error)),
    }
}

fn text(options: &Value, key: &str) -> String {
    options[key].as_str().unwrap_or_default().to_owned()
}

impl Service {
    async fn create(&self, options: String) -> Result<RString, String> {
        let options: Value = serde_json::from_str(&options)
            .map_err(|error| format!("agent options are not JSON: {error}"))?;
        let registry = &self.0;
        let sessions = match registry.ctx.get::<SessionsService>(SESSIONS) {
            Ok(Some(sessions)) => sessions,
            _ => return Err("no `sessions` service: mount the session plugin".to_owned()),
        };
        // Every turn resolves paths against it and the file tools fence writes to it: an agent
        // without one could not be confined.
        let cwd = text(&options, "cwd");
        if cwd.is_empty() || !std::path::Path::new(&cwd).is_absolute() {
            return Err(format!(
                "agent options: \"cwd\" must be an absolute directory, not `{cwd}`"
            ));
        }
        let (opened, source) = match options["resume"].as_str() {
            Some(id) => (sessions.open(RString::from(id)).await, "resume"),
            None => {
                let request = CreateSession {
                    id: match options["sessionId"].as_str() {
                        Some(id) => RSome(RString::from(id)),
                        None => CreateSession::default().id,
                    },
                    cwd: RSome(RString::from(cwd.as_str())),
                    ..CreateSession::default()
                };
                (sessions.create(request).await, "startup")
            }
        };
        let session = opened.into_result().map_err(|error| error.to_string())?;
        let id = session.id().to_string();
        let agent = Arc::new(Agent {
            id: id.clone(),
            route: Route {
                provider: text(&options, "provider"),
                model: text(&options, "model"),
                cwd,
                scope: options["scope"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|key| key.as_str().map(str::to_owned))
                    .collect(),
            },
            session: Arc::new(session),
            phase: Mutex::new(Phase::default()),
        });
        {
            let mut agents = lock(&registry.agents);
            if agents.iter().any(|known| known.id == id) {
                return Err(format!("agent `{id}` already exists"));
            }
            agents.push(agent);
        }
        registry.notify(&AGENT_CREATED, &id, json!({}));
        registry.notify(&AGENT_SESSION_START, &id, json!({"source": source}));
        Ok(RString::from(id))
    }

    fn send(
        &self,
        agent: &str,
        message: &str,
        target: &str,
        wakeup: bool,
    ) -> Result<RString, String> {
        let registry = &self.0;
        let message: Value = serde_json::from_str(message)
            .map_err(|error| format!("the message is not JSON: {error}"))?;
        let mut target = target_of(target)?;
        let known = registry.agent(agent);
        if wakeup
            && known
                .as_ref()
                .is_some_and(|known| lock(&known.phase).disposing)
        {
            return Err(format!("agent `{agent}` is being disposed"));
        }
        if wakeup && known.is_none() {
            return Err(format!(
                "no agent `{agent}`: a waking send needs an agent (create one first)"
            ));
        }
        // A waking message cannot join a turn that is being cancelled: it opens the next one.
        let after_abort = wakeup
            && known.as_ref().is_some_and(|known| {
                let phase = lock(&known.phase);
                phase.running && phase.aborting.is_some()
            });
        if after_abort {
            target = NEXT_TURN;
        }
        let session = registry.session(agent)?;
        let id = registry.insert(&session, target, message)?;
        if let Some(known) = known.filter(|_| wakeup) {
            wake(registry, &known, after_abort);
        }
        Ok(RString::from(id))
    }

    fn cancel(&self, agent: &str, cause: &str, keep_inbox: bool) -> Result<(), String> {
        let registry = &self.0;
        let known = registry
            .agent(agent)
            .ok_or_else(|| format!("no agent `{agent}`"))?;
        if !keep_inbox {
            lock(&known.phase).wake_latched = false;
            registry.clear(&known.session)?;
        }
        let running = {
            let mut phase = lock(&known.phase);
            if phase.running && phase.aborting.is_none() {
                phase.aborting = Some(cause.to_owned());
            }
            phase.running
        };
        if running {
            registry.cancel_turn(agent, cause);
        }
        Ok(())
    }

    /// What waiting for `agent` to be idle takes: its last outcome now, or a receiver. Decided
    /// before any await, so a waiter holds neither the agent nor the registry: when the
    /// registry goes away (its row unloads) the sender goes with it and the waiter is told.
    fn idle_wait(&self, agent: &str) -> Result<Idle, String> {
        let known = self
            .0
            .agent(agent)
            .ok_or_else(|| format!("no agent `{agent}`"))?;
        let mut phase = lock(&known.phase);
        if !phase.running {
            return Ok(Idle::Now(RString::from(phase.last.to_string())));
        }
        let (tell, wait) = oneshot::channel();
        phase.waiters.push(tell);
        Ok(Idle::Later(wait))
    }

    async fn dispose(&self, agent: String) -> Result<(), String> {
        // From here no wake starts a driver, so the agent is removed idle.
        if let Some(known) = self.0.agent(&agent) {
            lock(&known.phase).disposing = true;
        }
        self.cancel(&agent, "disposed", false)?;
        self.idle_wait(&agent)?.wait(&agent).await?;
        let registry = &self.0;
        registry.retire(&agent);
        // The session goes with its agent: written out and its lock released.
        if let Ok(Some(sessions)) = registry.ctx.get::<SessionsService>(SESSIONS) {
            sessions
                .close(RString::from(agent.as_str()))
                .await
                .into_result()
                .map_err(|error| format!("agent `{agent}`: closing its session: {error}"))?;
        }
        Ok(())
    }
}

impl Agents for Service {
    fn create(&self, options: RString) -> FfiFuture<RResult<RString, RString>> {
        let service = Service(self.0.clone());
        async move { done(service.create(options.into_string()).await) }.into_ffi()
    }

    fn send(
        &self,
        agent: RString,
        message: RString,
        target: RString,
        wakeup: bool,
    ) -> RResult<RString, RString> {
        done(Service::send(self, &agent, &message, &target, wakeup))
    }

    fn cancel(&self, agent: RString, cause: RString, keep_inbox: bool) -> RResult<(), RString> {
        done(Service::cancel(self, &agent, &cause, keep_inbox))
    }

    fn when_idle(&self, agent: RString) -> FfiFuture<RResult<RString, RString>> {
        let waiting = self.idle_wait(&agent);
        async move {
            match waiting {
                Ok(idle) => done(idle.wait(&agent).await),
                Err(error) => RErr(RString::from(error)),
            }
        }
        .into_ffi()
    }

    fn list(&self) -> RString {
        let agents: Vec<Value> = lock(&self.0.agents)
            .iter()
            .map(|agent| {
                let status = match lock(&agent.phase).running {
                    true => "running",
                    false => "idle",
                };
                json!({"id": agent.id, "status": status, "cwd": agent.route.cwd, "provider": agent.route.provider, "model": agent.route.model})
            })
            .collect();
        RString::from(Value::Array(agents).to_string())
    }

    fn dispose(&self, agent: RString) -> FfiFuture<RResult<(), RString>> {
        let service = Service(self.0.clone());
        async move { done(service.dispose(agent.into_string()).await) }.into_ffi()
    }

    fn claim(&self, session: RString, turn: u64, turn_boundary: bool) -> RResult<RString, RString> {
        let registry = &self.0;
        let claimed = registry
            .session(&session)
            .and_then(|live| registry.claim(&live, turn_boundary));
        match claimed {
            Ok(claimed) => {
                for message in &claimed {
                    registry.notify(
                        &AGENT_INBOX_CLAIMED,
                        &session,
                        json!({"message": message, "turn": turn}),
                    );
                }
                ROk(RString::from(Value::Array(claimed).to_string()))
            }
            Err(error) => RErr(RString::from(error)),
        }
    }
}
