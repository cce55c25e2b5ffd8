//! Plugin `agent`: provides `agents`, the inbox of each session. `next-turn` holds messages
//! that start turns (the loop claims one per turn, at its start); `next-step` holds messages
//! that join the running turn at its next step boundary (steering). Every insertion and every
//! claim is logged as `agent/inbox/spliced` (`target`, `start`, `inserted`, `removedCount`), so
//! the log says when a message was queued and when the model got it.
//!
//! An inbox is rebuilt from the log's splices the first time a session is used, so queued
//! messages survive a reload of this plugin and a restart.
//!
//! Not built yet: the agent tree (subagents, scopes), `followup`/`inject` wake rules beyond the
//! two lists, the `agent/*` lifecycle events.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, RResult, RString, RVec};
use dsh_agent_seam::{AGENTS, Agents, Agents_TO};
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_session_api::{NewEventRecord, SESSION_DISPOSED, SESSIONS, SessionBox, SessionsService};
use serde_json::{Value, json};

const NEXT_TURN: &str = "next-turn";
const NEXT_STEP: &str = "next-step";

#[derive(Default, Debug, PartialEq)]
struct Inbox {
    next_turn: Vec<Value>,
    next_step: Vec<Value>,
}

impl Inbox {
    /// The inbox a log's splices leave behind, so an inbox survives a reload of this plugin
    /// or a restart: every insertion and removal was logged.
    fn rebuilt<'a>(splices: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut inbox = Self::default();
        for splice in splices {
            let list = match splice["target"].as_str() {
                Some(NEXT_TURN) => &mut inbox.next_turn,
                Some(NEXT_STEP) => &mut inbox.next_step,
                _ => continue,
            };
            let start = splice["start"]
                .as_u64()
                .and_then(|start| usize::try_from(start).ok())
                .unwrap_or(0)
                .min(list.len());
            let removed = splice["removedCount"]
                .as_u64()
                .and_then(|count| usize::try_from(count).ok())
                .unwrap_or(0)
                .min(list.len() - start);
            let inserted: Vec<Value> = splice["inserted"].as_array().cloned().unwrap_or_default();
            list.splice(start..start + removed, inserted);
        }
        inbox
    }

    fn of_log(session: &SessionBox) -> Self {
        let splices: Vec<Value> = session
            .events(0, session.event_count())
            .iter()
            .filter(|record| record.kind.as_str() == "agent/inbox/spliced")
            .filter_map(|record| serde_json::from_str::<Value>(&record.json).ok())
            .map(|event| event["data"].clone())
            .collect();
        Self::rebuilt(&splices)
    }
}

struct Registry {
    ctx: Context,
    inboxes: Mutex<HashMap<String, Inbox>>,
    next_id: AtomicU64,
}

impl Registry {
    /// The live session, for logging (sessions are live while their turns run).
    fn session(&self, id: &str) -> Result<SessionBox, String> {
        let sessions = match self.ctx.get::<SessionsService>(SESSIONS) {
            Ok(Some(sessions)) => sessions,
            _ => return Err("no `sessions` service".to_owned()),
        };
        // `open` of a live session answers at once; the store is not touched.
        let opened = futures_now(sessions.open(RString::from(id)));
        match opened {
            Some(result) => result.into_result().map_err(|error| error.to_string()),
            None => Err(format!("session `{id}` is not live")),
        }
    }

    fn log(&self, session: &SessionBox, data: &Value) -> Result<(), String> {
        session
            .append(RVec::from(vec![NewEventRecord::new(
                "agent/inbox/spliced",
                &data.to_string(),
            )]))
            .into_result()
            .map(|_| ())
            .map_err(|error| format!("agent/inbox/spliced not logged: {error}"))
    }
}

/// Polls a future once: a live session's `open` is ready at once, and the inbox must be
/// changed and logged in one step, without yielding between the two.
fn futures_now<F: std::future::Future>(future: F) -> Option<F::Output> {
    let waker = std::task::Waker::noop();
    let mut context = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => Some(value),
        std::task::Poll::Pending => None,
    }
}

struct Service(Arc<Registry>);

impl Agents for Service {
    fn enqueue(&self, session: RString, target: RString, message: RString) -> RResult<(), RString> {
        let mut message: Value = match serde_json::from_str(&message) {
            Ok(message) => message,
            Err(error) => return RErr(format!("the message is not JSON: {error}").into()),
        };
        if message["id"].as_str().is_none_or(str::is_empty) {
            let n = self.0.next_id.fetch_add(1, Ordering::Relaxed);
            message["id"] = json!(format!("{session}-inbox-{n}"));
        }
        let live = match self.0.session(&session) {
            Ok(live) => live,
            Err(error) => return RErr(error.into()),
        };
        let mut inboxes = lock(&self.0.inboxes);
        let inbox = inboxes
            .entry(session.to_string())
            .or_insert_with(|| Inbox::of_log(&live));
        let list = match target.as_str() {
            NEXT_TURN => &mut inbox.next_turn,
            NEXT_STEP => &mut inbox.next_step,
            other => {
                return RErr(
                    format!("inbox target `{other}` is not next-turn or next-step").into(),
                );
            }
        };
        let data = json!({"target": target.as_str(), "start": list.len(), "inserted": [message]});
        if let Err(error) = self.0.log(&live, &data) {
            return RErr(error.into());
        }
        list.push(message);
        ROk(())
    }

    fn claim(&self, session: RString, turn_boundary: bool) -> RResult<RString, RString> {
        let live = match self.0.session(&session) {
            Ok(live) => live,
            Err(error) => return RErr(error.into()),
        };
        let mut inboxes = lock(&self.0.inboxes);
        let inbox = inboxes
            .entry(session.to_string())
            .or_insert_with(|| Inbox::of_log(&live));
        let mut claimed = Vec::new();
        if !inbox.next_step.is_empty() {
            let data = json!({"target": NEXT_STEP, "start": 0, "removedCount": inbox.next_step.len(), "inserted": []});
            if let Err(error) = self.0.log(&live, &data) {
                return RErr(error.into());
            }
            claimed.append(&mut inbox.next_step);
        }
        if turn_boundary && !inbox.next_turn.is_empty() {
            let data = json!({"target": NEXT_TURN, "start": 0, "removedCount": 1, "inserted": []});
            if let Err(error) = self.0.log(&live, &data) {
                return RErr(error.into());
            }
            claimed.push(inbox.next_turn.remove(0));
        }
        ROk(RString::from(Value::Array(claimed).to_string()))
    }
}

pub struct AgentPlugin;

impl Plugin for AgentPlugin {
    const NAME: &'static str = "agent";
    const PROVIDES: &'static [&'static str] = &[AGENTS];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let registry = Arc::new(Registry {
            ctx: ctx.clone(),
            inboxes: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        });
        let forget = Arc::downgrade(&registry);
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            if let Some(registry) = forget.upgrade() {
                lock(&registry.inboxes).remove(id.as_str());
            }
        })?;
        ctx.provide(AGENTS, Agents_TO::from_value(Service(registry), TD_Opaque))
    }
}

dsh_plugin_api::export_plugins!(AgentPlugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inbox_is_what_its_logged_splices_leave() {
        let a = json!({"id": "a"});
        let b = json!({"id": "b"});
        let c = json!({"id": "c"});
        let splices = [
            json!({"target": "next-turn", "start": 0, "inserted": [a]}),
            json!({"target": "next-turn", "start": 1, "inserted": [b]}),
            json!({"target": "next-step", "start": 0, "inserted": [c]}),
            json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
            json!({"target": "next-step", "start": 0, "removedCount": 1, "inserted": []}),
        ];
        let inbox = Inbox::rebuilt(&splices);
        assert_eq!(inbox.next_turn, vec![json!({"id": "b"})]);
        assert!(inbox.next_step.is_empty());
    }

    #[test]
    fn a_splice_past_the_end_is_clamped_not_a_panic() {
        let splices = [
            json!({"target": "next-turn", "start": 5, "removedCount": 3, "inserted": [{"id": "x"}]}),
        ];
        let inbox = Inbox::rebuilt(&splices);
        assert_eq!(inbox.next_turn, vec![json!({"id": "x"})]);
    }
}
