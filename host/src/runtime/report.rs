//! The diagnostics view of the runtime: one row per fiber with its state and what it waits
//! for, and the counts the leak checks compare (library fibers, live plugin tasks).

use std::sync::Arc;

use serde::Serialize;

use super::effects;
use super::fiber::Fiber;
use super::{FiberId, FiberState, Inner, Runtime, Scope, Services, Source};

/// One row of the diagnostics table.
#[derive(Debug, Clone, Serialize)]
pub struct FiberReport {
    pub fiber: FiberId,
    pub row: String,
    pub plugin: String,
    pub parent: Option<FiberId>,
    pub state: FiberState,
    /// For PENDING: the missing services, or why the library is not there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the row's plugin needs, may use and provides (empty for groups and rows whose
    /// library is not loaded).
    pub services: Services,
}

/// A handle that reads the diagnostics table without keeping the runtime alive (a service the
/// runtime itself holds may keep one).
#[derive(Clone)]
pub struct ReportHandle(std::sync::Weak<Inner>);

impl ReportHandle {
    /// The table, or `None` once the runtime is gone.
    pub fn report(&self) -> Option<Vec<FiberReport>> {
        let inner = self.0.upgrade()?;
        Some(Runtime { inner }.report())
    }
}

impl Runtime {
    /// A handle on [`Runtime::report`] that does not keep the runtime alive.
    pub fn report_handle(&self) -> ReportHandle {
        ReportHandle(Arc::downgrade(&self.inner))
    }

    /// The diagnostics table, in mount order.
    pub fn report(&self) -> Vec<FiberReport> {
        let fibers: Vec<Arc<Fiber>> = self.inner.state().fibers.values().cloned().collect();
        fibers
            .iter()
            .map(|fiber| self.inner.report(fiber))
            .collect()
    }

    /// Fibers currently running code from the library at `path`.
    pub fn fibers_of_library(&self, path: &std::path::Path) -> Vec<FiberId> {
        let fibers: Vec<Arc<Fiber>> = self.inner.state().fibers.values().cloned().collect();
        fibers
            .iter()
            .filter(|fiber| matches!(&fiber.inner().source, Source::Plugin(plugin) if plugin.library.path == path))
            .map(|fiber| fiber.id)
            .collect()
    }

    /// Unfinished tasks spawned by plugins.
    pub fn live_tasks(&self) -> usize {
        let fibers: Vec<Arc<Fiber>> = self.inner.state().fibers.values().cloned().collect();
        fibers
            .iter()
            .map(|fiber| {
                fiber
                    .inner()
                    .effects
                    .iter()
                    .filter(|effect| matches!(effect, effects::Effect::Task(task) if !task.is_finished()))
                    .count()
            })
            .sum()
    }
}

impl Inner {
    fn missing(&self, scope: &Scope, deps: &[String]) -> Vec<String> {
        let state = self.state();
        deps.iter()
            .filter(|name| !state.services.contains(scope.realm_of(name), name))
            .cloned()
            .collect()
    }

    fn report(&self, fiber: &Fiber) -> FiberReport {
        let inner = fiber.inner();
        let state = inner.state();
        let services = match &inner.source {
            Source::Plugin(plugin) => plugin.services(&inner.deps),
            _ => Services::default(),
        };
        let waiting_for = match (state, &inner.source) {
            (FiberState::Pending, Source::Missing(reason)) => vec![reason.clone()],
            (FiberState::Pending, _) => {
                let deps = inner.deps.clone();
                drop(inner);
                let missing = self.missing(&fiber.scope, &deps);
                return FiberReport {
                    fiber: fiber.id,
                    row: fiber.row_id.clone(),
                    plugin: fiber.label.clone(),
                    parent: fiber.parent,
                    state,
                    waiting_for: missing
                        .into_iter()
                        .map(|name| format!("service `{name}`"))
                        .collect(),
                    error: None,
                    services,
                };
            }
            _ => Vec::new(),
        };
        FiberReport {
            fiber: fiber.id,
            row: fiber.row_id.clone(),
            plugin: fiber.label.clone(),
            parent: fiber.parent,
            state,
            waiting_for,
            error: inner.error.clone(),
            services,
        }
    }
}
