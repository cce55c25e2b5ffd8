//! Typed event descriptors and the adapters between typed closures and the erased listener
//! objects the host stores.
//!
//! An event is declared once as a constant of one of five descriptor types; the type fixes the
//! dispatch mode, so dispatching an `EmitEvent` as a waterfall does not compile. The host checks
//! at registration that every party agrees on the mode and the payload and result layouts.

use std::future::Future;
use std::marker::PhantomData;

use abi_stable::StableAbi;
use abi_stable::pointer_trait::TransmuteElement;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RBox, RErr, RNone, ROk, ROption, RResult, RSome, RStr};
use async_ffi::{FfiFuture, FutureExt};

use crate::abi::{
    AsyncListener, AsyncListener_TO, DispatchMode, ErasedBox, ErrorKind, EventDecl, LayoutRef,
    ListenerResult, NextBox, NextStep, NextStep_TO, PluginError, SyncListener, SyncListener_TO,
    WaterfallInner, WaterfallInner_TO, WaterfallListener, WaterfallListener_TO,
};
use crate::guard::{Contained, contain};

macro_rules! descriptor {
    ($(#[$doc:meta])* $name:ident<$($param:ident),*>, $mode:expr, $out:ty) => {
        $(#[$doc])*
        pub struct $name<$($param),*> {
            name: &'static str,
            _types: PhantomData<fn($($param),*)>,
        }

        impl<$($param: StableAbi),*> $name<$($param),*> {
            pub const fn new(name: &'static str) -> Self {
                Self { name, _types: PhantomData }
            }
            pub const fn name(&self) -> &'static str {
                self.name
            }
            pub fn decl(&self) -> EventDecl {
                EventDecl {
                    name: RStr::from_str(self.name),
                    mode: $mode,
                    payload: LayoutRef::of::<P>(),
                    output: LayoutRef::of::<$out>(),
                }
            }
        }
    };
}

descriptor!(
    /// Synchronous broadcast in registration order; listeners get `&P` and return nothing.
    EmitEvent<P>, DispatchMode::Emit, ()
);
descriptor!(
    /// Synchronous serial dispatch: the first listener returning `Some` wins and stops it.
    BailEvent<P, R>, DispatchMode::Bail, R
);
descriptor!(
    /// All listeners at once; the dispatcher awaits every one and aggregates failures.
    ParallelEvent<P>, DispatchMode::Parallel, ()
);
descriptor!(
    /// Asynchronous, in order; the first listener returning `Some` wins and stops it.
    SerialEvent<P, R>, DispatchMode::Serial, R
);
descriptor!(
    /// Around-middleware: each listener may call `next` once; not calling it short-circuits.
    WaterfallEvent<P, R>, DispatchMode::Waterfall, R
);

/// Erases a boxed result for the host.
pub(crate) fn erase_box<R>(value: R) -> ErasedBox {
    // SAFETY: RBox<R> -> RBox<()> keeps the vtable built for R, so dropping the erased box still
    // drops an R; the typed side transmutes back only after the host checked the layouts.
    #[allow(unsafe_code, reason = "type erasure at the ABI edge")]
    unsafe {
        RBox::new(value).transmute_element::<()>()
    }
}

/// Recovers a boxed result whose layout the host has checked against `R`.
pub(crate) fn unerase_box<R>(value: ErasedBox) -> R {
    #[allow(unsafe_code, reason = "type erasure at the ABI edge")]
    // SAFETY: the host only hands out results whose declared layout matched `R`.
    let typed: RBox<R> = unsafe { value.transmute_element::<R>() };
    RBox::into_inner(typed)
}

pub(crate) fn erase_arc<P>(value: RArc<P>) -> RArc<()> {
    #[allow(unsafe_code, reason = "type erasure at the ABI edge")]
    // SAFETY: see erase_box; RArc keeps its vtable.
    unsafe {
        value.transmute_element::<()>()
    }
}

pub(crate) fn unerase_arc<P>(value: RArc<()>) -> RArc<P> {
    #[allow(unsafe_code, reason = "type erasure at the ABI edge")]
    // SAFETY: the payload layout was checked at registration.
    unsafe {
        value.transmute_element::<P>()
    }
}

/// A sync listener (`emit` or `bail`) built from a closure.
pub(crate) struct SyncFn<P, R, F> {
    f: F,
    _types: PhantomData<fn(&P) -> R>,
}

pub(crate) fn sync_listener<P, R, F>(f: F) -> SyncListener_TO<'static, RBox<()>>
where
    P: 'static,
    R: 'static,
    F: Fn(&P) -> Option<R> + Send + Sync + 'static,
{
    SyncListener_TO::from_value(
        SyncFn {
            f,
            _types: PhantomData,
        },
        TD_Opaque,
    )
}

impl<P, R, F> SyncListener for SyncFn<P, R, F>
where
    F: Fn(&P) -> Option<R> + Send + Sync,
{
    fn call(&self, payload: *const ()) -> ListenerResult {
        #[allow(
            unsafe_code,
            reason = "the host passes a pointer to a layout-checked P"
        )]
        // SAFETY: the dispatcher borrows a live `P` for the duration of this call.
        let payload = unsafe { &*(payload as *const P) };
        match contain(|| Ok((self.f)(payload))) {
            Ok(Some(value)) => ROk(RSome(erase_box(value))),
            Ok(None) => ROk(RNone),
            Err(error) => RErr(error),
        }
    }
}

/// An async listener (`parallel` or `serial`) built from a closure returning a future.
pub(crate) struct AsyncFn<P, R, F> {
    f: F,
    _types: PhantomData<fn(RArc<P>) -> R>,
}

/// What an async listener's future may end with: an optional answer (serial), or success or a
/// failure to report (a fallible parallel listener).
pub(crate) trait ListenerOutput {
    fn into_listener_result(self) -> ListenerResult;
}

impl<R: Send + 'static> ListenerOutput for Option<R> {
    fn into_listener_result(self) -> ListenerResult {
        match self {
            Some(value) => ROk(RSome(erase_box(value))),
            None => ROk(RNone),
        }
    }
}

impl ListenerOutput for Result<(), PluginError> {
    fn into_listener_result(self) -> ListenerResult {
        match self {
            Ok(()) => ROk(RNone),
            Err(error) => RErr(error),
        }
    }
}

pub(crate) fn async_listener<P, F, Fut>(f: F) -> AsyncListener_TO<'static, RBox<()>>
where
    P: Send + Sync + 'static,
    F: Fn(RArc<P>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: ListenerOutput,
{
    AsyncListener_TO::from_value(
        AsyncFn::<P, (), F> {
            f,
            _types: PhantomData,
        },
        TD_Opaque,
    )
}

impl<P, F, Fut> AsyncListener for AsyncFn<P, (), F>
where
    P: Send + Sync + 'static,
    F: Fn(RArc<P>) -> Fut + Send + Sync,
    Fut: Future + Send + 'static,
    Fut::Output: ListenerOutput,
{
    fn call(&self, payload: RArc<()>) -> FfiFuture<ListenerResult> {
        let payload = unerase_arc::<P>(payload);
        match contain(|| Ok((self.f)(payload))) {
            Ok(fut) => ListenerFuture { inner: Some(fut) }.into_ffi(),
            Err(error) => std::future::ready(RErr(error)).into_ffi(),
        }
    }
}

/// An async listener's future, polled inside `catch_unwind`, its output mapped to the erased
/// result: one state machine per call instead of three nested ones (this is the hot path of
/// the serial and parallel modes).
struct ListenerFuture<Fut> {
    inner: Option<Fut>,
}

impl<Fut> Future for ListenerFuture<Fut>
where
    Fut: Future,
    Fut::Output: ListenerOutput,
{
    type Output = ListenerResult;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<ListenerResult> {
        use std::task::Poll;
        #[allow(unsafe_code, reason = "structural pin projection to the only field")]
        // SAFETY: `inner` is never moved out; it is only dropped in place (set to None), and
        // `ListenerFuture` has no Drop or Unpin impl of its own.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(fut) = this.inner.as_mut() else {
            return Poll::Ready(RErr(PluginError::new(
                ErrorKind::Dispatch,
                "listener future polled after completion",
            )));
        };
        #[allow(unsafe_code, reason = "structural pin projection")]
        // SAFETY: `fut` lives inside the pinned `ListenerFuture` and is not moved.
        let fut = unsafe { std::pin::Pin::new_unchecked(fut) };
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx)));
        let output = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(output)) => output.into_listener_result(),
            Err(payload) => RErr(PluginError::from_panic(payload.as_ref())),
        };
        this.inner = None;
        Poll::Ready(output)
    }
}

/// The continuation handed to a waterfall listener. Consumed by [`Next::run`], so a listener
/// cannot run the rest of the chain twice; the host refuses a second run of the erased object
/// as well.
pub struct Next<R> {
    inner: NextBox,
    _types: PhantomData<fn() -> R>,
}

impl<R: 'static> Next<R> {
    /// Runs the listeners after this one and the innermost default, returning their result.
    pub async fn run(self) -> Result<R, PluginError> {
        match self.inner.run().await {
            ROk(value) => Ok(unerase_box::<R>(value)),
            RErr(error) => Err(error),
        }
    }
}

pub(crate) struct WaterfallFn<P, R, F> {
    f: F,
    _types: PhantomData<fn(RArc<P>) -> R>,
}

pub(crate) fn waterfall_listener<P, R, F, Fut>(f: F) -> WaterfallListener_TO<'static, RBox<()>>
where
    P: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(RArc<P>, Next<R>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
{
    WaterfallListener_TO::from_value(
        WaterfallFn {
            f,
            _types: PhantomData,
        },
        TD_Opaque,
    )
}

impl<P, R, F, Fut> WaterfallListener for WaterfallFn<P, R, F>
where
    P: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(RArc<P>, Next<R>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
{
    fn call(&self, payload: RArc<()>, next: NextBox) -> FfiFuture<RResult<ErasedBox, PluginError>> {
        let payload = unerase_arc::<P>(payload);
        let next = Next {
            inner: next,
            _types: PhantomData,
        };
        match contain(|| Ok((self.f)(payload, next))) {
            Ok(fut) => BoxingFuture { inner: Some(fut) }.into_ffi(),
            Err(error) => std::future::ready(RErr(error)).into_ffi(),
        }
    }
}

/// A waterfall step's future, polled inside `catch_unwind`, its value boxed for the host: one
/// state machine per call instead of three nested ones.
struct BoxingFuture<Fut> {
    inner: Option<Fut>,
}

impl<R, Fut> Future for BoxingFuture<Fut>
where
    Fut: Future<Output = Result<R, PluginError>>,
{
    type Output = RResult<ErasedBox, PluginError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        #[allow(unsafe_code, reason = "structural pin projection to the only field")]
        // SAFETY: as in `ListenerFuture`: never moved, only dropped in place.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(fut) = this.inner.as_mut() else {
            return Poll::Ready(RErr(PluginError::new(
                ErrorKind::Dispatch,
                "waterfall future polled after completion",
            )));
        };
        #[allow(unsafe_code, reason = "structural pin projection")]
        // SAFETY: `fut` lives inside the pinned `BoxingFuture` and is not moved.
        let fut = unsafe { std::pin::Pin::new_unchecked(fut) };
        let output = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Ok(value))) => ROk(erase_box(value)),
            Ok(Poll::Ready(Err(error))) => RErr(error),
            Err(payload) => RErr(PluginError::from_panic(payload.as_ref())),
        };
        this.inner = None;
        Poll::Ready(output)
    }
}

/// The innermost default of a waterfall dispatch, built from the dispatcher's closure.
pub(crate) struct InnerFn<P, R, F> {
    f: std::sync::Mutex<Option<F>>,
    _types: PhantomData<fn(RArc<P>) -> R>,
}

pub(crate) fn waterfall_inner<P, R, F, Fut>(f: F) -> WaterfallInner_TO<'static, RBox<()>>
where
    P: Send + Sync + 'static,
    R: Send + 'static,
    F: FnOnce(RArc<P>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
{
    WaterfallInner_TO::from_value(
        InnerFn {
            f: std::sync::Mutex::new(Some(f)),
            _types: PhantomData,
        },
        TD_Opaque,
    )
}

impl<P, R, F, Fut> WaterfallInner for InnerFn<P, R, F>
where
    P: Send + Sync + 'static,
    R: Send + 'static,
    F: FnOnce(RArc<P>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
{
    fn run(&self, payload: RArc<()>) -> FfiFuture<RResult<ErasedBox, PluginError>> {
        let payload = unerase_arc::<P>(payload);
        let f = self.f.lock().ok().and_then(|mut slot| slot.take());
        async move {
            let Some(f) = f else {
                return RErr(PluginError::new(
                    ErrorKind::Dispatch,
                    "the innermost default of a waterfall ran twice",
                ));
            };
            let result = match contain(|| Ok(f(payload))) {
                Ok(fut) => Contained::new(fut).await.map(erase_box),
                Err(error) => Err(error),
            };
            RResult::from(result)
        }
        .into_ffi()
    }
}

/// Host side helper: a [`NextStep`] object from a closure (used by the host's dispatcher).
pub fn next_step<F>(f: F) -> NextBox
where
    F: Fn() -> FfiFuture<RResult<ErasedBox, PluginError>> + Send + Sync + 'static,
{
    NextStep_TO::from_value(NextFn(f), TD_Opaque)
}

struct NextFn<F>(F);

impl<F> NextStep for NextFn<F>
where
    F: Fn() -> FfiFuture<RResult<ErasedBox, PluginError>> + Send + Sync,
{
    fn run(&self) -> FfiFuture<RResult<ErasedBox, PluginError>> {
        (self.0)()
    }
}

/// Converts the result of an erased serial or bail dispatch back to `Option<R>`.
pub(crate) fn unerase_option<R>(value: ROption<ErasedBox>) -> Option<R> {
    value.into_option().map(unerase_box::<R>)
}
