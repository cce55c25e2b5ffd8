//! Fiber transitions: decide the next step from the facts, then load or unload.
//!
//! `reconcile` runs under the fiber's transition lock and loops until the fiber is where its
//! facts say it should be: applied for the current epoch, PENDING without one, FAILED for the
//! epoch it failed with, or fully unloaded once disposed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use abi_stable::std_types::{RErr, RString};
use dsh_plugin_api::PluginError;

use super::Inner;
use super::context::FiberContext;
use super::effects::{BoxFuture, Effect, JoinAll};
use super::fiber::{Epoch, Fiber, Phase, Source};

enum Step {
    Done,
    Unload,
    Load(Epoch),
}

impl Inner {
    pub(super) async fn reconcile(self: &Arc<Self>, fiber: &Arc<Fiber>) {
        let _turn = fiber.transition.lock().await;
        loop {
            match self.next_step(fiber) {
                Step::Done => break,
                Step::Unload => self.unload(fiber).await,
                Step::Load(epoch) => self.load(fiber, epoch).await,
            }
        }
        if fiber.inner().disposed {
            self.remove(fiber);
        }
    }

    fn next_step(&self, fiber: &Fiber) -> Step {
        // Lock order: a fiber's facts, then the runtime state (never the other way round).
        let inner = fiber.inner();
        if inner.disposed {
            return if inner.applied.is_some() || !inner.effects.is_empty() {
                Step::Unload
            } else {
                Step::Done
            };
        }
        let target = match inner.source {
            Source::Plugin(_) | Source::Group | Source::Host => {
                self.epoch(&fiber.scope, &inner.deps)
            }
            Source::Missing(_) | Source::Broken(_) => None,
        };
        match (&inner.applied, target) {
            (Some(applied), Some(target)) if *applied == target => Step::Done,
            (Some(_), _) => Step::Unload,
            (None, None) => Step::Done,
            (None, Some(epoch))
                if inner.error.is_some() && inner.failed_epoch.as_ref() == Some(&epoch) =>
            {
                Step::Done
            }
            (None, Some(epoch)) => Step::Load(epoch),
        }
    }

    async fn load(self: &Arc<Self>, fiber: &Arc<Fiber>, epoch: Epoch) {
        let (source, config, generation) = {
            let mut inner = fiber.inner();
            inner.phase = Phase::Loading;
            inner.error = None;
            inner.failed_epoch = None;
            inner.registration_error = None;
            inner.generation += 1;
            (inner.source.clone(), inner.config.clone(), inner.generation)
        };
        let result = match source {
            Source::Plugin(plugin) => {
                let ctx = FiberContext::new(self.clone(), fiber.clone(), generation).boxed();
                let applying = (plugin.decl().apply)(ctx, RString::from(config));
                // Disposing a fiber whose `apply` is still running drops (cancels) the apply.
                let cancelled = fiber.cancel.notified();
                tokio::pin!(cancelled);
                cancelled.as_mut().enable();
                if fiber.inner().disposed {
                    Err(PluginError::plugin(
                        "apply cancelled: the fiber was disposed",
                    ))
                } else {
                    tokio::select! {
                        result = applying => result.into_result(),
                        () = &mut cancelled => Err(PluginError::plugin("apply cancelled: the fiber was disposed")),
                    }
                }
            }
            Source::Group | Source::Host | Source::Missing(_) | Source::Broken(_) => Ok(()),
        };
        let staged = {
            let mut inner = fiber.inner();
            let result = result.and_then(|()| match inner.registration_error.take() {
                Some(message) => Err(PluginError::new(
                    dsh_plugin_api::ErrorKind::Registration,
                    message,
                )),
                None => Ok(()),
            });
            match result {
                Ok(()) => Ok(std::mem::take(&mut inner.staged)),
                Err(error) => Err(error),
            }
        };
        let published = staged.and_then(|staged| {
            for (name, service) in staged {
                let realm = fiber.scope.realm_of(&name);
                self.publish(fiber.id, realm, &name, service)?;
                fiber.inner().effects.push(Effect::Service { realm, name });
            }
            Ok(())
        });
        match published {
            Ok(()) => {
                let mut inner = fiber.inner();
                inner.applied = Some(epoch);
                inner.phase = Phase::Idle;
            }
            Err(error) => {
                if fiber.inner().disposed {
                    // Disposed while loading: the cancelled apply is expected, not a failure.
                    tracing::debug!(row = %fiber.row_id, plugin = %fiber.label, "apply stopped: {error}");
                } else {
                    tracing::error!(row = %fiber.row_id, plugin = %fiber.label, "plugin failed: {error}");
                }
                {
                    let mut inner = fiber.inner();
                    inner.error = Some(error.to_string());
                    inner.failed_epoch = Some(epoch);
                    inner.phase = Phase::Idle;
                }
                // Undo whatever the failed apply registered before it failed.
                self.unload(fiber).await;
            }
        }
    }

    pub(super) async fn unload(self: &Arc<Self>, fiber: &Arc<Fiber>) {
        let (effects, staged) = {
            let mut inner = fiber.inner();
            inner.phase = Phase::Unloading;
            inner.applied = None;
            inner.generation += 1;
            (
                std::mem::take(&mut inner.effects),
                std::mem::take(&mut inner.staged),
            )
        };
        // Services staged by an apply that never published: plugin objects, dropped unlocked.
        drop(staged);
        let mut waits: Vec<BoxFuture> = Vec::new();
        for effect in effects.into_iter().rev() {
            match effect {
                Effect::Listener { event, id } => self.bus.remove(&event, id),
                Effect::Service { realm, name } => self.unpublish(fiber.id, realm, &name),
                Effect::Task(task) => {
                    task.abort();
                    waits.push(Box::pin(async move {
                        let _ = task.await;
                    }));
                }
                Effect::Disposer(mut disposer) => {
                    let owner = Inner::owner_label(fiber);
                    // Called inside the future, so a synchronous disposer starts in the same
                    // reverse order as the asynchronous ones and the child fibers.
                    waits.push(Box::pin(async move {
                        if let RErr(error) = disposer.dispose().await {
                            tracing::error!("disposer of {owner} failed: {error}");
                        }
                    }));
                }
                Effect::Child(child) => {
                    let inner = self.clone();
                    waits.push(Box::pin(async move { inner.dispose_boxed(child).await }));
                }
            }
        }
        JoinAll::new(waits).await;
        fiber.inner().phase = Phase::Idle;
    }

    /// `dispose` behind a box, for the recursion through child fibers.
    fn dispose_boxed(self: &Arc<Self>, id: super::FiberId) -> BoxFuture {
        let inner = self.clone();
        Box::pin(async move { inner.dispose(id).await })
    }
}

/// One reconcile under way; leaving (even by cancellation, when the runtime stops mid-way)
/// counts it out and wakes whoever waits for the tree to settle.
pub(super) struct InFlight(Arc<Inner>);

impl InFlight {
    pub(super) fn enter(inner: &Arc<Inner>) -> Self {
        inner.in_flight.fetch_add(1, Ordering::AcqRel);
        Self(inner.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.transitions.notify_waiters();
    }
}
