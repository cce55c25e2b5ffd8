//! Waiting on the tree: for a condition, for one fiber to start, or for every transition to
//! stop.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use dsh_plugin_api::{ErrorKind, PluginError};

use super::{FiberId, FiberState, Inner, Runtime};

impl Runtime {
    /// Resolves when `done` holds, re-checking after every transition (no polling).
    pub async fn wait_until(&self, mut done: impl FnMut(&Runtime) -> bool) {
        loop {
            // Registered before the check, so a transition between the two is not missed.
            let transition = self.inner.transitions.notified();
            tokio::pin!(transition);
            transition.as_mut().enable();
            if done(self) {
                return;
            }
            transition.await;
        }
    }

    /// Reconciles spawned and not finished.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::Acquire)
    }

    /// Waits until no transition has run for `quiet`, at most `max`. True when settled.
    pub async fn settle(&self, quiet: Duration, max: Duration) -> bool {
        let deadline = Instant::now() + max;
        let mut quiet_since = Instant::now();
        loop {
            let busy = self.inner.in_flight.load(Ordering::Acquire) > 0
                || self
                    .report()
                    .iter()
                    .any(|row| matches!(row.state, FiberState::Loading | FiberState::Unloading));
            let now = Instant::now();
            if busy {
                quiet_since = now;
            } else if now.duration_since(quiet_since) >= quiet {
                return true;
            }
            if now >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Inner {
    /// Resolves when fiber `id` is ACTIVE, or with its error once it FAILED or is gone,
    /// re-checking after every transition (no polling).
    pub(super) async fn settled(&self, id: FiberId) -> Result<(), PluginError> {
        if id == dsh_plugin_api::WHOLE_TREE {
            self.tree_settled().await;
            return Ok(());
        }
        loop {
            // Registered before the check, so a transition between the two is not missed.
            let transition = self.transitions.notified();
            tokio::pin!(transition);
            transition.as_mut().enable();
            let Some(fiber) = self.fiber(id) else {
                return Err(PluginError::new(
                    ErrorKind::Registration,
                    format!("fiber {id} is gone"),
                ));
            };
            match fiber.state() {
                FiberState::Active => return Ok(()),
                FiberState::Failed | FiberState::Disposed => {
                    let error = fiber.inner().error.clone();
                    return Err(PluginError::new(
                        ErrorKind::Plugin,
                        format!(
                            "{} ({}) did not start: {}",
                            fiber.row_id,
                            fiber.label,
                            error.unwrap_or_else(|| "it was disposed".to_owned())
                        ),
                    ));
                }
                _ => {}
            }
            transition.await;
        }
    }

    /// Resolves once no fiber is loading or unloading and no reconcile is under way (a fiber
    /// PENDING on a service no one provides does not hold it), re-checking after every
    /// transition.
    async fn tree_settled(&self) {
        loop {
            let transition = self.transitions.notified();
            tokio::pin!(transition);
            transition.as_mut().enable();
            let busy = self.in_flight.load(Ordering::Acquire) > 0
                || self.state().fibers.values().any(|fiber| {
                    matches!(fiber.state(), FiberState::Loading | FiberState::Unloading)
                });
            if !busy {
                return;
            }
            transition.await;
        }
    }
}
