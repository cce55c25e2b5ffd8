//! The round driver: when a session's agent goes idle (or its goal changes) with an active goal
//! this process may go on with (armed), it queues the next goal round, a `user/message` with
//! source `goal{goalId, revision, round}` that opens a turn of its own. It stops when the goal
//! is complete, blocked, paused or cleared, and blocks it (`round-limit`) once
//! `max_goal_rounds` rounds have started. A round that ends other than `completed` settles
//! the goal (cancelled: paused; failed, cut off or refused: blocked, with why); a person's
//! cancel of their own turn disarms it. A person's prompt comes first: rounds are queued only
//! while nothing else runs or waits, and a round whose goal changed before it started is
//! refused at the turn's door (`agent/prompt-submit`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, lock};
use dsh_protocol::{
    ContentBlock, FailureCode, GoalActivation, GoalBlockReason, GoalPhase, GoalRef, GoalView,
    Message, PromptDecision, PromptSubmit, TurnEndEvent, TurnEndReason, TurnStartEvent,
    UserMessageEvent, kinds,
};
use dsh_sessions_seam::EventRecord;

use crate::fold::{RoundSource, round_source};
use crate::store::{Mutation, Store};

/// What a refused stale round says.
pub(crate) const STALE_ROUND: &str = "stale goal round";

#[derive(Default)]
struct State {
    open_turn: Option<u64>,
    /// The round admitted in a turn, until that turn ends.
    admitted: Option<(u64, RoundSource)>,
    /// A round queued and not yet started.
    queued: Option<RoundSource>,
    /// A round's end is being settled: no new round until it is.
    settling: bool,
}

pub(crate) struct Driver {
    ctx: Context,
    store: Arc<Store>,
    states: Mutex<HashMap<String, State>>,
}

/// What a goal round's end means for its goal.
enum Outcome {
    Continue,
    Pause,
    Block(&'static str, String),
    Disarm,
}

fn classify(reason: &TurnEndReason) -> Outcome {
    match reason {
        TurnEndReason::Completed => Outcome::Continue,
        TurnEndReason::Aborted { .. } => Outcome::Pause,
        TurnEndReason::Error { error } => {
            let code = match error.code {
                FailureCode::RateLimit | FailureCode::Quota => "usage-limited",
                _ => "turn-error",
            };
            Outcome::Block(code, error.message.clone())
        }
        TurnEndReason::MaxTokens => Outcome::Block(
            "max-tokens",
            "the model's output reached its token limit".to_owned(),
        ),
        TurnEndReason::Blocked { reason } => Outcome::Block(
            "prompt-rejected",
            reason
                .clone()
                .unwrap_or_else(|| "the round was refused before it ran".to_owned()),
        ),
        TurnEndReason::Interrupted => Outcome::Disarm,
        TurnEndReason::Other(_) => Outcome::Block(
            "unknown-turn-outcome",
            format!("the round ended `{}`", reason.kind()),
        ),
    }
}

/// The text of round `round` of `goal`.
pub(crate) fn round_prompt(goal: &GoalView, round: u64) -> String {
    format!(
        "<goal_round>\nObjective: {}\nRound: {round}/{}\n\nKeep working towards the objective in this session. The workspace, tool results and session state are what is true now: check them rather than trusting earlier narration. Make real progress and verify it. Before you call the objective done, gather evidence that all of it is achieved, read the current goal and mark it complete. If work remains, leave the goal active for the next round. Follow the goal tools' policy before reporting a blocker.\n</goal_round>",
        serde_json::Value::from(goal.goal.objective.as_str()),
        goal.goal.max_goal_rounds
    )
}

fn reference(goal: &GoalView) -> GoalRef {
    GoalRef {
        id: goal.goal.id.clone(),
        revision: goal.goal.revision,
    }
}

impl Driver {
    pub(crate) fn new(ctx: Context, store: Arc<Store>) -> Self {
        Self {
            ctx,
            store,
            states: Mutex::default(),
        }
    }

    /// Follows one committed event (sync, inside the log's dispatch: never touches the store).
    pub(crate) fn committed(self: &Arc<Self>, record: &EventRecord) {
        let session = record.session.as_str();
        match record.kind.as_str() {
            kinds::TURN_START => {
                if let Some(Ok(start)) = record.decode::<TurnStartEvent>() {
                    lock(&self.states)
                        .entry(session.to_owned())
                        .or_default()
                        .open_turn = Some(start.turn);
                }
            }
            kinds::USER_MESSAGE => {
                let Some(Ok(UserMessageEvent(message))) = record.decode::<UserMessageEvent>()
                else {
                    return;
                };
                let Some(source) = round_source(&message).filter(|source| source.round > 0) else {
                    return;
                };
                let mut states = lock(&self.states);
                let state = states.entry(session.to_owned()).or_default();
                state.queued = None;
                if let Some(turn) = state.open_turn {
                    state.admitted = Some((turn, source));
                }
            }
            kinds::TURN_END => {
                let Some(Ok(end)) = record.decode::<TurnEndEvent>() else {
                    return;
                };
                let mut states = lock(&self.states);
                let Some(state) = states.get_mut(session) else {
                    return;
                };
                state.open_turn = None;
                let round = match state.admitted.take() {
                    Some((turn, source)) if turn == end.turn => Some(source),
                    other => {
                        state.admitted = other;
                        None
                    }
                };
                let outcome = match (&round, &end.reason) {
                    (Some(_), reason) => classify(reason),
                    // A person cancelled their own turn: the goal stops going on by itself.
                    (None, TurnEndReason::Aborted { .. }) => Outcome::Disarm,
                    (None, _) => Outcome::Continue,
                };
                if matches!(outcome, Outcome::Continue) {
                    return;
                }
                state.settling = true;
                drop(states);
                let (driver, session) = (self.clone(), session.to_owned());
                let _ = self.ctx.spawn(async move {
                    driver.settle(&session, round, outcome);
                    if let Some(state) = lock(&driver.states).get_mut(&session) {
                        state.settling = false;
                    }
                    driver.drive(&session);
                });
            }
            _ => {}
        }
    }

    /// Applies a round's outcome to the goal it ran for, if that is still the current goal.
    fn settle(&self, session: &str, round: Option<RoundSource>, outcome: Outcome) {
        let Ok(Some(goal)) = self.store.get(session) else {
            return;
        };
        let current = goal.goal.phase == GoalPhase::Active
            && goal.activation == GoalActivation::Armed
            && round.as_ref().is_none_or(|round| {
                round.goal_id == goal.goal.id && round.revision == goal.goal.revision
            });
        if !current {
            return;
        }
        let mutation = match outcome {
            Outcome::Continue => return,
            Outcome::Disarm => {
                self.store.disarm(session);
                return;
            }
            Outcome::Pause => Mutation::Pause(reference(&goal)),
            Outcome::Block(code, message) => Mutation::Block(
                reference(&goal),
                GoalBlockReason {
                    code: code.to_owned(),
                    message,
                },
            ),
        };
        if let Err(error) = self.store.mutate(session, mutation) {
            self.ctx.log(
                LogLevel::Warn,
                &format!("goals: settling a round of `{session}`: {error}"),
            );
        }
    }

    /// Forgets a session (its agent went away, or starts again).
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.states).remove(session);
    }

    /// A round that was queued will never start (a cancel discarded it).
    pub(crate) fn discarded(&self, session: &str, message: &Message) {
        if round_source(message).is_some()
            && let Some(state) = lock(&self.states).get_mut(session)
        {
            state.queued = None;
        }
    }

    /// Queues the next round of `session`'s goal when it is idle, its goal active and armed,
    /// and no round waits already; blocks the goal when its rounds are used up.
    pub(crate) fn drive(&self, session: &str) {
        let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS_SERVICE) else {
            return;
        };
        if agents.is_running(session) {
            return;
        }
        let Ok(Some(goal)) = self.store.get(session) else {
            return;
        };
        if goal.goal.phase != GoalPhase::Active || goal.activation != GoalActivation::Armed {
            return;
        }
        if goal.rounds_started >= goal.goal.max_goal_rounds {
            let block = Mutation::Block(
                reference(&goal),
                GoalBlockReason {
                    code: "round-limit".to_owned(),
                    message: format!(
                        "Goal reached its configured limit of {} rounds.",
                        goal.goal.max_goal_rounds
                    ),
                },
            );
            if let Err(error) = self.store.mutate(session, block) {
                self.ctx
                    .log(LogLevel::Warn, &format!("goals: `{session}`: {error}"));
            }
            return;
        }
        let source = RoundSource {
            goal_id: goal.goal.id.clone(),
            revision: goal.goal.revision,
            round: goal.rounds_started + 1,
        };
        {
            let mut states = lock(&self.states);
            let state = states.entry(session.to_owned()).or_default();
            if state.queued.is_some() || state.settling || state.open_turn.is_some() {
                return;
            }
            state.queued = Some(source.clone());
        }
        let message = Message::user(
            "",
            vec![ContentBlock::text(round_prompt(&goal, source.round))],
            source.to_source(),
        );
        if let Err(error) = agents.followup(session, &message) {
            if let Some(state) = lock(&self.states).get_mut(session) {
                state.queued = None;
            }
            let block = Mutation::Block(
                reference(&goal),
                GoalBlockReason {
                    code: "queue-failed".to_owned(),
                    message: format!("Could not queue goal round {}: {error}", source.round),
                },
            );
            let _ = self.store.mutate(session, block);
        }
    }

    /// `agent/prompt-submit`: a goal round enters only as the current goal's next round.
    pub(crate) fn admit(&self, submit: &PromptSubmit) -> Option<PromptDecision> {
        let source = submit
            .messages
            .iter()
            .find_map(round_source)
            .filter(|source| source.round > 0)?;
        let valid = match self.store.get(&submit.session) {
            Ok(Some(goal)) => {
                goal.goal.phase == GoalPhase::Active
                    && goal.activation == GoalActivation::Armed
                    && goal.goal.id == source.goal_id
                    && goal.goal.revision == source.revision
                    && source.round == goal.rounds_started + 1
                    && source.round <= goal.goal.max_goal_rounds
            }
            _ => false,
        };
        if valid {
            return None;
        }
        if let Some(state) = lock(&self.states).get_mut(&submit.session) {
            state.queued = None;
        }
        Some(PromptDecision::Reject {
            reason: Some(STALE_ROUND.to_owned()),
        })
    }
}
