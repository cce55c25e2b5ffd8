//! The goal of a session, folded from its log: each `goal/change` (checked against the state
//! before it: one revision on, a transition the phase allows, the counters kept) and each goal
//! round (`user/message` with source `goal{goalId, revision, round}`, round > 0), which counts
//! the rounds started. A record that does not fit is skipped and named, so a damaged goal never
//! makes the session unreadable; what the fold says is what the log says.

use std::collections::HashSet;

use dsh_protocol::{GoalChangeEvent, GoalOperation, GoalPhase, GoalRef, GoalSnapshot, Message};

/// The source of a goal round: which goal, at which revision, which round.
pub(crate) use dsh_protocol::GoalRoundSource as RoundSource;

/// The goal source of `message`, when it has one.
pub(crate) fn round_source(message: &Message) -> Option<RoundSource> {
    RoundSource::of(message)
}

/// Why a goal record does not follow from the state before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Skipped(pub(crate) String);

impl From<String> for Skipped {
    fn from(why: String) -> Self {
        Self(why)
    }
}

impl From<&str> for Skipped {
    fn from(why: &str) -> Self {
        Self(why.to_owned())
    }
}

/// What the log says of a session's goal.
#[derive(Debug, Clone, Default)]
pub(crate) struct GoalFold {
    pub(crate) goal: Option<GoalSnapshot>,
    pub(crate) rounds_started: u64,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    /// The latest mutation's ref, a clear's too (a new goal never reuses an id).
    pub(crate) last_ref: Option<GoalRef>,
    seen: HashSet<String>,
}

impl GoalFold {
    /// Applies one `goal/change`; an error names why it does not follow from the state.
    pub(crate) fn apply_change(&mut self, change: &GoalChangeEvent) -> Result<(), Skipped> {
        if change.version != dsh_protocol::GOAL_CHANGE_VERSION {
            return Err(format!("goal/change version {} is unknown", change.version).into());
        }
        if change.operation == GoalOperation::Clear {
            let (Some(cleared), Some(at)) = (&change.cleared, change.cleared_at) else {
                return Err("a clear names no `cleared` ref or `clearedAt`"
                    .to_owned()
                    .into());
            };
            let current = self
                .goal
                .as_ref()
                .ok_or(Skipped::from("a clear with no current goal"))?;
            next_revision(current, cleared)?;
            self.last_ref = Some(cleared.clone());
            self.goal = None;
            self.rounds_started = 0;
            self.updated_at = at;
            return Ok(());
        }
        let (Some(next), Some(rounds), Some(created), Some(updated)) = (
            &change.goal,
            change.rounds_started,
            change.created_at,
            change.updated_at,
        ) else {
            return Err(format!(
                "a `{}` lacks its goal, roundsStarted, createdAt or updatedAt",
                change.operation.as_str()
            )
            .into());
        };
        check_snapshot(next)?;
        if change.operation == GoalOperation::Create {
            if next.revision != 1 || next.phase != GoalPhase::Active || rounds != 0 {
                return Err("a create must be revision 1, active, with no rounds"
                    .to_owned()
                    .into());
            }
            if self
                .goal
                .as_ref()
                .is_some_and(|goal| goal.phase != GoalPhase::Complete)
            {
                return Err("a create while a goal is not complete".to_owned().into());
            }
            if !self.seen.insert(next.id.clone()) {
                return Err(format!("goal id `{}` was used before", next.id).into());
            }
        } else {
            let current = self.goal.as_ref().ok_or_else(|| {
                Skipped(format!("a `{}` with no goal", change.operation.as_str()))
            })?;
            next_revision(
                current,
                &GoalRef {
                    id: next.id.clone(),
                    revision: next.revision,
                },
            )?;
            if rounds != self.rounds_started || created != self.created_at {
                return Err("a mutation changed the rounds started or createdAt"
                    .to_owned()
                    .into());
            }
            check_transition(change.operation, current, next, rounds)?;
        }
        self.goal = Some(next.clone());
        self.rounds_started = rounds;
        self.created_at = created;
        self.updated_at = updated;
        self.last_ref = Some(GoalRef {
            id: next.id.clone(),
            revision: next.revision,
        });
        Ok(())
    }

    /// Counts a goal round; an error names why it is not the active goal's next round.
    pub(crate) fn apply_round(&mut self, source: &RoundSource) -> Result<(), Skipped> {
        if source.round == 0 {
            return Ok(());
        }
        let fits = self.goal.as_ref().is_some_and(|goal| {
            goal.phase == GoalPhase::Active
                && goal.id == source.goal_id
                && goal.revision == source.revision
                && source.round == self.rounds_started + 1
                && source.round <= goal.max_goal_rounds
        });
        if !fits {
            return Err(format!(
                "round {} of goal `{}` revision {} is not the active goal's next round",
                source.round, source.goal_id, source.revision
            )
            .into());
        }
        self.rounds_started = source.round;
        Ok(())
    }
}

fn next_revision(current: &GoalSnapshot, next: &GoalRef) -> Result<(), Skipped> {
    if next.id != current.id || next.revision != current.revision + 1 {
        return Err(format!(
            "`{}` revision {} does not follow `{}` revision {}",
            next.id, next.revision, current.id, current.revision
        )
        .into());
    }
    Ok(())
}

fn check_snapshot(goal: &GoalSnapshot) -> Result<(), Skipped> {
    if goal.id.is_empty() || goal.revision == 0 || goal.max_goal_rounds == 0 {
        return Err(
            "a goal needs an id, a positive revision and a positive round cap"
                .to_owned()
                .into(),
        );
    }
    if goal.objective.trim().is_empty() {
        return Err("a goal's objective is empty".to_owned().into());
    }
    if (goal.phase == GoalPhase::Blocked) != goal.blocked_reason.is_some() {
        return Err(
            "a blocked reason goes with the blocked phase, and only with it"
                .to_owned()
                .into(),
        );
    }
    Ok(())
}

fn check_transition(
    operation: GoalOperation,
    current: &GoalSnapshot,
    next: &GoalSnapshot,
    rounds: u64,
) -> Result<(), Skipped> {
    use GoalPhase::{Active, Blocked, Complete, Paused};
    let same_definition =
        next.objective == current.objective && next.max_goal_rounds == current.max_goal_rounds;
    let allowed = match operation {
        GoalOperation::Edit => next.phase == current.phase,
        GoalOperation::Pause => same_definition && current.phase == Active && next.phase == Paused,
        GoalOperation::Resume => {
            same_definition
                && current.phase != Complete
                && next.phase == Active
                && rounds < next.max_goal_rounds
        }
        GoalOperation::Complete => {
            same_definition && current.phase != Complete && next.phase == Complete
        }
        GoalOperation::Block => same_definition && current.phase == Active && next.phase == Blocked,
        GoalOperation::Create | GoalOperation::Clear => false,
    };
    match allowed {
        true => Ok(()),
        false => Err(format!(
            "`{}` from {} to {} is not a transition a goal takes",
            operation.as_str(),
            current.phase.as_str(),
            next.phase.as_str()
        )
        .into()),
    }
}

#[cfg(test)]
#[path = "fold_tests.rs"]
mod tests;
