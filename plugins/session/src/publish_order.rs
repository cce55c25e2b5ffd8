//! The order in which a live session's commits are published: listeners and the store see
//! them in sequence order, whichever thread committed them.
//!
//! A commit appends to the log under the log's lock and publishes after releasing it, so
//! listeners may append too. Without an order, two threads committing at once could publish
//! out of sequence (the store would get seq 5 before seq 4). So a committing thread first
//! becomes the session's publisher and stays it until its records, and every record its
//! listeners appended meanwhile, are announced. A listener's own append on the publisher's
//! thread does not wait (it would wait for itself): its records go to the log at once and are
//! announced right after the batch being announced, before the outer commit returns.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, PoisonError};
use std::thread::{self, ThreadId};

use abi_stable::std_types::RArc;
use dsh_plugin_api::lock;
use dsh_sessions_seam::EventRecord;

#[derive(Default)]
pub(crate) struct PublishOrder {
    state: Mutex<Publisher>,
    free: Condvar,
}

#[derive(Default)]
struct Publisher {
    owner: Option<ThreadId>,
    /// Threads waiting for the owner to finish. Why counted: a notify is a system call even
    /// when nobody waits, and nearly every commit finds nobody waiting (one futex wake per
    /// commit made an instant model's step about 40 us slower).
    waiting: usize,
    /// Records a listener committed while the owner announced, in sequence order.
    deferred: VecDeque<Vec<RArc<EventRecord>>>,
}

/// How a commit takes part in the order.
pub(crate) enum Entry<'a> {
    /// This thread publishes; others wait until the guard drops.
    Owner(OwnerGuard<'a>),
    /// This thread is already publishing (a listener appending): defer the announcement.
    Nested,
}

impl PublishOrder {
    /// Waits until no other thread is publishing this session, then publishes.
    pub(crate) fn enter(&self) -> Entry<'_> {
        let me = thread::current().id();
        let mut state = lock(&self.state);
        if state.owner == Some(me) {
            return Entry::Nested;
        }
        while state.owner.is_some() {
            state.waiting += 1;
            state = self
                .free
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.waiting -= 1;
        }
        state.owner = Some(me);
        Entry::Owner(OwnerGuard { order: self })
    }

    /// Announces `records` after the batch the publisher is announcing.
    pub(crate) fn defer(&self, records: Vec<RArc<EventRecord>>) {
        lock(&self.state).deferred.push_back(records);
    }
}

/// The publisher's turn; dropping it lets the next committing thread in.
pub(crate) struct OwnerGuard<'a> {
    order: &'a PublishOrder,
}

impl OwnerGuard<'_> {
    /// The next batch a listener committed, to be announced now.
    pub(crate) fn next_deferred(&self) -> Option<Vec<RArc<EventRecord>>> {
        lock(&self.order.state).deferred.pop_front()
    }
}

impl Drop for OwnerGuard<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.order.state);
        state.owner = None;
        let anyone_waits = state.waiting > 0;
        drop(state);
        if anyone_waits {
            self.order.free.notify_one();
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "a unit test's own thread, in the test binary, not a loaded library"
)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_second_entry_on_the_publishing_thread_is_nested() {
        let order = PublishOrder::default();
        let Entry::Owner(guard) = order.enter() else {
            panic!("the first entry publishes");
        };
        assert!(matches!(order.enter(), Entry::Nested));
        order.defer(Vec::new());
        assert!(guard.next_deferred().is_some());
        assert!(guard.next_deferred().is_none());
    }

    #[test]
    fn another_thread_waits_for_the_publisher() {
        let order = Arc::new(PublishOrder::default());
        let Entry::Owner(guard) = order.enter() else {
            panic!("the first entry publishes");
        };
        let (sent, entered) = std::sync::mpsc::channel();
        let other = order.clone();
        let waiter = thread::spawn(move || {
            let entry = other.enter();
            sent.send(matches!(entry, Entry::Owner(_))).ok();
        });
        assert!(
            entered
                .recv_timeout(std::time::Duration::from_millis(100))
                .is_err(),
            "the other thread entered while this one published"
        );
        drop(guard);
        assert_eq!(
            entered.recv_timeout(std::time::Duration::from_secs(10)),
            Ok(true)
        );
        waiter.join().ok();
    }
}
