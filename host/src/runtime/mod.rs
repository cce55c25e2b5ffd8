//! The plugin runtime: the Rust counterpart of Cordis.
//!
//! It owns fibers (mounted plugin instances) and their derived states, the realm service tables,
//! the event bus, and the reactive rule that ties them together: a fiber is applied for one
//! *epoch* (the fiber ids of the providers of the services it injects); when that changes it
//! unloads, and when the services are back it applies again. Every transition of one fiber is
//! serialized; different fibers progress concurrently on the host's runtime.

mod bus;
mod context;
mod dispatch;
mod effects;
mod fiber;
mod lifecycle;
mod plugin;
mod report;
mod scope;
mod services;
mod settle;
mod shutdown;
mod waterfall;

use dsh_plugin_api::lock;
use std::collections::BTreeMap;

use crate::fast_map::FastMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dsh_plugin_api::abi::ErasedService;
use dsh_plugin_api::{EventDecl, PluginError};

pub use bus::{Bus, BusError, IncompatibleLayout, LayoutMismatch, LayoutRecord, first_error_line};
pub use dispatch::Channel;
pub use fiber::{FiberId, FiberState, MountSpec, Source};
pub use plugin::{FileIdentity, LoadedLibrary, PluginRef, Services};
pub use report::{FiberReport, ReportHandle};
pub use scope::{ROOT_REALM, RealmId, Scope};

use fiber::Fiber;
use services::{ServiceEntry, ServiceTable};

/// Turns a plugin spec (`library` or `library/export`) into something to run, for children
/// mounted by plugins at run time.
pub trait Resolver: Send + Sync {
    fn resolve(&self, spec: &str) -> Source;
}

#[derive(Default)]
struct State {
    fibers: BTreeMap<FiberId, Arc<Fiber>>,
    services: ServiceTable,
    /// Fibers by the realm and name of each service they inject, so a service change wakes
    /// only its dependents.
    dependents: FastMap<RealmId, FastMap<String, Vec<FiberId>>>,
    named_realms: FastMap<String, RealmId>,
    next_realm: RealmId,
}

struct Inner {
    handle: tokio::runtime::Handle,
    state: Mutex<State>,
    bus: Bus,
    next_fiber: AtomicU64,
    /// Reconciles spawned and not yet finished: the tree is settled when this stays at zero.
    in_flight: AtomicUsize,
    /// The serial of the next service publication.
    next_publication: AtomicU64,
    /// Bumped after every finished reconcile, for waiting on the tree without polling.
    transitions: tokio::sync::Notify,
    resolver: Mutex<Option<Arc<dyn Resolver>>>,
}

/// Handle on the runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl Runtime {
    /// A runtime driven by the current tokio runtime.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                handle: tokio::runtime::Handle::current(),
                state: Mutex::new(State {
                    next_realm: ROOT_REALM + 1,
                    ..State::default()
                }),
                bus: Bus::default(),
                next_fiber: AtomicU64::new(0),
                in_flight: AtomicUsize::new(0),
                next_publication: AtomicU64::new(1),
                transitions: tokio::sync::Notify::new(),
                resolver: Mutex::new(None),
            }),
        }
    }

    pub fn set_resolver(&self, resolver: Arc<dyn Resolver>) {
        *lock(&self.inner.resolver) = Some(resolver);
    }

    /// Holds the tree unsettled until the guard drops: a tree being mounted row by row, with
    /// the rows mounted first already starting, is not settled between two rows.
    pub fn mounting(&self) -> impl Drop + use<> {
        lifecycle::InFlight::enter(&self.inner)
    }

    /// Mounts a fiber and starts its lifecycle; returns its id at once.
    pub fn mount(&self, parent: Option<FiberId>, scope: Arc<Scope>, spec: MountSpec) -> FiberId {
        self.inner.mount(parent, scope, spec)
    }

    /// Disposes a fiber (recursively) and waits until it is fully unloaded.
    pub async fn dispose(&self, id: FiberId) {
        self.inner.dispose(id).await;
    }

    /// Disposes every root fiber, consumers before the providers they use (in waves, see
    /// `shutdown`), waiting at most `grace` in all (and at least a second for each later wave)
    /// for their disposers; fibers still unloading after that are named in the log (their
    /// registrations are already dropped).
    pub async fn dispose_all(&self, grace: Duration) {
        let roots: Vec<Arc<Fiber>> = self
            .inner
            .state()
            .fibers
            .values()
            .filter(|fiber| fiber.parent.is_none())
            .cloned()
            .collect();
        let deadline = tokio::time::Instant::now() + grace;
        for wave in self.inner.disposal_waves(roots) {
            let left = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .max(Duration::from_secs(1).min(grace));
            let waits = wave.into_iter().rev().map(|fiber| {
                let inner = self.inner.clone();
                Box::pin(async move {
                    let id = fiber.id;
                    if tokio::time::timeout(left, inner.dispose(id)).await.is_err() {
                        tracing::error!(
                            row = %fiber.row_id,
                            plugin = %fiber.label,
                            "fiber {id} did not finish its disposers within {grace:?}; its registrations were dropped"
                        );
                    }
                }) as effects::BoxFuture
            });
            effects::JoinAll::new(waits.collect()).await;
        }
    }

    /// Publishes a service owned by the host itself (fiber 0, row `host`).
    pub fn provide_host(&self, name: &str, service: ErasedService) -> Result<(), PluginError> {
        self.inner.publish(0, ROOT_REALM, name, service)
    }

    /// A fresh realm, or the realm shared by every group isolating under `label`.
    pub fn realm(&self, label: Option<&str>) -> RealmId {
        let mut state = self.inner.state();
        let fresh = state.next_realm;
        match label {
            Some(label) => {
                let realm = *state.named_realms.entry(label.to_owned()).or_insert(fresh);
                if realm == fresh {
                    state.next_realm += 1;
                }
                realm
            }
            None => {
                state.next_realm += 1;
                fresh
            }
        }
    }

    /// A channel for the host's own dispatches.
    pub fn channel(&self, decl: &EventDecl) -> Result<Channel, BusError> {
        self.inner.bus.slot(decl, "host").map(Channel::new)
    }

    pub fn bus(&self) -> &Bus {
        &self.inner.bus
    }

    pub fn state_of(&self, id: FiberId) -> Option<FiberState> {
        self.inner.fiber(id).map(|fiber| fiber.state())
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Self::new()
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn fiber(&self, id: FiberId) -> Option<Arc<Fiber>> {
        self.state().fibers.get(&id).cloned()
    }

    fn mount(
        self: &Arc<Self>,
        parent: Option<FiberId>,
        scope: Arc<Scope>,
        spec: MountSpec,
    ) -> FiberId {
        let id = self.next_fiber.fetch_add(1, Ordering::Relaxed) + 1;
        let fiber = Arc::new(Fiber::new(id, parent, scope, spec));
        let deps = fiber.inner().deps.clone();
        {
            let mut state = self.state();
            state.fibers.insert(id, fiber.clone());
            for dep in deps {
                let realm = fiber.scope.realm_of(&dep);
                state
                    .dependents
                    .entry(realm)
                    .or_default()
                    .entry(dep)
                    .or_default()
                    .push(id);
            }
        }
        if let Some(parent) = parent.and_then(|parent| self.fiber(parent)) {
            parent.inner().effects.push(effects::Effect::Child(id));
        }
        self.schedule(fiber);
        id
    }

    /// Starts a reconcile of `fiber` on the runtime.
    fn schedule(self: &Arc<Self>, fiber: Arc<Fiber>) {
        let busy = lifecycle::InFlight::enter(self);
        let inner = self.clone();
        self.handle.spawn(async move {
            let _busy = busy;
            inner.reconcile(&fiber).await;
        });
    }

    async fn dispose(self: &Arc<Self>, id: FiberId) {
        let Some(fiber) = self.fiber(id) else {
            return;
        };
        fiber.inner().disposed = true;
        fiber.cancel.notify_waiters();
        let _busy = lifecycle::InFlight::enter(self);
        self.reconcile(&fiber).await;
    }

    /// The providers of `deps` as seen from `scope`, or None when one is missing.
    fn epoch(&self, scope: &Scope, deps: &[String]) -> Option<fiber::Epoch> {
        let state = self.state();
        deps.iter()
            .map(|name| {
                state
                    .services
                    .get(scope.realm_of(name), name)
                    .map(|entry| entry.serial)
            })
            .collect()
    }

    /// Makes `service` visible under `name` in `realm`, owned by `fiber`, and wakes dependents.
    fn publish(
        self: &Arc<Self>,
        fiber: FiberId,
        realm: RealmId,
        name: &str,
        service: ErasedService,
    ) -> Result<(), PluginError> {
        {
            let serial = self.next_publication.fetch_add(1, Ordering::Relaxed);
            let mut state = self.state();
            let refused = state.services.insert(
                realm,
                name,
                ServiceEntry {
                    fiber,
                    serial,
                    service,
                },
            );
            if let Err(rejected) = refused {
                // Released before the plugin's value is dropped: its destructor may call back.
                drop(state);
                drop(rejected);
                let owner = self.lookup_owner(realm, name).unwrap_or_default();
                return Err(PluginError::new(
                    dsh_plugin_api::ErrorKind::Registration,
                    format!("service `{name}` is already provided by {owner}"),
                ));
            }
        }
        self.wake_dependents(realm, name);
        Ok(())
    }

    fn unpublish(self: &Arc<Self>, fiber: FiberId, realm: RealmId, name: &str) {
        let removed = self.state().services.remove_owned(realm, name, fiber);
        if removed.is_some() {
            drop(removed);
            self.wake_dependents(realm, name);
        }
    }

    /// Who provides `name` in `realm`, for messages.
    fn lookup_owner(&self, realm: RealmId, name: &str) -> Option<String> {
        let state = self.state();
        let entry = state.services.get(realm, name)?;
        Some(match state.fibers.get(&entry.fiber) {
            Some(owner) => Self::owner_label(owner),
            None => "the host".to_owned(),
        })
    }

    fn lookup(&self, realm: RealmId, name: &str) -> Option<ErasedService> {
        self.state()
            .services
            .get(realm, name)
            .map(|entry| entry.service.clone())
    }

    fn wake_dependents(self: &Arc<Self>, realm: RealmId, name: &str) {
        let fibers: Vec<Arc<Fiber>> = {
            let state = self.state();
            let Some(ids) = state
                .dependents
                .get(&realm)
                .and_then(|names| names.get(name))
            else {
                return;
            };
            ids.iter()
                .filter_map(|id| state.fibers.get(id).cloned())
                .collect()
        };
        for fiber in fibers {
            if !fiber.inner().disposed {
                self.schedule(fiber);
            }
        }
    }

    /// Forgets a fully disposed fiber.
    fn remove(&self, fiber: &Fiber) {
        let deps = fiber.inner().deps.clone();
        let mut state = self.state();
        state.fibers.remove(&fiber.id);
        for dep in deps {
            let realm = fiber.scope.realm_of(&dep);
            let Some(names) = state.dependents.get_mut(&realm) else {
                continue;
            };
            if let Some(ids) = names.get_mut(&dep) {
                ids.retain(|id| *id != fiber.id);
                if ids.is_empty() {
                    names.remove(&dep);
                }
            }
            if names.is_empty() {
                state.dependents.remove(&realm);
            }
        }
    }

    fn owner_label(fiber: &Fiber) -> String {
        format!("row `{}` ({})", fiber.row_id, fiber.label)
    }

    fn resolver(&self) -> Option<Arc<dyn Resolver>> {
        lock(&self.resolver).clone()
    }
}
