//! Plugin `agent-loop`: provides `agent_loop`, the default driver. A turn runs its steps (one
//! model request plus the tools it calls) until nothing is owed, writing every step to the
//! session log as it happens; `turn/end` is written whatever happens, so a log never keeps an
//! open turn that the loop could have closed. One turn runs per session at a time; `cancel`
//! stops the running one (a stream cut mid-way keeps what arrived, calls never dispatched get
//! `ABORTED_BEFORE_DISPATCH`, the turn ends `aborted` with the cause).
//!
//! Hooks: `agent/pre-step` (enter or reject), `agent/request` (the request before `llm`),
//! `agent/request-error` (retry), `agent/turn-stopping` (keep a completed turn going).

mod log;
mod stream;
mod turn;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use async_ffi::{FfiFuture, FutureExt};
use dsh_agent_seam::{
    AGENT_ERROR, AGENT_LOOP, AGENT_PRE_STEP, AGENT_REQUEST, AGENT_REQUEST_ERROR,
    AGENT_TURN_STOPPING, AgentLoop, AgentLoop_TO, AgentNotice, AgentRequest, RequestError,
    StepView, TurnRequest, TurnStopping,
};
use dsh_llm_seam::{LLM, LlmService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, SerialEvent, Service, lock};
use dsh_session_seam::{SESSIONS, SessionsService};
use dsh_tools_seam::{CancelFlag, TOOLS, ToolsService};
use serde_json::json;

use crate::log::Log;
use crate::turn::{Cancel, Tally};

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
    pub(crate) ctx: Context,
    pub(crate) sessions: Service<SessionsService>,
    pub(crate) llm: Service<LlmService>,
    pub(crate) tools: Option<Service<ToolsService>>,
    pub(crate) pre_step: Channel<WaterfallEvent<StepView, RString>>,
    pub(crate) request_error: Channel<WaterfallEvent<RequestError, RString>>,
    pub(crate) request_hook: Channel<WaterfallEvent<AgentRequest, RString>>,
    pub(crate) turn_stopping: Channel<SerialEvent<TurnStopping, RString>>,
    pub(crate) system: String,
    pub(crate) max_steps: u64,
}

struct Driver {
    deps: Arc<Deps>,
    running: Arc<Mutex<HashMap<String, Arc<Cancel>>>>,
}

/// Forgets the running turn when the turn's future ends or is dropped.
struct Running {
    running: Arc<Mutex<HashMap<String, Arc<Cancel>>>>,
    session: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.running).remove(&self.session);
    }
}

fn outcome(session: &str, turn: u64, reason: &serde_json::Value, tally: &Tally) -> RString {
    RString::from(
        json!({
            "sessionId": session,
            "turn": turn,
            "reason": reason,
            "output": tally.output,
            "usage": {"inputTokens": tally.input_tokens, "outputTokens": tally.output_tokens},
        })
        .to_string(),
    )
}

async fn run_turn(
    deps: Arc<Deps>,
    running: Arc<Mutex<HashMap<String, Arc<Cancel>>>>,
    request: TurnRequest,
) -> RString {
    let id = request.session.to_string();
    let mut tally = Tally::default();
    let cancel = Arc::new(Cancel {
        flag: CancelFlag::new(),
        cause: Mutex::new("user".to_owned()),
    });
    {
        let mut turns = lock(&running);
        if turns.contains_key(&id) {
            let reason = json!({"kind": "error", "error": {"message": format!("session `{id}` already runs a turn"), "code": "TURN_RUNNING"}});
            return outcome(&id, 0, &reason, &tally);
        }
        turns.insert(id.clone(), cancel.clone());
    }
    let _running = Running {
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
            let reason = json!({"kind": "error", "error": {"message": error.to_string(), "code": "SESSION_UNAVAILABLE"}});
            return outcome(&id, 0, &reason, &tally);
        }
    };
    let log = Log { session: &session };
    let past = log.past(turn::SNAPSHOT_PLUGIN);
    let turn = past.turns + 1;
    if let Err(error) = log.append("turn/start", &json!({"turn": turn})) {
        let reason = json!({"kind": "error", "error": {"message": error, "code": "LOG_REFUSED"}});
        return outcome(&id, turn, &reason, &tally);
    }
    let mut open = OpenTurn {
        log: Log { session: &session },
        turn,
        open_step: tally.open_step.clone(),
        closed: false,
    };
    let end = match turn::steps(&deps, &session, &request, turn, past, &cancel, &mut tally).await {
        Ok(end) => end.reason,
        Err(error) => json!({"kind": "error", "error": {"message": error, "code": "LOG_REFUSED"}}),
    };
    if end["kind"] == "error" {
        // After the last `step/end`, before `turn/end`, as the reference reports it.
        let notice = AgentNotice {
            agent: request.session.clone(),
            data: RString::from(
                json!({"turn": turn, "step": tally.last_step, "error": end["error"]}).to_string(),
            ),
        };
        let _ = deps.ctx.emit(&AGENT_ERROR, &notice);
    }
    open.closed = true;
    let closed = log.append("turn/end", &json!({"turn": turn, "reason": end}));
    let flushed = session.flush().await.into_result();
    let end = match (closed, flushed) {
        (Ok(_), Ok(())) => end,
        (Err(error), _) => {
            json!({"kind": "error", "error": {"message": error, "code": "LOG_REFUSED"}})
        }
        (_, Err(error)) => {
            json!({"kind": "error", "error": {"message": error.to_string(), "code": "LOG_REFUSED"}})
        }
    };
    outcome(&id, turn, &end, &tally)
}

/// Closes the log of a turn whose future is dropped before it ended (its owner unloaded
/// mid-turn): the open step gets its `step/end` and the turn `turn/end` `aborted`
/// (`disposed`), so the log does not keep an open turn the loop could have closed. What the
/// log refuses here (a call still unanswered) is left to the crash-repair closers.
struct OpenTurn<'s> {
    log: Log<'s>,
    turn: u64,
    open_step: Arc<AtomicU64>,
    closed: bool,
}

impl Drop for OpenTurn<'_> {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        let turn = self.turn;
        let step = self.open_step.load(Ordering::Relaxed);
        if step > 0 {
            let _ = self
                .log
                .append("step/end", &json!({"turn": turn, "step": step}));
        }
        let reason = json!({"kind": "aborted", "reason": {"kind": "disposed"}});
        let _ = self
            .log
            .append("turn/end", &json!({"turn": turn, "reason": reason}));
    }
}

impl AgentLoop for Driver {
    fn run_turn(&self, request: TurnRequest) -> FfiFuture<RString> {
        run_turn(self.deps.clone(), self.running.clone(), request).into_ffi()
    }

    fn cancel(&self, session: RString, cause: RString) -> bool {
        let Some(turn) = lock(&self.running).get(session.as_str()).cloned() else {
            return false;
        };
        // The first cause wins, as the agents registry records it.
        if !turn.flag.is_fired() {
            *lock(&turn.cause) = cause.to_string();
        }
        turn.flag.fire();
        true
    }
}

pub struct AgentLoopPlugin;

impl Plugin for AgentLoopPlugin {
    const NAME: &'static str = "agent-loop";
    const INJECT: &'static [&'static str] = &[SESSIONS, LLM, TOOLS];
    const PROVIDES: &'static [&'static str] = &[AGENT_LOOP];
    type Config = LoopConfig;

    async fn apply(ctx: Context, config: LoopConfig) -> Result<(), PluginError> {
        let deps = Arc::new(Deps {
            ctx: ctx.clone(),
            sessions: ctx.inject::<SessionsService>(SESSIONS)?,
            llm: ctx.inject::<LlmService>(LLM)?,
            tools: Some(ctx.inject::<ToolsService>(TOOLS)?),
            pre_step: ctx.channel(&AGENT_PRE_STEP)?,
            request_error: ctx.channel(&AGENT_REQUEST_ERROR)?,
            request_hook: ctx.channel(&AGENT_REQUEST)?,
            turn_stopping: ctx.channel(&AGENT_TURN_STOPPING)?,
            system: config.system,
            max_steps: config.max_steps.max(1),
        });
        let running: Arc<Mutex<HashMap<String, Arc<Cancel>>>> = Arc::default();
        // A turn still running when this row unloads ends `aborted` (`disposed`).
        let draining = running.clone();
        ctx.on_dispose(move || {
            for turn in lock(&draining).values() {
                *lock(&turn.cause) = "disposed".to_owned();
                turn.flag.fire();
            }
        })?;
        ctx.provide(
            AGENT_LOOP,
            AgentLoop_TO::from_value(Driver { deps, running }, TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(AgentLoopPlugin);
