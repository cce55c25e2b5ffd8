//! What a mutation makes of a session's goal: the `goal/change` to log and the activation
//! after it, or why it is refused (no goal, another goal, a stale revision, a phase that does
//! not allow it, a value out of bounds). Nothing here writes; the store logs what it answers.

use dsh_protocol::{
    GOAL_CHANGE_VERSION, GoalActivation, GoalBlockReason, GoalChangeEvent, GoalOperation,
    GoalPhase, GoalRef, GoalSnapshot,
};

use crate::error::GoalError;
use crate::store::{Cache, MAX_GOAL_ROUNDS, Mutation};

type Planned = Result<(GoalChangeEvent, GoalActivation), GoalError>;

/// The change `mutation` makes of `cache`'s state, and the activation after it.
pub(crate) fn plan(cache: &Cache, mutation: Mutation, now: i64) -> Planned {
    use GoalActivation::Disarmed;
    match mutation {
        Mutation::Create {
            objective,
            max_goal_rounds,
        } => create(cache, &objective, max_goal_rounds, now),
        Mutation::Edit {
            reference,
            objective,
            max_goal_rounds,
        } => edit(cache, &reference, objective, max_goal_rounds, now),
        Mutation::Pause(reference) => {
            let goal = current(cache, &reference)?;
            if goal.phase != GoalPhase::Active {
                return Err(transition_error(goal, "pause", "active"));
            }
            let next = with_phase(goal, GoalPhase::Paused, None);
            Ok((step(cache, GoalOperation::Pause, next, now), Disarmed))
        }
        Mutation::Resume(reference) => resume(cache, &reference, now),
        Mutation::Complete(reference) => {
            let goal = current(cache, &reference)?;
            if goal.phase == GoalPhase::Complete {
                return Err(transition_error(
                    goal,
                    "complete",
                    "active, paused or blocked",
                ));
            }
            let next = with_phase(goal, GoalPhase::Complete, None);
            Ok((step(cache, GoalOperation::Complete, next, now), Disarmed))
        }
        Mutation::Block(reference, reason) => {
            let goal = current(cache, &reference)?;
            if goal.phase != GoalPhase::Active {
                return Err(transition_error(goal, "block", "active"));
            }
            let message = reason.message.trim().to_owned();
            if message.is_empty() {
                return Err(GoalError::BlockReason(
                    "a blocked goal needs a reason".to_owned(),
                ));
            }
            let reason = GoalBlockReason {
                code: reason.code,
                message,
            };
            let next = with_phase(goal, GoalPhase::Blocked, Some(reason));
            Ok((step(cache, GoalOperation::Block, next, now), Disarmed))
        }
        Mutation::Clear(reference) => {
            let goal = current(cache, &reference)?;
            let change = GoalChangeEvent {
                version: GOAL_CHANGE_VERSION,
                operation: GoalOperation::Clear,
                goal: None,
                rounds_started: None,
                created_at: None,
                updated_at: None,
                cleared: Some(GoalRef {
                    id: goal.id.clone(),
                    revision: goal.revision + 1,
                }),
                cleared_at: Some(now.max(cache.fold.updated_at)),
            };
            Ok((change, Disarmed))
        }
    }
}

fn create(cache: &Cache, text: &str, max_goal_rounds: Option<u64>, now: i64) -> Planned {
    let objective = objective(text)?;
    let max_goal_rounds = max_rounds(max_goal_rounds.unwrap_or(MAX_GOAL_ROUNDS))?;
    if let Some(goal) = cache
        .fold
        .goal
        .as_ref()
        .filter(|goal| goal.phase != GoalPhase::Complete)
    {
        return Err(GoalError::AlreadyExists(format!(
            "goal `{}` is already {}: edit it, or clear it before creating another",
            goal.id,
            goal.phase.as_str()
        )));
    }
    let goal = GoalSnapshot {
        id: format!("goal-{}", dsh_protocol::fresh_uuid()),
        revision: 1,
        objective,
        phase: GoalPhase::Active,
        blocked_reason: None,
        max_goal_rounds,
    };
    let change = snapshot(GoalOperation::Create, goal, 0, now, now);
    Ok((change, GoalActivation::Armed))
}

fn edit(
    cache: &Cache,
    reference: &GoalRef,
    text: Option<String>,
    max_goal_rounds: Option<u64>,
    now: i64,
) -> Planned {
    let goal = current(cache, reference)?;
    if text.is_none() && max_goal_rounds.is_none() {
        return Err(GoalError::Edit(
            "an edit needs an objective, max_goal_rounds or both".to_owned(),
        ));
    }
    let next = GoalSnapshot {
        revision: goal.revision + 1,
        objective: match text {
            Some(text) => objective(&text)?,
            None => goal.objective.clone(),
        },
        max_goal_rounds: match max_goal_rounds {
            Some(rounds) => max_rounds(rounds)?,
            None => goal.max_goal_rounds,
        },
        ..goal.clone()
    };
    Ok((
        step(cache, GoalOperation::Edit, next, now),
        cache.activation,
    ))
}

fn resume(cache: &Cache, reference: &GoalRef, now: i64) -> Planned {
    let goal = current(cache, reference)?;
    if goal.phase == GoalPhase::Complete {
        return Err(transition_error(
            goal,
            "resume",
            "active, paused or blocked",
        ));
    }
    if goal.phase == GoalPhase::Active && cache.activation == GoalActivation::Armed {
        return Err(GoalError::Transition(format!(
            "goal `{}` is already active and armed",
            goal.id
        )));
    }
    if cache.fold.rounds_started >= goal.max_goal_rounds {
        return Err(GoalError::Transition(format!(
            "goal `{}` used all {} of its rounds; raise max_goal_rounds before resuming",
            goal.id, goal.max_goal_rounds
        )));
    }
    let next = with_phase(goal, GoalPhase::Active, None);
    Ok((
        step(cache, GoalOperation::Resume, next, now),
        GoalActivation::Armed,
    ))
}

fn snapshot(
    operation: GoalOperation,
    goal: GoalSnapshot,
    rounds: u64,
    created: i64,
    updated: i64,
) -> GoalChangeEvent {
    GoalChangeEvent {
        version: GOAL_CHANGE_VERSION,
        operation,
        goal: Some(goal),
        rounds_started: Some(rounds),
        created_at: Some(created),
        updated_at: Some(updated),
        cleared: None,
        cleared_at: None,
    }
}

/// A change of the current goal: its counters and creation time kept, its time moved on (never
/// back, whatever the clock does).
fn step(cache: &Cache, operation: GoalOperation, goal: GoalSnapshot, now: i64) -> GoalChangeEvent {
    let fold = &cache.fold;
    snapshot(
        operation,
        goal,
        fold.rounds_started,
        fold.created_at,
        now.max(fold.updated_at),
    )
}

fn with_phase(
    goal: &GoalSnapshot,
    phase: GoalPhase,
    reason: Option<GoalBlockReason>,
) -> GoalSnapshot {
    GoalSnapshot {
        revision: goal.revision + 1,
        phase,
        blocked_reason: reason,
        ..goal.clone()
    }
}

fn objective(text: &str) -> Result<String, GoalError> {
    match text.trim() {
        "" => Err(GoalError::Objective(
            "the objective must be a non-empty text".to_owned(),
        )),
        trimmed => Ok(trimmed.to_owned()),
    }
}

fn max_rounds(rounds: u64) -> Result<u64, GoalError> {
    match rounds {
        1..=MAX_GOAL_ROUNDS => Ok(rounds),
        _ => Err(GoalError::MaxRounds(format!(
            "max_goal_rounds must be between 1 and {MAX_GOAL_ROUNDS}, not {rounds}"
        ))),
    }
}

fn current<'a>(cache: &'a Cache, reference: &GoalRef) -> Result<&'a GoalSnapshot, GoalError> {
    let goal = cache.fold.goal.as_ref().ok_or_else(|| {
        GoalError::NotFound(format!(
            "goal `{}` is not this session's goal: the session has no goal",
            reference.id
        ))
    })?;
    if goal.id != reference.id {
        return Err(GoalError::NotFound(format!(
            "goal `{}` is not this session's goal; the current goal is `{}` revision {}",
            reference.id, goal.id, goal.revision
        )));
    }
    if goal.revision != reference.revision {
        return Err(GoalError::Stale(format!(
            "goal `{}` revision {} is stale; the current revision is {} (call get_goal again)",
            reference.id, reference.revision, goal.revision
        )));
    }
    Ok(goal)
}

fn transition_error(goal: &GoalSnapshot, verb: &str, expected: &str) -> GoalError {
    GoalError::Transition(format!(
        "cannot {verb} goal `{}` from phase {}; expected {expected}",
        goal.id,
        goal.phase.as_str()
    ))
}
