//! Typed event descriptors and the adapters between typed closures and the erased listener
//! objects the host stores.
//!
//! An event is declared once as a constant of one of five descriptor types; the type fixes the
//! dispatch mode, so dispatching an `EmitEvent` as a waterfall does not compile. The host checks
//! at registration that every party agrees on the mode and the payload and result layouts, which
//! is what makes the erasure below sound: a value erased for an event is only ever recovered as
//! the type that event declares.

#![allow(
    unsafe_code,
    reason = "type erasure at the ABI edge: four transmutes and one payload borrow"
)]

use std::future::Future;
use std::marker::PhantomData;

use abi_stable::StableAbi;
use abi_stable::pointer_trait::TransmuteElement;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RBox, RErr, RNone, ROk, ROption, RSome, RStr};
use async_ffi::{FfiFuture, FutureExt};

use crate::abi::{
    AsyncListener, AsyncListener_TO, DispatchMode, ErasedBox, EventDecl, LayoutRef, ListenerResult,
    PluginError, SyncListener, SyncListener_TO,
};
use crate::guard::{contain, guarded};

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
    // drops an R; the typed side transmutes back only to the type the event declares.
    unsafe { RBox::new(value).transmute_element::<()>() }
}

/// Recovers a boxed result of an event whose declared result type is `R`.
pub(crate) fn unerase_box<R>(value: ErasedBox) -> R {
    // SAFETY: the host only hands out results of the event this side registered or dispatched
    // for, whose layout it checked against `R`.
    let typed: RBox<R> = unsafe { value.transmute_element::<R>() };
    RBox::into_inner(typed)
}

pub(crate) fn erase_arc<P>(value: RArc<P>) -> RArc<()> {
    // SAFETY: as in `erase_box`; RArc keeps its vtable, so the last release drops a `P`.
    unsafe { value.transmute_element::<()>() }
}

pub(crate) fn unerase_arc<P>(value: RArc<()>) -> RArc<P> {
    // SAFETY: the payload layout of the event was checked against `P` at registration.
    unsafe { value.transmute_element::<P>() }
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
    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "the pointer comes from the host's dispatcher, which borrowed a layout-checked P"
    )]
    fn call(&self, payload: *const ()) -> ListenerResult {
        // SAFETY: the dispatcher borrows a live `P` (the event's payload type, layout-checked)
        // for the duration of this call.
        let payload = unsafe { &*payload.cast::<P>() };
        match contain(|| Ok((self.f)(payload))) {
            Ok(Some(value)) => ROk(RSome(erase_box(value))),
            Ok(None) => ROk(RNone),
            Err(error) => RErr(error),
        }
    }
}

/// What an async listener's output becomes when it crosses back.
pub(crate) trait IntoListenerResult {
    fn into_listener_result(self) -> ListenerResult;
}

/// A serial listener's answer: `Some` stops the dispatch.
impl<R: Send + 'static> IntoListenerResult for Option<R> {
    fn into_listener_result(self) -> ListenerResult {
        match self {
            Some(value) => ROk(RSome(erase_box(value))),
            None => ROk(RNone),
        }
    }
}

/// A fallible parallel listener's outcome.
impl IntoListenerResult for Result<(), PluginError> {
    fn into_listener_result(self) -> ListenerResult {
        match self {
            Ok(()) => ROk(RNone),
            Err(error) => RErr(error),
        }
    }
}

/// An async listener (`parallel` or `serial`) built from a closure returning a future.
pub(crate) struct AsyncFn<P, F> {
    f: F,
    _types: PhantomData<fn(RArc<P>)>,
}

pub(crate) fn async_listener<P, F, Fut>(f: F) -> AsyncListener_TO<'static, RBox<()>>
where
    P: Send + Sync + 'static,
    F: Fn(RArc<P>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoListenerResult,
{
    AsyncListener_TO::from_value(
        AsyncFn::<P, F> {
            f,
            _types: PhantomData,
        },
        TD_Opaque,
    )
}

impl<P, F, Fut> AsyncListener for AsyncFn<P, F>
where
    P: Send + Sync + 'static,
    F: Fn(RArc<P>) -> Fut + Send + Sync,
    Fut: Future + Send + 'static,
    Fut::Output: IntoListenerResult,
{
    fn call(&self, payload: RArc<()>) -> FfiFuture<ListenerResult> {
        let payload = unerase_arc::<P>(payload);
        match contain(|| Ok((self.f)(payload))) {
            Ok(future) => async move {
                match guarded(future, Ok).await {
                    Ok(output) => output.into_listener_result(),
                    Err(panic) => RErr(panic),
                }
            }
            .into_ffi(),
            Err(panic) => std::future::ready(RErr(panic)).into_ffi(),
        }
    }
}

/// Converts the result of an erased serial or bail dispatch back to `Option<R>`.
pub(crate) fn unerase_option<R>(value: ROption<ErasedBox>) -> Option<R> {
    value.into_option().map(unerase_box::<R>)
}
