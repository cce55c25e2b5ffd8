//! Effects: everything a fiber registered, and how it is undone.
//!
//! Unloading walks the effects in reverse registration order. Registrations the host holds
//! (listeners, services, tasks) are dropped at once, whatever the plugin does; disposers and child
//! fibers are *started* in that reverse order and then run concurrently, and the unload completes
//! only when every one of them has finished (quiescence, not a request to stop).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use dsh_plugin_api::abi::DisposerBox;

use super::fiber::FiberId;
use super::scope::RealmId;

pub(super) type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One registration owned by a fiber.
pub(super) enum Effect {
    /// A listener on an event slot.
    Listener { event: String, id: u64 },
    /// A published service.
    Service { realm: RealmId, name: String },
    /// A task on the host runtime.
    Task(tokio::task::JoinHandle<()>),
    /// A plugin disposer.
    Disposer(DisposerBox),
    /// A child fiber (mounted by the plugin, or a row of a group).
    Child(FiberId),
}

/// Polls every future in vector order until all are done. Given a reversed list, the first poll
/// starts them in reverse registration order; afterwards they progress concurrently.
pub(super) struct JoinAll {
    pending: Vec<Option<BoxFuture>>,
}

impl JoinAll {
    pub(super) fn new(futures: Vec<BoxFuture>) -> Self {
        Self {
            pending: futures.into_iter().map(Some).collect(),
        }
    }
}

impl Future for JoinAll {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut all_done = true;
        for slot in self.pending.iter_mut() {
            if let Some(fut) = slot {
                if fut.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    all_done = false;
                }
            }
        }
        if all_done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn join_all_starts_in_order_and_waits_for_all() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let first = {
            let log = log.clone();
            Box::pin(async move {
                log.lock().unwrap().push("a start");
                // Finishes only after b has started: proves concurrency without timing.
                rx.await.unwrap();
                log.lock().unwrap().push("a done");
            }) as BoxFuture
        };
        let second = {
            let log = log.clone();
            Box::pin(async move {
                log.lock().unwrap().push("b start");
                tx.send(()).unwrap();
                log.lock().unwrap().push("b done");
            }) as BoxFuture
        };
        JoinAll::new(vec![first, second]).await;
        assert_eq!(
            *log.lock().unwrap(),
            vec!["a start", "b start", "b done", "a done"]
        );
    }
}
