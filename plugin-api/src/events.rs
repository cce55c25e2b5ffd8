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
use abi_stable::std_types::{RArc, RBox, RErr, RNone, ROk, ROption, RSome, RStr};

use crate::abi::{
    AsyncListener, AsyncListener_TO, DispatchMode, ErasedBox, EventDecl, LayoutRef, ListenerResult,
    SyncListener, SyncListener_TO,
};
use crate::guard::contain;
use crate::scratch::Scratch;
use crate::started::{DispatchFuture, IntoDispatch, PollContext, Started};

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
pub(crate) struct AsyncFn<P, F> {
    f: F,
    _types: PhantomData<fn(RArc<P>)>,
}

pub(crate) fn async_listener<P, F, Fut>(f: F) -> AsyncListener_TO<'static, RBox<()>>
where
    P: Send + Sync + 'static,
    F: Fn(RArc<P>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoDispatch<ROption<ErasedBox>>,
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
    Fut::Output: IntoDispatch<ROption<ErasedBox>>,
{
    fn call(
        &self,
        payload: RArc<()>,
        scratch: Scratch,
        cx: PollContext<'_>,
    ) -> Started<ROption<ErasedBox>> {
        let payload = unerase_arc::<P>(payload);
        DispatchFuture::start(scratch, cx, || (self.f)(payload))
    }
}

/// Converts the result of an erased serial or bail dispatch back to `Option<R>`.
pub(crate) fn unerase_option<R>(value: ROption<ErasedBox>) -> Option<R> {
    value.into_option().map(unerase_box::<R>)
}
