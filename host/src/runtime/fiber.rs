//! A fiber: one mounted instance of a plugin, with its derived lifecycle state.
//!
//! The state is never assigned; it is derived from a few facts (disposed? failing? unloading?
//! loading? applied for the current dependencies?), as in Cordis, so it cannot drift from them.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use dsh_plugin_api::abi::ErasedService;
use serde::Serialize;

use super::effects::Effect;
use super::plugin::PluginRef;
use super::scope::Scope;

pub type FiberId = u64;

/// The six lifecycle states of a fiber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FiberState {
    Pending,
    Loading,
    Active,
    Failed,
    Unloading,
    Disposed,
}

impl fmt::Display for FiberState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pending => "PENDING",
            Self::Loading => "LOADING",
            Self::Active => "ACTIVE",
            Self::Failed => "FAILED",
            Self::Unloading => "UNLOADING",
            Self::Disposed => "DISPOSED",
        })
    }
}

/// What a fiber runs.
#[derive(Clone)]
pub enum Source {
    /// A plugin from a loaded library.
    Plugin(PluginRef),
    /// A group row: no code of its own, its children are mounted beside it.
    Group,
    /// Code that lives in the host binary (the `host` fiber providing `cmdline`).
    Host,
    /// The library is not there (yet): the fiber waits, PENDING, with this reason.
    Missing(String),
    /// The library is there but cannot be used: the fiber is FAILED with this reason.
    Broken(String),
}

/// The publications of a fiber's required services, by publication serial, in `deps` order. A
/// fiber is ACTIVE only for the epoch it was applied with; any change of provider, or a
/// provider publishing again, reloads it.
pub(super) type Epoch = Vec<u64>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Idle,
    Loading,
    Unloading,
}

pub(super) struct FiberInner {
    pub source: Source,
    /// The row's config as JSON text, handed to `apply`.
    pub config: String,
    /// Required services: the plugin's `inject` plus the row's.
    pub deps: Vec<String>,
    pub disposed: bool,
    pub error: Option<String>,
    /// The epoch a failed apply ran with; the fiber retries only when the epoch changes.
    pub failed_epoch: Option<Epoch>,
    pub phase: Phase,
    pub applied: Option<Epoch>,
    /// Bumped at each load and unload; a context from an older generation is inactive.
    pub generation: u64,
    pub effects: Vec<Effect>,
    /// Services provided during `apply`, published when `apply` succeeds.
    pub staged: Vec<(String, ErasedService)>,
    /// A registration the host refused during `apply` (e.g. a duplicate service): the fiber
    /// fails even if the plugin ignored the error.
    pub registration_error: Option<String>,
}

pub(super) struct Fiber {
    pub id: FiberId,
    pub row_id: String,
    /// The plugin spec of the row (`library` or `library/export`, or `group`).
    pub label: String,
    pub parent: Option<FiberId>,
    pub scope: Arc<Scope>,
    /// Serializes the fiber's transitions: one reconcile at a time.
    pub transition: tokio::sync::Mutex<()>,
    /// Woken when the fiber is disposed, so an `apply` still running is dropped (cancelled).
    pub cancel: tokio::sync::Notify,
    inner: Mutex<FiberInner>,
}

/// What to mount: the row's identity, the code to run and its inputs.
#[derive(Clone)]
pub struct MountSpec {
    pub row_id: String,
    pub label: String,
    pub source: Source,
    pub config: String,
    /// Extra required services named by the row (`inject`), added to the plugin's own.
    pub inject: Vec<String>,
}

impl Fiber {
    pub(super) fn new(
        id: FiberId,
        parent: Option<FiberId>,
        scope: Arc<Scope>,
        spec: MountSpec,
    ) -> Self {
        let MountSpec {
            row_id,
            label,
            source,
            config,
            inject,
        } = spec;
        let mut deps = match &source {
            Source::Plugin(plugin) => plugin.inject(),
            _ => Vec::new(),
        };
        for name in inject {
            if !deps.contains(&name) {
                deps.push(name);
            }
        }
        let error = match &source {
            Source::Broken(reason) => Some(reason.clone()),
            _ => None,
        };
        Self {
            id,
            row_id,
            label,
            parent,
            scope,
            transition: tokio::sync::Mutex::new(()),
            cancel: tokio::sync::Notify::new(),
            inner: Mutex::new(FiberInner {
                source,
                config,
                deps,
                disposed: false,
                error,
                failed_epoch: None,
                phase: Phase::Idle,
                applied: None,
                generation: 0,
                effects: Vec::new(),
                staged: Vec::new(),
                registration_error: None,
            }),
        }
    }

    /// The fiber's mutable facts. Never held across an await.
    pub(super) fn inner(&self) -> MutexGuard<'_, FiberInner> {
        match self.inner.lock() {
            Ok(guard) => guard,
            // A panic while holding this lock can only come from host code; the data is still
            // consistent field by field, so keep going rather than poison the whole runtime.
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(super) fn state(&self) -> FiberState {
        self.inner().state()
    }
}

impl FiberInner {
    pub(super) fn state(&self) -> FiberState {
        if self.phase == Phase::Unloading {
            FiberState::Unloading
        } else if self.disposed {
            FiberState::Disposed
        } else if self.error.is_some() {
            FiberState::Failed
        } else if self.phase == Phase::Loading {
            FiberState::Loading
        } else if self.applied.is_some() {
            FiberState::Active
        } else {
            FiberState::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: Source) -> MountSpec {
        MountSpec {
            row_id: "row".into(),
            label: "lib".into(),
            source,
            config: "{}".into(),
            inject: vec![],
        }
    }

    fn fiber() -> Fiber {
        Fiber::new(1, None, Scope::root(), spec(Source::Group))
    }

    #[test]
    fn state_is_derived_from_facts() {
        let fiber = fiber();
        assert_eq!(fiber.state(), FiberState::Pending);
        fiber.inner().phase = Phase::Loading;
        assert_eq!(fiber.state(), FiberState::Loading);
        fiber.inner().phase = Phase::Idle;
        fiber.inner().applied = Some(vec![]);
        assert_eq!(fiber.state(), FiberState::Active);
        fiber.inner().phase = Phase::Unloading;
        assert_eq!(fiber.state(), FiberState::Unloading);
        fiber.inner().phase = Phase::Idle;
        fiber.inner().applied = None;
        fiber.inner().error = Some("boom".into());
        assert_eq!(fiber.state(), FiberState::Failed);
        fiber.inner().disposed = true;
        assert_eq!(fiber.state(), FiberState::Disposed);
    }

    #[test]
    fn broken_source_starts_failed() {
        let fiber = Fiber::new(
            2,
            None,
            Scope::root(),
            spec(Source::Broken("not a plugin".into())),
        );
        assert_eq!(fiber.state(), FiberState::Failed);
    }
}
