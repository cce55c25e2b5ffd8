//! Asks that wait for a person (approvals, questions), by id: an answerer parks its ask here
//! and waits for the first answer, the time limit, or the last client that could answer
//! leaving; a client's answer settles it. An ask leaves the board whatever ends its wait, its call being cancelled included, so
//! an answer to an ask nobody waits for any more is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::{Context, lock};
use tokio::sync::oneshot;

struct Parked<T, V> {
    about: T,
    answer: oneshot::Sender<V>,
}

/// The asks waiting for an answer: what each is about (`T`) and where its answer (`V`) goes.
pub(crate) struct Board<T, V> {
    parked: Mutex<HashMap<String, Parked<T, V>>>,
}

impl<T, V> Default for Board<T, V> {
    fn default() -> Self {
        Self {
            parked: Mutex::new(HashMap::new()),
        }
    }
}

impl<T, V> Board<T, V> {
    /// Parks ask `id`; its answer comes on the receiver.
    pub(crate) fn park(&self, id: String, about: T) -> oneshot::Receiver<V> {
        let (sender, receiver) = oneshot::channel();
        lock(&self.parked).insert(
            id,
            Parked {
                about,
                answer: sender,
            },
        );
        receiver
    }

    /// What waiting ask `id` is about, read with `look` (`None`: nobody waits for it).
    pub(crate) fn look<R>(&self, id: &str, look: impl FnOnce(&T) -> R) -> Option<R> {
        lock(&self.parked).get(id).map(|parked| look(&parked.about))
    }

    /// Answers ask `id`: what it was about, and whether its waiter took the answer (`None`:
    /// nobody waits for it).
    pub(crate) fn settle(&self, id: &str, answer: V) -> Option<(T, bool)> {
        let parked = lock(&self.parked).remove(id)?;
        let taken = parked.answer.send(answer).is_ok();
        Some((parked.about, taken))
    }
}

impl<T: Send + 'static, V: Send + 'static> Board<T, V> {
    /// Parks ask `id` and waits for its answer for at most `limit`, or until `nobody` ends
    /// (no one is left to answer); `None` when it ends unanswered.
    pub(crate) async fn wait(
        self: &Arc<Self>,
        ctx: &Context,
        id: String,
        about: T,
        limit: Duration,
        nobody: impl std::future::Future<Output = ()>,
    ) -> Option<V> {
        let receiver = self.park(id.clone(), about);
        // Off the board whatever ends the wait: an answer, the time limit, or this future
        // dropped because the call was cancelled.
        let _leave = Leave(self.clone(), id);
        let unanswerable = first_of(ctx.sleep(limit), nobody);
        match first_of(receiver, unanswerable).await {
            Either::Left(Ok(answer)) => Some(answer),
            Either::Left(Err(_)) | Either::Right(_) => None,
        }
    }
}

struct Leave<T, V>(Arc<Board<T, V>>, String);

impl<T, V> Drop for Leave<T, V> {
    fn drop(&mut self) {
        lock(&self.0.parked).remove(&self.1);
    }
}
