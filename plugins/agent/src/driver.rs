//! The driver of one agent: started by a waking send to an idle agent, it runs turns through
//! the `agent_loop` service back to back while the inbox holds work, then goes idle. The
//! status flips `running` before its first `turn/start` and `idle` after its last `turn/end`.
//!
//! Each turn gets the agent's inbox with it ([`TurnInbox`]): the loop claims the turn's input
//! once the turn is open, and steering at each step boundary, without looking the registry up.

use std::sync::{Arc, Weak};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RSome, RString, RVec};
use dsh_agents_seam::{
    AGENT_LOOP_SERVICE, AGENT_STATUS, AgentLoopService, AgentsError, AgentsErrorKind, TurnInbox,
    TurnInbox_TO, TurnRequest,
};
use dsh_plugin_api::{Json, LogLevel, lock};
use dsh_protocol::{AgentNoticeData, AgentStatus, Message, TurnEndReason, TurnOutcome};
use tokio::sync::oneshot;

use crate::registry::{Agent, Registry};

/// Wakes `agent`: starts its driver when idle; while a cancel settles, a wake that was sent
/// for after it (`after_abort`) is latched unless the cause is `disposed`. A wake that finds
/// the driver running marks the agent steered, so what it sent is not left behind if the turn
/// ends before claiming it.
pub(crate) fn wake(registry: &Arc<Registry>, agent: &Arc<Agent>, after_abort: bool) {
    {
        let mut phase = lock(&agent.phase);
        if phase.disposing {
            return;
        }
        if phase.running {
            phase.steered = true;
            if after_abort && !matches!(phase.aborting, Some(dsh_protocol::AbortCause::Disposed)) {
                phase.wake_latched = true;
            }
            return;
        }
        phase.running = true;
        phase.aborting = None;
        phase.wake_latched = false;
        phase.steered = false;
    }
    registry.notify(
        &AGENT_STATUS,
        &agent.id,
        AgentNoticeData::Status {
            status: AgentStatus::Running,
        },
    );
    let (task_registry, task_agent) = (registry.clone(), agent.clone());
    let spawned = registry.ctx.spawn(async move {
        drive(&task_registry, &task_agent).await;
    });
    if let Err(error) = spawned {
        registry.ctx.log(
            LogLevel::Error,
            &format!("agent `{}`: its driver cannot start: {error}", agent.id),
        );
        let last = TurnOutcome::unopened(
            agent.id.as_str(),
            TurnEndReason::error("NO_DRIVER", error.to_string()),
        );
        settle(registry, agent, last);
    }
}

/// The inbox of one agent's session, as a turn claims it.
struct Claims {
    registry: Weak<Registry>,
    agent: Arc<Agent>,
}

impl TurnInbox for Claims {
    fn claim(&self, turn: u64, turn_boundary: bool) -> RResult<Json<Vec<Message>>, AgentsError> {
        let Some(registry) = self.registry.upgrade() else {
            return RErr(AgentsError::new(
                AgentsErrorKind::Gone,
                "the agents registry was unloaded",
            ));
        };
        // Cleared before the claim, never after: a steer that lands meanwhile is either taken
        // by this claim or marks the agent again.
        {
            let mut phase = lock(&self.agent.phase);
            phase.steered = false;
            phase.steps_owed = false;
        }
        match registry.claim(&self.agent.session, turn, turn_boundary) {
            Ok(claimed) => ROk(Json::encode(&claimed)),
            Err(error) => RErr(error.into()),
        }
    }

    fn claim_steered(&self, turn: u64) -> RResult<Json<Vec<Message>>, AgentsError> {
        let owed = std::mem::take(&mut lock(&self.agent.phase).steps_owed);
        if !owed {
            return ROk(Json::encode(&Vec::<Message>::new()));
        }
        self.claim(turn, false)
    }
}

/// One turn through the loop; a cancel that came before it started means no turn at all.
async fn one_turn(registry: &Arc<Registry>, agent: &Arc<Agent>) -> TurnOutcome {
    if let Some(cause) = lock(&agent.phase).aborting.clone() {
        return TurnOutcome::unopened(agent.id.as_str(), TurnEndReason::Aborted { reason: cause });
    }
    let Ok(Some(driver)) = registry.ctx.get::<AgentLoopService>(AGENT_LOOP_SERVICE) else {
        return TurnOutcome::unopened(
            agent.id.as_str(),
            TurnEndReason::error(
                "NO_DRIVER",
                "no `agent_loop` service: mount the agent-loop plugin",
            ),
        );
    };
    let route = lock(&agent.route).clone();
    // A preset's rows go when the presets row reloads: the turn mounts them again first (a
    // lookup when they are there), or ends unopened saying why.
    if let Some(preset) = &route.preset
        && let Err(error) = crate::preset::activate(&registry.ctx, &preset.id).await
    {
        return TurnOutcome::unopened(
            agent.id.as_str(),
            TurnEndReason::error("PRESET_UNAVAILABLE", error.to_string()),
        );
    }
    let inbox = TurnInbox_TO::from_value(
        Claims {
            registry: Arc::downgrade(registry),
            agent: agent.clone(),
        },
        TD_Opaque,
    );
    let outcome = driver
        .run_turn(TurnRequest {
            session: RString::from(agent.id.as_str()),
            input: Json::encode(&Vec::new()),
            inbox: RSome(inbox),
            provider: RString::from(route.provider.as_str()),
            model: RString::from(route.model.as_str()),
            cwd: RString::from(route.cwd.as_str()),
            scope: route
                .scope
                .iter()
                .map(|key| RString::from(key.as_str()))
                .collect::<RVec<_>>(),
        })
        .await;
    outcome.decode().unwrap_or_else(|error| {
        TurnOutcome::unopened(
            agent.id.as_str(),
            TurnEndReason::error(
                "UNKNOWN",
                format!("the loop's outcome does not read: {error}"),
            ),
        )
    })
}

/// Runs turns while work is owed: after a completed (or max-tokens) turn, while next-turn holds a
/// message or a steer came after the turn's last claim; after a cancelled one, only when a wake
/// was latched meanwhile; never after `blocked` or `error` (queued work waits for the next
/// wake). A message only injected (next-step without a wake) never starts a turn of its own, as
/// in the reference: it is read by the next turn something else starts. Were it to start one,
/// a child's report landing just after its parent's last claim would cost the parent a turn it
/// does not have when the report lands a moment earlier or later.
async fn drive(registry: &Arc<Registry>, agent: &Arc<Agent>) {
    loop {
        let outcome = one_turn(registry, agent).await;
        // Decided and, when done, marked idle under one lock: a send that lands meanwhile
        // either is seen pending here or finds the agent idle and starts a new driver.
        let waiters = {
            let mut phase = lock(&agent.phase);
            let pending = registry.has_pending(&agent.session);
            let next_turn =
                registry.with_inbox(&agent.session, |inbox| !inbox.next_turn.is_empty());
            let owed = next_turn || (pending && phase.steered);
            let again = match &outcome.reason {
                TurnEndReason::Blocked { .. } | TurnEndReason::Error { .. } => false,
                TurnEndReason::Aborted { .. } => phase.wake_latched && pending,
                TurnEndReason::Other(_) => false,
                _ => owed,
            };
            phase.last = Some(outcome.clone());
            phase.aborting = None;
            phase.wake_latched = false;
            phase.steered = false;
            if again {
                continue;
            }
            phase.running = false;
            std::mem::take(&mut phase.waiters)
        };
        announce_idle(registry, agent, &outcome, waiters);
        return;
    }
}

/// A driver that cannot start: idle again, with `last` as its outcome.
fn settle(registry: &Registry, agent: &Agent, last: TurnOutcome) {
    let waiters = {
        let mut phase = lock(&agent.phase);
        phase.running = false;
        phase.aborting = None;
        phase.wake_latched = false;
        phase.steered = false;
        phase.last = Some(last.clone());
        std::mem::take(&mut phase.waiters)
    };
    announce_idle(registry, agent, &last, waiters);
}

/// The driver is done: announced, and whoever waited gets the last outcome.
fn announce_idle(
    registry: &Registry,
    agent: &Agent,
    last: &TurnOutcome,
    waiters: Vec<oneshot::Sender<Option<TurnOutcome>>>,
) {
    registry.notify(
        &AGENT_STATUS,
        &agent.id,
        AgentNoticeData::Status {
            status: AgentStatus::Idle,
        },
    );
    for waiter in waiters {
        let _ = waiter.send(Some(last.clone()));
    }
}
