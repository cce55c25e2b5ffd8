//! The driver of one agent: started by a waking send to an idle agent, it runs turns through
//! the `agent_loop` service back to back while the inbox holds work, then goes idle. The
//! status flips `running` before its first `turn/start` and `idle` after its last `turn/end`.

use std::sync::Arc;

use abi_stable::std_types::{RString, RVec};
use dsh_agent_seam::{AGENT_LOOP, AGENT_STATUS, AgentLoopService, TurnRequest};
use dsh_plugin_api::{LogLevel, lock};
use serde_json::{Value, json};

use crate::registry::{Agent, Registry};

/// Wakes `agent`: starts its driver when idle; while a cancel settles, a wake that was sent
/// for after it (`after_abort`) is latched unless the cause is `disposed`.
pub(crate) fn wake(registry: &Arc<Registry>, agent: &Arc<Agent>, after_abort: bool) {
    {
        let mut phase = lock(&agent.phase);
        if phase.disposing {
            return;
        }
        if phase.running {
            if after_abort && phase.aborting.as_deref() != Some("disposed") {
                phase.wake_latched = true;
            }
            return;
        }
        phase.running = true;
        phase.aborting = None;
        phase.wake_latched = false;
    }
    registry.notify(&AGENT_STATUS, &agent.id, json!({"status": "running"}));
    let (task_registry, task_agent) = (registry.clone(), agent.clone());
    let spawned = registry.ctx.spawn(async move {
        drive(&task_registry, &task_agent).await;
    });
    if let Err(error) = spawned {
        registry.ctx.log(
            LogLevel::Error,
            &format!("agent `{}`: its driver cannot start: {error}", agent.id),
        );
        settle(
            registry,
            agent,
            outcome_error(&agent.id, &error.to_string(), "NO_DRIVER"),
        );
    }
}

fn outcome_error(agent: &str, message: &str, code: &str) -> Value {
    json!({"sessionId": agent, "turn": 0, "reason": {"kind": "error", "error": {"message": message, "code": code}}, "output": "", "usage": {"inputTokens": 0, "outputTokens": 0}})
}

/// One turn through the loop; a cancel that came before it started means no turn at all.
async fn one_turn(registry: &Registry, agent: &Agent) -> Value {
    if let Some(cause) = lock(&agent.phase).aborting.clone() {
        return json!({"sessionId": agent.id, "turn": 0, "reason": {"kind": "aborted", "reason": {"kind": cause}}, "output": "", "usage": {"inputTokens": 0, "outputTokens": 0}});
    }
    let driver = match registry.ctx.get::<AgentLoopService>(AGENT_LOOP) {
        Ok(Some(driver)) => driver,
        _ => {
            return outcome_error(
                &agent.id,
                "no `agent_loop` service: mount the agent-loop plugin",
                "NO_DRIVER",
            );
        }
    };
    let route = &agent.route;
    let outcome = driver
        .run_turn(TurnRequest {
            session: RString::from(agent.id.as_str()),
            input: RString::new(),
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
    serde_json::from_str(&outcome).unwrap_or(Value::Null)
}

/// Runs turns while work is owed: after a completed (or max-tokens) turn, while the inbox holds
/// anything; after a cancelled one, only when a wake was latched meanwhile; never after
/// `blocked` or `error` (queued work waits for the next wake).
async fn drive(registry: &Arc<Registry>, agent: &Arc<Agent>) {
    loop {
        let outcome = one_turn(registry, agent).await;
        let kind = outcome["reason"]["kind"]
            .as_str()
            .unwrap_or("error")
            .to_owned();
        // Decided and, when done, marked idle under one lock: a send that lands meanwhile
        // either is seen pending here or finds the agent idle and starts a new driver.
        let waiters = {
            let mut phase = lock(&agent.phase);
            let pending = registry.has_pending(&agent.session);
            let again = match kind.as_str() {
                "blocked" | "error" => false,
                "aborted" => phase.wake_latched && pending,
                _ => pending,
            };
            phase.last = outcome.clone();
            phase.aborting = None;
            phase.wake_latched = false;
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
fn settle(registry: &Registry, agent: &Agent, last: Value) {
    let waiters = {
        let mut phase = lock(&agent.phase);
        phase.running = false;
        phase.aborting = None;
        phase.wake_latched = false;
        phase.last = last.clone();
        std::mem::take(&mut phase.waiters)
    };
    announce_idle(registry, agent, &last, waiters);
}

/// The driver is done: announced, and whoever waited gets the last outcome.
fn announce_idle(
    registry: &Registry,
    agent: &Agent,
    last: &Value,
    waiters: Vec<tokio::sync::oneshot::Sender<String>>,
) {
    registry.notify(&AGENT_STATUS, &agent.id, json!({"status": "idle"}));
    let text = last.to_string();
    for waiter in waiters {
        let _ = waiter.send(text.clone());
    }
}
