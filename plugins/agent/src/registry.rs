//! The registry's state: the agents (in creation order) with their route and phase, and the
//! inbox of every session that has one. Inbox changes are logged before they apply.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::RString;
use dsh_agents_seam::{
    AGENT_DISPOSED, AGENT_INBOX_CLAIMED, AGENT_INBOX_DISCARDED, AGENT_INBOX_INSERTED,
    AGENT_LOOP_SERVICE, AgentLoopService, AgentNotice,
};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{EmitEvent, LogLevel, lock};
use dsh_protocol::{
    AbortCause, AgentNoticeData, InboxSplicedEvent, InboxTarget, Message, Role, TurnOutcome,
};
use dsh_sessions_seam::{SessionBox, SessionExt, open_live};
use tokio::sync::oneshot;

use crate::error::AgentError;
use crate::inbox::Inbox;
use crate::preset::ActivePreset;

/// What an agent's turns run with.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) cwd: String,
    pub(crate) scope: Vec<String>,
    /// The agent preset it runs (its scope is in `scope`).
    pub(crate) preset: Option<ActivePreset>,
    /// Why it does not run the preset its log names.
    pub(crate) preset_note: Option<String>,
}

/// Whether the driver runs, and what a cancel left for it.
#[derive(Default)]
pub(crate) struct Phase {
    pub(crate) running: bool,
    /// The cause of a cancel whose turn is still closing (the first cause wins).
    pub(crate) aborting: Option<AbortCause>,
    /// A waking send arrived while a cancel settled: run again once the turn closed.
    pub(crate) wake_latched: bool,
    /// A waking send (a steer) reached the running driver since the turn last claimed its
    /// inbox: a next-step message left when the turn ends is owed a turn. One only injected
    /// is not: it waits for whatever wakes the agent next.
    pub(crate) steered: bool,
    /// A message was steered into the running turn (a waking send to next-step) since the
    /// turn last claimed: a step that would end the turn claims it instead (`claim_steered`).
    pub(crate) steps_owed: bool,
    /// The outcome of the last turn (`None` before the first).
    pub(crate) last: Option<TurnOutcome>,
    /// Being disposed: no driver starts any more.
    pub(crate) disposing: bool,
    pub(crate) waiters: Vec<oneshot::Sender<Option<TurnOutcome>>>,
}

pub(crate) struct Agent {
    pub(crate) id: String,
    /// Changed by `set_route`; each turn takes the route as it is when the turn starts.
    pub(crate) route: Mutex<Route>,
    /// Its session, for logging and claims; `dispose` closes it.
    pub(crate) session: Arc<SessionBox>,
    pub(crate) phase: Mutex<Phase>,
}

pub(crate) struct Registry {
    pub(crate) ctx: Context,
    inboxes: Mutex<HashMap<String, Inbox>>,
    pub(crate) agents: Mutex<Vec<Arc<Agent>>>,
}

impl Registry {
    pub(crate) fn new(ctx: Context) -> Self {
        Self {
            ctx,
            inboxes: Mutex::new(HashMap::new()),
            agents: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn agent(&self, id: &str) -> Option<Arc<Agent>> {
        lock(&self.agents)
            .iter()
            .find(|agent| agent.id == id)
            .cloned()
    }

    pub(crate) fn notify(
        &self,
        event: &EmitEvent<AgentNotice>,
        agent: &str,
        data: AgentNoticeData,
    ) {
        let notice = AgentNotice {
            agent: RString::from(agent),
            data: Json::encode(&data),
        };
        if let Err(error) = self.ctx.emit(event, &notice) {
            self.ctx
                .log(LogLevel::Warn, &format!("agent `{agent}`: {error}"));
        }
    }

    /// The live session `id`: the agent's own, or one the `sessions` service holds live.
    pub(crate) fn session(&self, id: &str) -> Result<Arc<SessionBox>, AgentError> {
        if let Some(agent) = self.agent(id) {
            return Ok(agent.session.clone());
        }
        open_live(&self.ctx, id)
            .map(Arc::new)
            .map_err(|error| AgentError::Session {
                id: id.to_owned(),
                error,
            })
    }

    fn log(session: &SessionBox, splice: &InboxSplicedEvent) -> Result<(), AgentError> {
        session.log(splice).map(|_| ()).map_err(AgentError::Splice)
    }

    /// Runs `change` on the inbox of `session` (rebuilt from its log on first use).
    pub(crate) fn with_inbox<T>(
        &self,
        session: &SessionBox,
        change: impl FnOnce(&mut Inbox) -> T,
    ) -> T {
        let mut inboxes = lock(&self.inboxes);
        let inbox = inboxes
            .entry(session.id().to_string())
            .or_insert_with(|| Inbox::of_log(session));
        change(inbox)
    }

    pub(crate) fn forget_inbox(&self, session: &str) {
        lock(&self.inboxes).remove(session);
    }

    /// Removes agent `id` and its inbox and announces `agent/disposed`; the agent, if it was
    /// registered.
    pub(crate) fn retire(&self, id: &str) -> Option<Arc<Agent>> {
        let removed = {
            let mut agents = lock(&self.agents);
            let index = agents.iter().position(|agent| agent.id == id);
            index.map(|index| agents.remove(index))
        };
        self.forget_inbox(id);
        if removed.is_some() {
            self.notify(&AGENT_DISPOSED, id, AgentNoticeData::Disposed);
        }
        removed
    }

    /// Cancels agent `id`'s running turn in the loop with `cause`. False when the loop has no
    /// turn registered for it yet (the driver then sees the agent's `aborting` first).
    pub(crate) fn cancel_turn(&self, id: &str, cause: &AbortCause) -> bool {
        match self.ctx.get::<AgentLoopService>(AGENT_LOOP_SERVICE) {
            Ok(Some(driver)) => driver.cancel(RString::from(id), Json::encode(cause)),
            _ => false,
        }
    }

    pub(crate) fn has_pending(&self, session: &SessionBox) -> bool {
        self.with_inbox(session, |inbox| inbox.has_pending())
    }

    // Each change below is applied to the inbox first and logged after, with the inbox
    // unlocked while the append (and the `session/event` listeners it runs) happens: a listener
    // may use the inbox itself, and what it does lands after this change in the list as in the
    // log. When the log refuses the change, it is undone.

    /// Appends `message` to `target`, logged; answers its id.
    pub(crate) fn insert(
        &self,
        session: &SessionBox,
        target: InboxTarget,
        mut message: Message,
    ) -> Result<String, AgentError> {
        // A message without content would be refused by the log only when the loop enters
        // it, and the claimed message would be lost.
        if message.content.is_empty() {
            return Err(AgentError::EmptyMessage);
        }
        message.role = Role::User;
        if message.id.is_empty() {
            // The seq its splice takes: unique in the session, across reloads and restarts.
            message.id = format!("{}-inbox-{}", session.id(), session.event_count());
        }
        let id = message.id.clone();
        let splice = self.with_inbox(session, |inbox| {
            if inbox.holds(&id) {
                return Err(AgentError::Pending(id.clone()));
            }
            let splice = inbox.append_splice(target, &message);
            inbox.list_mut(target).push(message.clone());
            Ok(splice)
        })?;
        if let Err(error) = Self::log(session, &splice) {
            self.with_inbox(session, |inbox| {
                inbox.list_mut(target).retain(|pending| pending.id != id);
            });
            return Err(error);
        }
        self.notify(
            &AGENT_INBOX_INSERTED,
            session.id().as_str(),
            AgentNoticeData::InboxInserted { message },
        );
        Ok(id)
    }

    /// Takes `count` messages from the head of `target` (all when `None`), logged with
    /// `splice_of`'s splice; puts them back when the log refuses it.
    fn take_logged(
        &self,
        session: &SessionBox,
        target: InboxTarget,
        count: Option<usize>,
        splice_of: impl FnOnce(usize) -> InboxSplicedEvent,
    ) -> Result<Vec<Message>, AgentError> {
        let (taken, splice) = self.with_inbox(session, |inbox| {
            let list = inbox.list_mut(target);
            let count = count.unwrap_or(list.len()).min(list.len());
            let taken: Vec<Message> = list.drain(..count).collect();
            let splice = (!taken.is_empty()).then(|| splice_of(taken.len()));
            (taken, splice)
        });
        let Some(splice) = splice else {
            return Ok(Vec::new());
        };
        if let Err(error) = Self::log(session, &splice) {
            self.with_inbox(session, |inbox| {
                let list = inbox.list_mut(target);
                let later = std::mem::take(list);
                list.extend(taken);
                list.extend(later);
            });
            return Err(error);
        }
        Ok(taken)
    }

    /// Clears both lists unrun (next-step first), logged with `outcome: canceled`, and
    /// announces each dropped message.
    pub(crate) fn clear(&self, session: &SessionBox) -> Result<(), AgentError> {
        let mut dropped = Vec::new();
        for target in [InboxTarget::NextStep, InboxTarget::NextTurn] {
            dropped.extend(self.take_logged(session, target, None, |count| {
                Inbox::cancel_splice(target, count)
            })?);
        }
        for message in dropped {
            self.notify(
                &AGENT_INBOX_DISCARDED,
                session.id().as_str(),
                AgentNoticeData::InboxDiscarded { message },
            );
        }
        Ok(())
    }

    /// Takes every next-step message and, at a turn boundary, the head of next-turn; logged,
    /// and each announced as claimed by `turn`.
    pub(crate) fn claim(
        &self,
        session: &SessionBox,
        turn: u64,
        turn_boundary: bool,
    ) -> Result<Vec<Message>, AgentError> {
        let mut claimed = self.take_logged(session, InboxTarget::NextStep, None, |count| {
            Inbox::claim_splice(InboxTarget::NextStep, count)
        })?;
        if turn_boundary {
            claimed.extend(
                self.take_logged(session, InboxTarget::NextTurn, Some(1), |count| {
                    Inbox::claim_splice(InboxTarget::NextTurn, count)
                })?,
            );
        }
        for message in &claimed {
            self.notify(
                &AGENT_INBOX_CLAIMED,
                session.id().as_str(),
                AgentNoticeData::InboxClaimed {
                    message: message.clone(),
                    turn,
                },
            );
        }
        Ok(claimed)
    }
}
