//! Batches: several events committed whole or not at all, checked where the batch puts them.

use std::sync::Arc;

use dsh_session_log::{NewEvent, SessionLog, SurfaceOp, Violation};
use serde_json::json;

use crate::common::*;

fn user_event(id: &str, t: &str) -> NewEvent {
    NewEvent::surface("user/message", user_data(id, t), SurfaceOp::append(), 0)
}

fn state(log: &SessionLog) -> (usize, Vec<u64>, u64) {
    (log.len(), log.surface_nodes().to_vec(), log.derived_hash())
}

#[test]
fn a_batch_of_appends_commits_whole_or_leaves_the_log_as_it_was() {
    let mut b = B::new();
    b.turn_start(1);
    let before = state(&b.log);
    let bad = NewEvent::surface("turn/end", json!({}), SurfaceOp::append(), 0);
    let (index, error) = b
        .log
        .append_batch(vec![user_event("a", "one"), user_event("b", "two"), bad])
        .expect_err("the third event is refused");
    assert_eq!(index, 2);
    assert_eq!(
        (error.seq, error.violation),
        (
            3,
            Violation::SurfaceOpNotAllowed {
                kind: "turn/end".into()
            }
        )
    );
    assert_eq!(state(&b.log), before, "nothing of the batch is left behind");

    let committed = b
        .log
        .append_batch(vec![user_event("a", "one"), user_event("b", "two")])
        .expect("a good batch commits");
    assert_eq!(
        committed.iter().map(|event| event.seq).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(Arc::ptr_eq(&committed[1], &b.log.events()[2]));
    assert_eq!(b.log.surface_nodes(), [1, 2]);
    // Appended one by one, the same events make the same history.
    let mut single = B::new();
    single.turn_start(1);
    single.log.append(user_event("a", "one")).unwrap();
    single.log.append(user_event("b", "two")).unwrap();
    assert_eq!(single.log.derived_hash(), b.log.derived_hash());

    // A seq pinned for the event's place in the batch is checked against that place.
    let pinned = b
        .log
        .append_batch(vec![
            user_event("c", "three"),
            user_event("d", "four").at_seq(5),
        ])
        .expect_err("the second event would get seq 4");
    assert_eq!(pinned.0, 1);
    assert_eq!(pinned.1.violation, Violation::SeqMismatch { expected: 4 });
    assert_eq!(b.log.len(), 3);
}

#[test]
fn a_batch_that_replaces_what_it_appended_is_checked_in_order() {
    let mut b = B::new();
    let first = b.user("u0", "a");
    let before = state(&b.log);
    // The replace names a node the batch appended just before it.
    let bad = b
        .log
        .append_batch(vec![user_event("u1", "b"), summary(first, 99, vec![first])])
        .expect_err("seq 99 is not on the surface");
    assert_eq!(bad.0, 1);
    assert_eq!(state(&b.log), before);
    b.log
        .append_batch(vec![
            user_event("u1", "b"),
            summary(first, 1, vec![first, 1]),
        ])
        .expect("the replace sees the node appended before it");
    assert_eq!(b.log.surface_nodes(), [2]);
}
