//! [`Context`]: the typed face of the host a plugin's `apply` receives.
//!
//! Every registration made through a context is an effect owned by the plugin's fiber: the host
//! force-drops it when the fiber unloads, whatever the plugin does. Time, spawning and blocking
//! work come from the host runtime; a plugin never starts a reactor or a thread of its own.

use std::future::Future;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use abi_stable::StableAbi;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, ROk, RResult, RStr, RString};
use async_ffi::{FfiFuture, FutureExt};
use serde::Serialize;

use crate::abi::{
    BlockingJob, BlockingJob_TO, Disposer, Disposer_TO, ErasedService, ErrorKind, EventChannelBox,
    EventDecl, HostCtx, LayoutRef, LogLevel, PluginError,
};
use crate::events::{
    BailEvent, EmitEvent, ParallelEvent, SerialEvent, WaterfallEvent, async_listener, erase_arc,
    sync_listener, unerase_arc, unerase_option,
};
use crate::guard::{contain, contained};
use crate::waterfall::{Next, outcome, waterfall_inner, waterfall_listener};

/// The context of one fiber. Cheap to clone; clones refer to the same fiber.
#[derive(Clone)]
pub struct Context {
    host: Arc<HostCtx>,
    prepend: bool,
}

impl ErasedService {
    /// Wraps `value` for registration with the host (used by host-provided services).
    pub fn new<S: StableAbi + Send + Sync + 'static>(value: S) -> Self {
        Self {
            layout: LayoutRef::of::<S>(),
            value: erase_arc(RArc::new(value)),
        }
    }
}

/// A service handle: shared, read-only access to the provider's value.
pub struct Service<S> {
    value: RArc<S>,
}

impl<S> Service<S> {
    /// A handle on a value made in this library rather than looked up from the host: for a
    /// plugin's unit tests, which hand its logic fakes of the services it would inject.
    pub fn local(value: S) -> Self {
        Self {
            value: RArc::new(value),
        }
    }
}

impl<S> Clone for Service<S> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
        }
    }
}

impl<S> Deref for Service<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.value
    }
}

/// Implemented by the five event descriptor types.
pub trait Descriptor {
    fn decl(&self) -> EventDecl;
}

macro_rules! impl_descriptor {
    ($name:ident<$($param:ident),*>) => {
        impl<$($param: StableAbi),*> Descriptor for $name<$($param),*> {
            fn decl(&self) -> EventDecl {
                $name::decl(self)
            }
        }
    };
}
impl_descriptor!(EmitEvent<P>);
impl_descriptor!(BailEvent<P, R>);
impl_descriptor!(ParallelEvent<P>);
impl_descriptor!(SerialEvent<P, R>);
impl_descriptor!(WaterfallEvent<P, R>);

/// A resolved event channel: dispatching through it skips the lookup by name.
pub struct Channel<D> {
    inner: Arc<EventChannelBox>,
    _descriptor: PhantomData<fn(D)>,
}

impl<D> Clone for Channel<D> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            _descriptor: PhantomData,
        }
    }
}

fn into_result<T>(value: RResult<T, PluginError>) -> Result<T, PluginError> {
    value.into_result()
}

/// A typed channel over an erased one, for code that dispatches from outside a plugin (the
/// host's own events, benchmarks).
///
/// # Safety
/// `inner` was resolved for `D`'s declaration (the host checks the mode and the layouts when it
/// resolves a channel for an [`EventDecl`]); the typed dispatch trusts them.
#[allow(unsafe_code, reason = "the contract is the caller's")]
pub unsafe fn typed_channel<D: Descriptor>(inner: EventChannelBox) -> Channel<D> {
    Channel {
        inner: Arc::new(inner),
        _descriptor: PhantomData,
    }
}

// `P: 'static` on the dispatching side: a listener is registered for `P` with `'static`
// lifetimes, so dispatching a `P<'a>` (same layout) would let it keep borrowed data.
impl<P: StableAbi + 'static> Channel<EmitEvent<P>> {
    pub fn emit(&self, payload: &P) -> Result<(), PluginError> {
        into_result(self.inner.emit(payload as *const P as *const ()))
    }
}

impl<P: StableAbi + 'static, R: StableAbi + 'static> Channel<BailEvent<P, R>> {
    pub fn bail(&self, payload: &P) -> Result<Option<R>, PluginError> {
        into_result(self.inner.bail(payload as *const P as *const ())).map(unerase_option::<R>)
    }
}

impl<P: StableAbi + Send + Sync + 'static> Channel<ParallelEvent<P>> {
    pub async fn parallel(&self, payload: RArc<P>) -> Result<(), PluginError> {
        into_result(self.inner.parallel(erase_arc(payload)).await)
    }
}

impl<P: StableAbi + Send + Sync + 'static, R: StableAbi + Send + 'static>
    Channel<SerialEvent<P, R>>
{
    pub async fn serial(&self, payload: RArc<P>) -> Result<Option<R>, PluginError> {
        into_result(self.inner.serial(erase_arc(payload)).await).map(unerase_option::<R>)
    }
}

impl<P, R> Channel<WaterfallEvent<P, R>>
where
    P: StableAbi + Send + Sync + 'static,
    R: StableAbi + Send + 'static,
{
    /// Runs the chain around `inner`, the innermost default.
    pub async fn waterfall<F, Fut>(&self, payload: RArc<P>, inner: F) -> Result<R, PluginError>
    where
        F: FnOnce(RArc<P>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
    {
        let inner = waterfall_inner::<P, R, F, Fut>(inner);
        outcome(self.inner.waterfall(erase_arc(payload), inner)).await
    }
}

impl Context {
    #[doc(hidden)]
    pub fn from_host(host: HostCtx) -> Self {
        Self {
            host: Arc::new(host),
            prepend: false,
        }
    }

    /// The fiber's id, unique for the life of the host process.
    pub fn fiber_id(&self) -> u64 {
        self.host.fiber_id()
    }

    /// The id of the config row this fiber was mounted from.
    pub fn row_id(&self) -> String {
        self.host.row_id().into_string()
    }

    /// False once the fiber started unloading; registrations then fail.
    pub fn is_active(&self) -> bool {
        self.host.is_active()
    }

    /// Logs through the host with the fiber's identity attached.
    pub fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, RStr::from_str(message));
    }

    /// A context whose listener registrations go first instead of last.
    pub fn prepend(&self) -> Self {
        Self {
            host: self.host.clone(),
            prepend: true,
        }
    }

    /// Provides `value` as service `name`. A second provider of a name in one realm fails.
    pub fn provide<S>(&self, name: &str, value: S) -> Result<(), PluginError>
    where
        S: StableAbi + Send + Sync + 'static,
    {
        into_result(
            self.host
                .provide(RStr::from_str(name), ErasedService::new(value)),
        )
    }

    /// Optional probe: the service if someone provides it now, checked against `S`.
    pub fn get<S: StableAbi + 'static>(
        &self,
        name: &str,
    ) -> Result<Option<Service<S>>, PluginError> {
        let found = into_result(
            self.host
                .service(RStr::from_str(name), LayoutRef::of::<S>()),
        )?;
        Ok(found.into_option().map(|service| Service {
            value: unerase_arc::<S>(service.value),
        }))
    }

    /// A service the plugin injects: present whenever `apply` runs.
    pub fn inject<S: StableAbi + 'static>(&self, name: &str) -> Result<Service<S>, PluginError> {
        self.get::<S>(name)?.ok_or_else(|| {
            PluginError::new(
                ErrorKind::Registration,
                format!("service `{name}` is not available"),
            )
        })
    }

    /// Resolves an event's channel once, for repeated dispatch.
    pub fn channel<D: Descriptor>(&self, event: &D) -> Result<Channel<D>, PluginError> {
        let inner = into_result(self.host.event(event.decl()))?;
        Ok(Channel {
            inner: Arc::new(inner),
            _descriptor: PhantomData,
        })
    }

    pub fn on_emit<P, F>(&self, event: &EmitEvent<P>, listener: F) -> Result<(), PluginError>
    where
        P: StableAbi + 'static,
        F: Fn(&P) + Send + Sync + 'static,
    {
        let erased = sync_listener::<P, (), _>(move |payload: &P| {
            listener(payload);
            None
        });
        into_result(self.host.on_sync(event.decl(), erased, self.prepend))
    }

    pub fn on_bail<P, R, F>(&self, event: &BailEvent<P, R>, listener: F) -> Result<(), PluginError>
    where
        P: StableAbi + 'static,
        R: StableAbi + 'static,
        F: Fn(&P) -> Option<R> + Send + Sync + 'static,
    {
        into_result(
            self.host
                .on_sync(event.decl(), sync_listener(listener), self.prepend),
        )
    }

    pub fn on_parallel<P, F, Fut>(
        &self,
        event: &ParallelEvent<P>,
        listener: F,
    ) -> Result<(), PluginError>
    where
        P: StableAbi + Send + Sync + 'static,
        F: Fn(RArc<P>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let erased = async_listener::<P, _, _>(move |payload| {
            let fut = listener(payload);
            async move {
                fut.await;
                None::<()>
            }
        });
        into_result(self.host.on_async(event.decl(), erased, self.prepend))
    }

    /// [`on_parallel`](Self::on_parallel) for a listener that can fail: its error reaches
    /// whoever dispatched (`parallel` answers every failure, named by listener), besides the
    /// host log.
    pub fn on_parallel_fallible<P, F, Fut>(
        &self,
        event: &ParallelEvent<P>,
        listener: F,
    ) -> Result<(), PluginError>
    where
        P: StableAbi + Send + Sync + 'static,
        F: Fn(RArc<P>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), PluginError>> + Send + 'static,
    {
        let erased = async_listener::<P, _, _>(listener);
        into_result(self.host.on_async(event.decl(), erased, self.prepend))
    }

    pub fn on_serial<P, R, F, Fut>(
        &self,
        event: &SerialEvent<P, R>,
        listener: F,
    ) -> Result<(), PluginError>
    where
        P: StableAbi + Send + Sync + 'static,
        R: StableAbi + Send + 'static,
        F: Fn(RArc<P>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<R>> + Send + 'static,
    {
        into_result(
            self.host
                .on_async(event.decl(), async_listener(listener), self.prepend),
        )
    }

    pub fn on_waterfall<P, R, F, Fut>(
        &self,
        event: &WaterfallEvent<P, R>,
        listener: F,
    ) -> Result<(), PluginError>
    where
        P: StableAbi + Send + Sync + 'static,
        R: StableAbi + Send + 'static,
        F: Fn(Next<P, R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
    {
        into_result(self.host.on_waterfall(
            event.decl(),
            waterfall_listener(listener),
            self.prepend,
        ))
    }

    pub fn emit<P: StableAbi + 'static>(
        &self,
        event: &EmitEvent<P>,
        payload: &P,
    ) -> Result<(), PluginError> {
        self.channel(event)?.emit(payload)
    }

    pub fn bail<P: StableAbi + 'static, R: StableAbi + 'static>(
        &self,
        event: &BailEvent<P, R>,
        payload: &P,
    ) -> Result<Option<R>, PluginError> {
        self.channel(event)?.bail(payload)
    }

    pub async fn parallel<P: StableAbi + Send + Sync + 'static>(
        &self,
        event: &ParallelEvent<P>,
        payload: RArc<P>,
    ) -> Result<(), PluginError> {
        self.channel(event)?.parallel(payload).await
    }

    pub async fn serial<P, R>(
        &self,
        event: &SerialEvent<P, R>,
        payload: RArc<P>,
    ) -> Result<Option<R>, PluginError>
    where
        P: StableAbi + Send + Sync + 'static,
        R: StableAbi + Send + 'static,
    {
        self.channel(event)?.serial(payload).await
    }

    pub async fn waterfall<P, R, F, Fut>(
        &self,
        event: &WaterfallEvent<P, R>,
        payload: RArc<P>,
        inner: F,
    ) -> Result<R, PluginError>
    where
        P: StableAbi + Send + Sync + 'static,
        R: StableAbi + Send + 'static,
        F: FnOnce(RArc<P>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
    {
        self.channel(event)?.waterfall(payload, inner).await
    }

    /// Registers an asynchronous disposer: it runs when the fiber unloads, and the unload
    /// completes only after it finished.
    pub fn effect<F, Fut>(&self, dispose: F) -> Result<(), PluginError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let disposer = Disposer_TO::from_value(
            AsyncDisposer {
                dispose: Some(dispose),
            },
            TD_Opaque,
        );
        into_result(self.host.effect(disposer))
    }

    /// Registers a synchronous disposer.
    pub fn on_dispose<F>(&self, dispose: F) -> Result<(), PluginError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.effect(move || {
            dispose();
            std::future::ready(())
        })
    }

    /// Runs `task` on the host runtime, owned by this fiber (aborted when it unloads).
    pub fn spawn<Fut>(&self, task: Fut) -> Result<(), PluginError>
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        let task = async move {
            if let Err(error) = contained(async move {
                task.await;
                Ok(())
            })
            .await
            {
                crate::logging::forward(
                    LogLevel::Error,
                    "task",
                    &format!("spawned task failed: {error}"),
                );
            }
        };
        into_result(self.host.spawn(task.into_ffi()))
    }

    /// Sleeps on the host's timer.
    pub fn sleep(&self, duration: Duration) -> FfiFuture<()> {
        let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        self.host.sleep(millis)
    }

    /// Runs `work` on the host's blocking pool and returns its value.
    pub async fn blocking<T, F>(&self, work: F) -> Result<T, PluginError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = Arc::new(std::sync::Mutex::new(None));
        let job = BlockingJob_TO::from_value(
            Job {
                work: Some(work),
                slot: slot.clone(),
            },
            TD_Opaque,
        );
        into_result(self.host.spawn_blocking(job).await)?;
        let value = slot.lock().ok().and_then(|mut slot| slot.take());
        value.ok_or_else(|| PluginError::new(ErrorKind::Plugin, "blocking job produced no value"))
    }

    /// Starts `work` on the host's blocking pool now and returns without waiting for it: for work
    /// whose end nobody awaits (it answers through a channel of its own, or has nothing to
    /// answer). A panic in it is contained and logged. A host shutting down may drop `work`
    /// unrun: whoever waits on its channel sees the sender dropped.
    pub fn start_blocking<F>(&self, work: F)
    where
        F: FnOnce() + Send + 'static,
    {
        let job = BlockingJob_TO::from_value(
            Job {
                work: Some(work),
                slot: Arc::new(std::sync::Mutex::new(None)),
            },
            TD_Opaque,
        );
        // The host hands the job to its pool when asked, not when the answer is first polled:
        // the answer can be dropped and the job still runs to its end.
        let running = self.host.spawn_blocking(job);
        let log = self.clone();
        // Without a task to hear the answer (a host shutting down), the job still runs; only
        // a panic in it would go unlogged.
        let _ = self.spawn(async move {
            if let RErr(error) = running.await {
                log.log(LogLevel::Error, &format!("blocking job failed: {error}"));
            }
        });
    }

    /// Resolves when the child fiber `fiber` (from [`mount`](Self::mount)) is active, or with
    /// its error once it failed. A child that waits for a service keeps this waiting: race it
    /// with [`sleep`](Self::sleep) for a bound.
    pub async fn settled(&self, fiber: u64) -> Result<(), PluginError> {
        into_result(self.host.settled(fiber).await)
    }

    /// Resolves once every row of the tree that can start has started: no fiber is loading or
    /// unloading and no reconcile is under way (a row waiting for a service no one provides
    /// stays PENDING and does not hold it). A surface waits for it before its first turn, so
    /// the model is offered every tool the tree registers. Race it with
    /// [`sleep`](Self::sleep) for a bound.
    pub async fn tree_settled(&self) -> Result<(), PluginError> {
        into_result(self.host.settled(crate::WHOLE_TREE).await)
    }

    /// Mounts a child plugin (`library` or `library/export`) owned by this fiber.
    pub fn mount(&self, plugin: &str, config: &impl Serialize) -> Result<u64, PluginError> {
        let config = serde_json::to_string(config)
            .map_err(|error| PluginError::plugin(format!("config of child `{plugin}`: {error}")))?;
        into_result(
            self.host
                .mount(RStr::from_str(plugin), RString::from(config)),
        )
    }

    /// Disposes child fiber `fiber` (from [`mount`](Self::mount)) and resolves once it is
    /// unloaded: its registrations are gone, so a new version may take its names. Refused for
    /// a fiber this one did not mount.
    pub async fn unmount(&self, fiber: u64) -> Result<(), PluginError> {
        into_result(self.host.unmount(fiber).await)
    }
}

struct AsyncDisposer<F> {
    dispose: Option<F>,
}

impl<F, Fut> Disposer for AsyncDisposer<F>
where
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn dispose(&mut self) -> FfiFuture<RResult<(), PluginError>> {
        let Some(dispose) = self.dispose.take() else {
            return async { ROk(()) }.into_ffi();
        };
        let started = contain(|| Ok(dispose()));
        async move {
            match started {
                Ok(fut) => contained(async move {
                    fut.await;
                    Ok(())
                })
                .await
                .into(),
                Err(error) => RErr(error),
            }
        }
        .into_ffi()
    }
}

struct Job<T, F> {
    work: Option<F>,
    slot: Arc<std::sync::Mutex<Option<T>>>,
}

impl<T: Send, F: FnOnce() -> T + Send> BlockingJob for Job<T, F> {
    fn run(&mut self) -> RResult<(), PluginError> {
        let Some(work) = self.work.take() else {
            return ROk(());
        };
        match contain(|| Ok(work())) {
            Ok(value) => {
                if let Ok(mut slot) = self.slot.lock() {
                    *slot = Some(value);
                }
                ROk(())
            }
            Err(error) => RErr(error),
        }
    }
}
