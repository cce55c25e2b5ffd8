//! Plugin `agent-loop`: provides `agent_loop`, the default driver. A turn runs its steps (one
//! model request plus the tools it calls) until nothing is owed, writing every step to the
//! session log as it happens; `turn/end` is written whatever happens, so a log never keeps an
//! open turn that the loop could have closed. One turn runs per session at a time; `cancel`
//! stops the running one (a stream cut mid-way keeps what arrived, calls never dispatched get
//! `ABORTED_BEFORE_DISPATCH`, the turn ends `aborted` with the cause).
//!
//! A turn gets its input with it: its own messages and the inbox of its session, which it
//! claims once the turn is open and again at every step boundary. The modules follow the turn:
//! `turn` (open, steps, keep going, close), `step` (input, prompt, attempts, tools), `prompt`
//! (snapshots, header, the request), `stream` (one model attempt), `hooks` (what it asks around
//! its steps), `log` (its appends).

mod error;
mod hooks;
mod log;
mod prompt;
mod step;
mod stream;
mod turn;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::{
    AGENT_LOOP_SERVICE, AGENT_PRE_STEP, AGENT_PROMPT_SUBMIT, AGENT_REQUEST, AGENT_REQUEST_ERROR,
    AGENT_TURN_STOPPING, AgentLoop, AgentLoop_TO, TurnRequest,
};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Service, lock};
use dsh_protocol::{AbortCause, TurnEndReason, TurnOutcome};
use dsh_sessions_seam::{SESSIONS_SERVICE, SessionsService};
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService};

use crate::hooks::{Events, Hooks};
use crate::log::Log;
use crate::turn::{Cancel, Input, Route, Tally};

/// Config of `agent-loop`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct LoopConfig {
    /// The system prompt when no `system_prompt` service is mounted.
    pub system: String,
    /// Steps one turn may take before it ends `error` (`MAX_STEPS`).
    pub max_steps: u64,
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self {
            system: "You are a coding agent working in the user's repository through tools. \
                     Read before you change files, keep changes small, and say plainly what you did."
                .to_owned(),
            max_steps: 200,
        }
    }
}

/// What a turn needs.
pub(crate) struct Deps {
    pub(crate) sessions: Service<SessionsService>,
    pub(crate) llm: Service<LlmService>,
    pub(crate) tools: Option<Service<ToolsService>>,
    pub(crate) hooks: Arc<dyn Hooks>,
    pub(crate) system: String,
    pub(crate) max_steps: u64,
}

pub(crate) type Running = Arc<Mutex<HashMap<String, Arc<Cancel>>>>;

struct Driver {
    deps: Arc<Deps>,
    running: Running,
}

/// Forgets the running turn when the turn's future ends or is dropped.
struct Registered {
    running: Running,
    session: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.running).remove(&self.session);
    }
}

/// Runs one turn of `request` to its end.
pub(crate) async fn run_turn(
    deps: Arc<Deps>,
    running: Running,
    request: TurnRequest,
) -> TurnOutcome {
    let id = request.session.to_string();
    let cancel = Arc::new(Cancel::new());
    {
        let mut turns = lock(&running);
        if turns.contains_key(&id) {
            let reason = TurnEndReason::error(
                "TURN_RUNNING",
                format!("session `{id}` already runs a turn"),
            );
            return TurnOutcome::unopened(id, reason);
        }
        turns.insert(id.clone(), cancel.clone());
    }
    let _registered = Registered {
        running,
        session: id.clone(),
    };
    let session = match deps
        .sessions
        .open(request.session.clone())
        .await
        .into_result()
    {
        Ok(session) => session,
        Err(error) => {
            let reason = TurnEndReason::error("SESSION_UNAVAILABLE", error.to_string());
            return TurnOutcome::unopened(id, reason);
        }
    };
    let mut input = Input {
        messages: match request.input.decode() {
            Ok(messages) => messages,
            Err(error) => {
                let reason = TurnEndReason::error("INVALID_INPUT", error.to_string());
                return TurnOutcome::unopened(id, reason);
            }
        },
        inbox: request.inbox.into_option(),
    };
    let route = Route {
        provider: request.provider.into_string(),
        model: request.model.into_string(),
        cwd: request.cwd.into_string(),
        scope: request.scope.iter().map(|key| key.to_string()).collect(),
    };
    let log = Log { session: &session };
    let past = log.past(prompt::SNAPSHOT_PLUGIN);
    let turn = past.turns + 1;
    let mut tally = Tally::default();
    let open = match turn::open(&log, turn, &tally) {
        Ok(open) => open,
        Err(error) => return turn::outcome(&id, turn, error.reason(), tally),
    };
    let memory = prompt::Memory::of(past);
    let end = turn::steps(
        &deps,
        &session,
        &route,
        turn,
        &mut input,
        memory,
        (&cancel, &mut tally),
    )
    .await
    .unwrap_or_else(|error| error.reason());
    let end = open.checkpoint(end).await;
    if let Some(failure) = end.failure() {
        // After the last `step/end`, before `turn/end`, as the reference reports it.
        deps.hooks.error(&id, turn, tally.last_step, failure);
    }
    let end = open.close(end).await;
    turn::outcome(&id, turn, end, tally)
}

impl AgentLoop for Driver {
    fn run_turn(&self, request: TurnRequest) -> FfiFuture<Json<TurnOutcome>> {
        let (deps, running) = (self.deps.clone(), self.running.clone());
        async move { Json::encode(&run_turn(deps, running, request).await) }.into_ffi()
    }

    fn cancel(&self, session: RString, cause: Json<AbortCause>) -> bool {
        let Some(turn) = lock(&self.running).get(session.as_str()).cloned() else {
            return false;
        };
        // A cause that does not read is an ordinary cancel.
        turn.fire(cause.decode().unwrap_or(AbortCause::User));
        true
    }
}

pub struct AgentLoopPlugin;

impl Plugin for AgentLoopPlugin {
    const NAME: &'static str = "agent-loop";
    const INJECT: &'static [&'static str] = &[SESSIONS_SERVICE, LLM_SERVICE, TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[dsh_system_prompt_seam::SYSTEM_PROMPT_SERVICE];
    const PROVIDES: &'static [&'static str] = &[AGENT_LOOP_SERVICE];
    type Config = LoopConfig;

    async fn apply(ctx: Context, config: LoopConfig) -> Result<(), PluginError> {
        let hooks = Events {
            ctx: ctx.clone(),
            pre_step: ctx.channel(&AGENT_PRE_STEP)?,
            request_error: ctx.channel(&AGENT_REQUEST_ERROR)?,
            request: ctx.channel(&AGENT_REQUEST)?,
            turn_stopping: ctx.channel(&AGENT_TURN_STOPPING)?,
            prompt_submit: ctx.channel(&AGENT_PROMPT_SUBMIT)?,
        };
        let deps = Arc::new(Deps {
            sessions: ctx.inject::<SessionsService>(SESSIONS_SERVICE)?,
            llm: ctx.inject::<LlmService>(LLM_SERVICE)?,
            tools: Some(ctx.inject::<ToolsService>(TOOLS_SERVICE)?),
            hooks: Arc::new(hooks),
            system: config.system,
            max_steps: config.max_steps.max(1),
        });
        let running: Running = Arc::default();
        // A turn still running when this row unloads ends `aborted` (`disposed`).
        let draining = running.clone();
        ctx.on_dispose(move || {
            for turn in lock(&draining).values() {
                turn.fire(AbortCause::Disposed);
            }
        })?;
        ctx.provide(
            AGENT_LOOP_SERVICE,
            AgentLoop_TO::from_value(Driver { deps, running }, TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(AgentLoopPlugin);
