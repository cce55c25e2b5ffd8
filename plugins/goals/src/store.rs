//! The goals of this host's sessions: each session's fold of its log, caught up on every read,
//! and the process-local activation (armed: the round driver may go on by itself). A mutation is
//! checked against the fold, logged as `goal/change`, and read back from the log, so the state
//! is never ahead of what the log says; `goal/changed` follows it.

use std::collections::HashMap;
use std::sync::Mutex;

use dsh_goals_seam::{GOAL_CHANGED, GoalNotice};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, EmitEvent, LogLevel, lock};
use dsh_protocol::{
    GoalActivation, GoalBlockReason, GoalChangeEvent, GoalChanged, GoalRef, GoalView,
    UserMessageEvent, kinds,
};
use dsh_sessions_seam::{SESSIONS_SERVICE, SessionBox, SessionExt, SessionsService, open_live};

use crate::error::GoalError;
use crate::fold::{GoalFold, round_source};
use crate::plan::plan;

/// The most goal rounds a goal may have (and the default).
pub(crate) const MAX_GOAL_ROUNDS: u64 = 256;

pub(crate) struct Cache {
    pub(crate) fold: GoalFold,
    /// Events of the log folded so far.
    observed: u64,
    pub(crate) activation: GoalActivation,
}

/// A mutation of the current goal, as the service's callers ask for it.
#[derive(Debug, Clone)]
pub(crate) enum Mutation {
    Create {
        objective: String,
        max_goal_rounds: Option<u64>,
    },
    Edit {
        reference: GoalRef,
        objective: Option<String>,
        max_goal_rounds: Option<u64>,
    },
    Pause(GoalRef),
    Resume(GoalRef),
    Complete(GoalRef),
    Block(GoalRef, GoalBlockReason),
    Clear(GoalRef),
}

pub(crate) struct Store {
    ctx: Context,
    caches: Mutex<HashMap<String, Cache>>,
    changed: Option<Channel<EmitEvent<GoalNotice>>>,
}

impl Store {
    pub(crate) fn new(ctx: Context) -> Self {
        Self {
            changed: ctx.channel(&GOAL_CHANGED).ok(),
            ctx,
            caches: Mutex::default(),
        }
    }

    /// The current goal of live session `session`.
    pub(crate) fn get(&self, session: &str) -> Result<Option<GoalView>, GoalError> {
        let live = self.live(session)?;
        Ok(self.read(&live))
    }

    /// The current goal of `session`, live or stored (a stored one is read without arming).
    pub(crate) async fn get_any(&self, session: &str) -> Result<Option<GoalView>, GoalError> {
        let Ok(Some(sessions)) = self.ctx.get::<SessionsService>(SESSIONS_SERVICE) else {
            return Err(GoalError::NotLive("no `sessions` service".to_owned()));
        };
        // Only a live session is opened at once: polling the open of a stored one and dropping
        // it would leave its load half done.
        if sessions.live().iter().any(|id| id.as_str() == session)
            && let Ok(live) = open_live(&self.ctx, session)
        {
            return Ok(self.read(&live));
        }
        let opened = sessions
            .open(RString::from(session))
            .await
            .into_result()
            .map_err(|error| GoalError::NotLive(format!("session `{session}`: {error}")))?;
        Ok(self.read(&opened))
    }

    fn read(&self, session: &SessionBox) -> Option<GoalView> {
        let mut caches = lock(&self.caches);
        let cache = self.caught_up(&mut caches, session);
        view(cache)
    }

    /// Forgets what this process knew of `session`: its next read folds the log anew, disarmed
    /// (a session that starts again does not go on by itself).
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.caches).remove(session);
    }

    /// Takes away this process's leave to go on with `session`'s goal, keeping its phase.
    pub(crate) fn disarm(&self, session: &str) {
        if let Some(cache) = lock(&self.caches).get_mut(session) {
            cache.activation = GoalActivation::Disarmed;
        }
    }

    fn live(&self, session: &str) -> Result<SessionBox, GoalError> {
        let live = matches!(
            self.ctx.get::<SessionsService>(SESSIONS_SERVICE),
            Ok(Some(sessions)) if sessions.live().iter().any(|id| id.as_str() == session)
        );
        if !live {
            return Err(GoalError::NotLive(format!(
                "session `{session}` is not open in this host"
            )));
        }
        open_live(&self.ctx, session)
            .map_err(|error| GoalError::NotLive(format!("session `{session}`: {error}")))
    }

    fn caught_up<'a>(
        &self,
        caches: &'a mut HashMap<String, Cache>,
        session: &SessionBox,
    ) -> &'a mut Cache {
        let id = session.id().into_string();
        let count = session.event_count();
        let cache = caches.entry(id.clone()).or_insert_with(|| Cache {
            fold: GoalFold::default(),
            observed: 0,
            activation: GoalActivation::Disarmed,
        });
        // A shorter log under the same id is another log: fold it anew.
        if count < cache.observed {
            cache.fold = GoalFold::default();
            cache.observed = 0;
        }
        if count > cache.observed {
            for record in session.events(cache.observed, count).iter() {
                let folded = match record.kind.as_str() {
                    kinds::GOAL_CHANGE => match record.decode::<GoalChangeEvent>() {
                        Some(Ok(change)) => cache.fold.apply_change(&change),
                        Some(Err(error)) => Err(error.to_string().into()),
                        None => Ok(()),
                    },
                    kinds::USER_MESSAGE => match record.decode::<UserMessageEvent>() {
                        Some(Ok(UserMessageEvent(message))) => round_source(&message)
                            .map_or(Ok(()), |source| cache.fold.apply_round(&source)),
                        _ => Ok(()),
                    },
                    _ => Ok(()),
                };
                if let Err(why) = folded {
                    self.ctx.log(
                        LogLevel::Warn,
                        &format!("goals: `{id}` event {} skipped: {why}", record.seq),
                    );
                }
            }
            cache.observed = count;
        }
        cache
    }

    /// Applies `mutation` to live session `session`: checked, logged, read back. Answers the
    /// goal after it (none after a clear).
    pub(crate) fn mutate(
        &self,
        session: &str,
        mutation: Mutation,
    ) -> Result<Option<GoalView>, GoalError> {
        let live = self.live(session)?;
        let (changed, after) = {
            let mut caches = lock(&self.caches);
            let cache = self.caught_up(&mut caches, &live);
            let (change, activation) = plan(cache, mutation, crate::now_ms())?;
            // The fold is the judge: a change it would refuse is never logged.
            cache
                .fold
                .clone()
                .apply_change(&change)
                .map_err(|skipped| GoalError::Transition(skipped.0))?;
            live.log(&change)
                .map_err(|error| GoalError::Log(error.to_string()))?;
            let cache = self.caught_up(&mut caches, &live);
            cache.activation = activation;
            let after = view(cache);
            let reference = match (&change.goal, &change.cleared) {
                (Some(goal), _) => GoalRef {
                    id: goal.id.clone(),
                    revision: goal.revision,
                },
                (None, Some(cleared)) => cleared.clone(),
                (None, None) => GoalRef {
                    id: String::new(),
                    revision: 0,
                },
            };
            let changed = GoalChanged {
                operation: change.operation,
                reference,
                goal: after.clone(),
            };
            (changed, after)
        };
        if let Some(channel) = &self.changed {
            let notice = GoalNotice {
                session: RString::from(session),
                change: Json::encode(&changed),
            };
            if let Err(error) = channel.emit(&notice) {
                self.ctx
                    .log(LogLevel::Warn, &format!("goals: goal/changed: {error}"));
            }
        }
        Ok(after)
    }
}

fn view(cache: &Cache) -> Option<GoalView> {
    let goal = cache.fold.goal.clone()?;
    Some(GoalView {
        goal,
        rounds_started: cache.fold.rounds_started,
        created_at: cache.fold.created_at,
        updated_at: cache.fold.updated_at,
        activation: cache.activation,
    })
}
