use super::*;
use dsh_protocol::MessageSource;
use dsh_protocol::{ContentBlock, GOAL_CHANGE_VERSION, GoalBlockReason};

fn goal(revision: u64, phase: GoalPhase) -> GoalSnapshot {
    GoalSnapshot {
        id: "goal-a".to_owned(),
        revision,
        objective: "ship it".to_owned(),
        phase,
        blocked_reason: (phase == GoalPhase::Blocked).then(|| GoalBlockReason {
            code: "round-limit".to_owned(),
            message: "out of rounds".to_owned(),
        }),
        max_goal_rounds: 2,
    }
}

fn change(operation: GoalOperation, goal: GoalSnapshot, rounds: u64) -> GoalChangeEvent {
    GoalChangeEvent {
        version: GOAL_CHANGE_VERSION,
        operation,
        goal: Some(goal),
        rounds_started: Some(rounds),
        created_at: Some(10),
        updated_at: Some(20),
        cleared: None,
        cleared_at: None,
    }
}

fn round(revision: u64, round: u64) -> RoundSource {
    RoundSource {
        goal_id: "goal-a".to_owned(),
        revision,
        round,
    }
}

#[test]
fn a_goal_is_created_counts_rounds_and_moves_through_its_phases() {
    let mut fold = GoalFold::default();
    fold.apply_change(&change(
        GoalOperation::Create,
        goal(1, GoalPhase::Active),
        0,
    ))
    .unwrap();
    fold.apply_round(&round(1, 1)).unwrap();
    assert_eq!(fold.rounds_started, 1);
    // A round out of order is refused and changes nothing.
    assert!(fold.apply_round(&round(1, 3)).is_err());
    assert!(fold.apply_round(&round(7, 2)).is_err());
    assert_eq!(fold.rounds_started, 1);
    fold.apply_change(&change(GoalOperation::Pause, goal(2, GoalPhase::Paused), 1))
        .unwrap();
    // Rounds do not count while the goal is paused.
    assert!(fold.apply_round(&round(2, 2)).is_err());
    fold.apply_change(&change(
        GoalOperation::Resume,
        goal(3, GoalPhase::Active),
        1,
    ))
    .unwrap();
    fold.apply_round(&round(3, 2)).unwrap();
    // No resume once the rounds are used up; a block is fine.
    fold.apply_change(&change(
        GoalOperation::Block,
        goal(4, GoalPhase::Blocked),
        2,
    ))
    .unwrap();
    assert!(
        fold.apply_change(&change(
            GoalOperation::Resume,
            goal(5, GoalPhase::Active),
            2
        ))
        .is_err()
    );
    fold.apply_change(&GoalChangeEvent {
        version: GOAL_CHANGE_VERSION,
        operation: GoalOperation::Clear,
        goal: None,
        rounds_started: None,
        created_at: None,
        updated_at: None,
        cleared: Some(GoalRef {
            id: "goal-a".to_owned(),
            revision: 5,
        }),
        cleared_at: Some(30),
    })
    .unwrap();
    assert!(fold.goal.is_none());
    // An id is never used twice.
    assert!(
        fold.apply_change(&change(
            GoalOperation::Create,
            goal(1, GoalPhase::Active),
            0
        ))
        .unwrap_err()
        .0
        .contains("used before")
    );
}

#[test]
fn a_mutation_must_follow_the_current_revision() {
    let mut fold = GoalFold::default();
    fold.apply_change(&change(
        GoalOperation::Create,
        goal(1, GoalPhase::Active),
        0,
    ))
    .unwrap();
    let skipped = fold
        .apply_change(&change(GoalOperation::Pause, goal(3, GoalPhase::Paused), 0))
        .unwrap_err();
    assert!(skipped.0.contains("does not follow"), "{skipped}");
    let second = fold
        .apply_change(&GoalChangeEvent {
            goal: Some(GoalSnapshot {
                id: "goal-b".to_owned(),
                ..goal(1, GoalPhase::Active)
            }),
            ..change(GoalOperation::Create, goal(1, GoalPhase::Active), 0)
        })
        .unwrap_err();
    assert!(second.0.contains("not complete"), "{second}");
}

#[test]
fn a_round_source_reads_back_from_a_message() {
    let source = round(2, 5);
    let message = Message::user("m", vec![ContentBlock::text("go")], source.to_source());
    let text = serde_json::to_string(&message).unwrap();
    assert!(
        text.contains(r#""source":{"kind":"goal","goalId":"goal-a","revision":2,"round":5}"#),
        "{text}"
    );
    let back: Message = serde_json::from_str(&text).unwrap();
    assert_eq!(round_source(&back), Some(source));
    let person = Message::user("p", vec![], MessageSource::user());
    assert_eq!(round_source(&person), None);
}
