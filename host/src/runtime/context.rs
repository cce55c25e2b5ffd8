//! The host side of a plugin's context: every call records its registration as an effect of the
//! fiber, and refuses once the fiber moved on (unloading, disposed, or reloaded since).

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSome, RStr, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::abi::{
    AsyncListenerBox, BlockingJobBox, DisposerBox, ErasedService, EventChannelBox, HostContext,
    HostContext_TO, SyncListenerBox, WaterfallListenerBox,
};
use dsh_plugin_api::{ErrorKind, EventDecl, HostCtx, LayoutRef, LogLevel, PluginError};

use super::Inner;
use super::bus::ListenerKind;
use super::dispatch::Channel;
use super::effects::Effect;
use super::fiber::{Fiber, FiberInner, MountSpec, Phase, Source};

#[derive(Clone)]
pub(super) struct FiberContext {
    runtime: Arc<Inner>,
    fiber: Arc<Fiber>,
    generation: u64,
}

fn registration(message: String) -> PluginError {
    PluginError::new(ErrorKind::Registration, message)
}

impl FiberContext {
    pub(super) fn new(runtime: Arc<Inner>, fiber: Arc<Fiber>, generation: u64) -> Self {
        Self {
            runtime,
            fiber,
            generation,
        }
    }

    pub(super) fn boxed(self) -> HostCtx {
        HostContext_TO::from_value(self, TD_Opaque)
    }

    fn owner(&self) -> String {
        Inner::owner_label(&self.fiber)
    }

    /// Whether the fiber's plugin declares `name`: needed (its `INJECT` or the row's `inject`),
    /// optional, or its own. Code of the host's own declares everything.
    fn declares(&self, name: &str) -> bool {
        let inner = self.fiber.inner();
        if inner.deps.iter().any(|dep| dep == name) {
            return true;
        }
        match &inner.source {
            Source::Plugin(plugin) => {
                let decl = plugin.decl();
                decl.optional
                    .iter()
                    .any(|optional| optional.as_str() == name)
                    || decl
                        .provides
                        .iter()
                        .any(|provided| provided.as_str() == name)
            }
            _ => true,
        }
    }

    /// Whether this context may still register, and whether `apply` is still running.
    fn check_active(&self) -> Result<bool, PluginError> {
        self.check_active_in(&self.fiber.inner())
    }

    /// [`Self::check_active`] on an already locked fiber, so a check and the registration it
    /// guards happen under one lock (contexts are also used from blocking-pool threads).
    fn check_active_in(&self, inner: &FiberInner) -> Result<bool, PluginError> {
        let current = inner.generation == self.generation && !inner.disposed;
        match (current, inner.phase) {
            (true, Phase::Loading) => Ok(true),
            (true, Phase::Idle) if inner.applied.is_some() => Ok(false),
            _ => Err(registration(format!(
                "cannot register on an inactive context: {} is {}",
                self.owner(),
                inner.state()
            ))),
        }
    }

    fn add_effect(&self, effect: Effect) -> Result<(), PluginError> {
        let mut inner = self.fiber.inner();
        if let Err(error) = self.check_active_in(&inner) {
            drop(inner);
            // The disposer is plugin code: run its destructor outside the fiber lock.
            drop(effect);
            return Err(error);
        }
        inner.effects.push(effect);
        Ok(())
    }

    fn listen(
        &self,
        decl: EventDecl,
        kind: ListenerKind,
        prepend: bool,
    ) -> Result<(), PluginError> {
        self.check_active()?;
        let slot = match self.runtime.bus.slot(&decl, &self.owner()) {
            Ok(slot) => slot,
            Err(error) => return Err(self.fail_registration(registration(error.to_string()))),
        };
        let id = self
            .runtime
            .bus
            .add(&slot, self.fiber.id, self.owner(), kind, prepend);
        let mut inner = self.fiber.inner();
        // Checked again under the lock: the fiber may have been disposed while the listener
        // was being added (from a blocking-pool thread); then the listener must not outlive it.
        if let Err(error) = self.check_active_in(&inner) {
            drop(inner);
            self.runtime.bus.remove(&slot.name, id);
            return Err(error);
        }
        inner.effects.push(Effect::Listener {
            event: slot.name.clone(),
            id,
        });
        Ok(())
    }

    fn fail_registration(&self, error: PluginError) -> PluginError {
        let mut inner = self.fiber.inner();
        if inner.phase == Phase::Loading && inner.registration_error.is_none() {
            inner.registration_error = Some(error.message.to_string());
        }
        error
    }
}

impl HostContext for FiberContext {
    fn clone_ctx(&self) -> HostCtx {
        self.clone().boxed()
    }

    fn fiber_id(&self) -> u64 {
        self.fiber.id
    }

    fn row_id(&self) -> RString {
        RString::from(self.fiber.row_id.as_str())
    }

    fn is_active(&self) -> bool {
        self.check_active().is_ok()
    }

    fn log(&self, level: LogLevel, message: RStr<'_>) {
        crate::logging::plugin_record(level, &self.owner(), message.as_str());
    }

    fn provide(&self, name: RStr<'_>, service: ErasedService) -> RResult<(), PluginError> {
        let loading = match self.check_active() {
            Ok(loading) => loading,
            Err(error) => return RErr(error),
        };
        let name = name.as_str().to_owned();
        let realm = self.fiber.scope.realm_of(&name);
        if loading {
            if let Some(existing) = self.runtime.lookup_owner(realm, &name) {
                let error = registration(format!(
                    "service `{name}` is already provided by {existing}"
                ));
                return RErr(self.fail_registration(error));
            }
            self.fiber.inner().staged.push((name, service));
            return ROk(());
        }
        match self.runtime.publish(self.fiber.id, realm, &name, service) {
            Ok(()) => {
                self.fiber
                    .inner()
                    .effects
                    .push(Effect::Service { realm, name });
                ROk(())
            }
            Err(error) => RErr(error),
        }
    }

    fn service(
        &self,
        name: RStr<'_>,
        expected: LayoutRef,
    ) -> RResult<ROption<ErasedService>, PluginError> {
        if cfg!(debug_assertions) && !self.declares(name.as_str()) {
            // A plugin's services are part of what a reader (and `dsh-host check`) must see:
            // in the builds tests run, a look-up of one it does not declare is refused loudly.
            let message = format!(
                "{} looked up the service `{name}`, which it declares neither in INJECT nor in OPTIONAL",
                self.owner()
            );
            crate::logging::plugin_record(LogLevel::Error, &self.owner(), &message);
            return RErr(registration(message));
        }
        let realm = self.fiber.scope.realm_of(name.as_str());
        let Some(service) = self.runtime.lookup(realm, name.as_str()) else {
            return ROk(RNone);
        };
        match self
            .runtime
            .bus
            .check_layout(service.layout.get(), expected.get())
        {
            Ok(()) => ROk(RSome(service)),
            Err(detail) => RErr(registration(format!(
                "service `{name}` has type `{}`, but {} expects `{}`: {detail}",
                service.layout.get().full_type(),
                self.owner(),
                expected.get().full_type()
            ))),
        }
    }

    fn event(&self, decl: EventDecl) -> RResult<EventChannelBox, PluginError> {
        match self.runtime.bus.slot(&decl, &self.owner()) {
            Ok(slot) => ROk(Channel::new(slot).boxed()),
            Err(error) => RErr(registration(error.to_string())),
        }
    }

    fn on_sync(
        &self,
        decl: EventDecl,
        listener: SyncListenerBox,
        prepend: bool,
    ) -> RResult<(), PluginError> {
        self.listen(decl, ListenerKind::Sync(listener), prepend)
            .into()
    }

    fn on_async(
        &self,
        decl: EventDecl,
        listener: AsyncListenerBox,
        prepend: bool,
    ) -> RResult<(), PluginError> {
        self.listen(decl, ListenerKind::Async(listener), prepend)
            .into()
    }

    fn on_waterfall(
        &self,
        decl: EventDecl,
        listener: WaterfallListenerBox,
        prepend: bool,
    ) -> RResult<(), PluginError> {
        self.listen(decl, ListenerKind::Waterfall(listener), prepend)
            .into()
    }

    fn effect(&self, disposer: DisposerBox) -> RResult<(), PluginError> {
        self.add_effect(Effect::Disposer(disposer)).into()
    }

    fn spawn(&self, task: FfiFuture<()>) -> RResult<(), PluginError> {
        let mut inner = self.fiber.inner();
        if let Err(error) = self.check_active_in(&inner) {
            drop(inner);
            drop(task);
            return RErr(error);
        }
        let handle = self.runtime.handle.spawn(task);
        // Forget tasks that already ended so a plugin spawning many short tasks does not grow
        // its effect list without bound.
        inner
            .effects
            .retain(|effect| !matches!(effect, Effect::Task(task) if task.is_finished()));
        inner.effects.push(Effect::Task(handle));
        ROk(())
    }

    fn sleep(&self, millis: u64) -> FfiFuture<()> {
        tokio::time::sleep(Duration::from_millis(millis)).into_ffi()
    }

    fn spawn_blocking(&self, mut job: BlockingJobBox) -> FfiFuture<RResult<(), PluginError>> {
        let running = self.runtime.handle.spawn_blocking(move || job.run());
        async move {
            match running.await {
                Ok(result) => result,
                Err(error) => RErr(PluginError::new(
                    ErrorKind::Plugin,
                    format!("blocking job ended: {error}"),
                )),
            }
        }
        .into_ffi()
    }

    fn settled(&self, fiber: u64) -> FfiFuture<RResult<(), PluginError>> {
        let runtime = self.runtime.clone();
        async move { runtime.settled(fiber).await.into() }.into_ffi()
    }

    fn unmount(&self, fiber: u64) -> FfiFuture<RResult<(), PluginError>> {
        // The child entry stays among the effects (disposing a gone fiber again is nothing),
        // so the next child's row id is still a new one.
        let owned = self
            .fiber
            .inner()
            .effects
            .iter()
            .any(|effect| matches!(effect, Effect::Child(child) if *child == fiber));
        let runtime = self.runtime.clone();
        let owner = self.owner();
        async move {
            if !owned {
                return RErr(PluginError::new(
                    ErrorKind::Plugin,
                    format!("{owner} cannot unmount fiber {fiber}: it is not a child it mounted"),
                ));
            }
            runtime.dispose(fiber).await;
            ROk(())
        }
        .into_ffi()
    }

    fn mount(&self, plugin: RStr<'_>, config_json: RString) -> RResult<u64, PluginError> {
        if let Err(error) = self.check_active() {
            return RErr(error);
        }
        let source = match self.runtime.resolver() {
            Some(resolver) => resolver.resolve(plugin.as_str()),
            None => Source::Missing(format!("no library resolver to find `{plugin}`")),
        };
        let ordinal = self
            .fiber
            .inner()
            .effects
            .iter()
            .filter(|effect| matches!(effect, Effect::Child(_)))
            .count()
            + 1;
        let spec = MountSpec {
            row_id: format!("{}/{ordinal}", self.fiber.row_id),
            label: plugin.as_str().to_owned(),
            source,
            config: config_json.into_string(),
            inject: Vec::new(),
        };
        ROk(self
            .runtime
            .mount(Some(self.fiber.id), self.fiber.scope.clone(), spec))
    }
}
