//! The waterfall mode across the boundary: the chain a dispatch runs, the continuation each
//! listener receives ([`Next`]), and the typed adapters for listeners and the innermost default.
//!
//! The host owns the chain (its listener snapshot, the payload, one claim flag per listener and
//! the scratch memory the steps' futures are placed in) and hands out counted references to it
//! ([`NextHandle`]). Driving the chain happens on the caller's side: running a `Next` asks the
//! host for the next step (the future of the first live listener after the caller, or of the
//! innermost default), awaits it in place, and when that step fails before running its own
//! `next`, asks the host to report the failure and go on with the one after it. So a level of
//! the chain costs one listener future, placed in the chain's scratch memory, and no boxes of
//! its own.

#![allow(
    unsafe_code,
    reason = "the chain reference is a counted raw pointer with a host-supplied vtable"
)]

use std::future::Future;
use std::marker::PhantomData;

use abi_stable::StableAbi;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RBox, RErr, ROk, RResult};

use crate::abi::{
    BoxedError, ErrorKind, PluginError, WaterfallInner, WaterfallInner_TO, WaterfallListener,
    WaterfallListener_TO,
};
use crate::events::unerase_arc;
use crate::scratch::Scratch;
use crate::started::DispatchFuture;
use crate::value::{ErasedValue, unerase_value};

/// One step of a running chain: the listener at `index` (or, when `index` is the number of
/// listeners, the innermost default) and its future.
#[repr(C)]
#[derive(StableAbi)]
pub struct WaterfallStep {
    pub index: usize,
    pub future: DispatchFuture<ErasedValue>,
}

/// What the host does for a chain; every function gets the chain pointer of a live reference.
#[repr(C)]
#[derive(StableAbi)]
pub struct ChainVTable {
    /// Claims the continuation of the listener at `after` (nothing, for [`NextHandle::START`]) and
    /// starts the first live listener after it, or the innermost default. A second claim of the
    /// same continuation is an error.
    pub next:
        unsafe extern "C" fn(chain: *const (), after: usize) -> RResult<WaterfallStep, BoxedError>,
    /// The step at `index` failed with `error`: the host reports it and, when that listener had
    /// not run its continuation, starts the one after it; otherwise the error ends the chain.
    pub failed: unsafe extern "C" fn(
        chain: *const (),
        index: usize,
        error: BoxedError,
    ) -> RResult<WaterfallStep, BoxedError>,
    pub release: unsafe extern "C" fn(chain: *const ()),
}

/// A counted reference to a running chain, positioned after the listener it was handed to.
#[repr(C)]
#[derive(StableAbi)]
pub struct NextHandle {
    chain: *const (),
    after: usize,
    vtable: &'static ChainVTable,
}

// SAFETY: the host's chain is `Sync` (its mutable parts are atomics) and counted atomically.
unsafe impl Send for NextHandle {}
unsafe impl Sync for NextHandle {}

impl NextHandle {
    /// The position of a handle that starts the chain rather than continuing a listener.
    pub const START: usize = usize::MAX;

    /// Takes over one counted reference to `chain`.
    ///
    /// # Safety
    /// `chain` carries a reference the caller gives up, and `vtable` belongs to it.
    pub unsafe fn adopt(chain: *const (), after: usize, vtable: &'static ChainVTable) -> Self {
        Self {
            chain,
            after,
            vtable,
        }
    }

    fn next_step(&self) -> RResult<WaterfallStep, BoxedError> {
        // SAFETY: `self` holds a reference, so the chain is alive.
        unsafe { (self.vtable.next)(self.chain, self.after) }
    }

    fn failed(&self, index: usize, error: BoxedError) -> RResult<WaterfallStep, BoxedError> {
        // SAFETY: as in `next_step`.
        unsafe { (self.vtable.failed)(self.chain, index, error) }
    }
}

impl Drop for NextHandle {
    fn drop(&mut self) {
        // SAFETY: gives up the reference this handle holds, exactly once.
        unsafe { (self.vtable.release)(self.chain) }
    }
}

/// A step being awaited and the chain reference that keeps its scratch memory alive. Fields drop
/// in declaration order: the step's future goes first.
struct Running {
    step: WaterfallStep,
    chain: NextHandle,
}

/// Runs the chain from `chain`'s position inward and returns the erased result.
pub(crate) async fn drive(chain: NextHandle) -> Result<ErasedValue, PluginError> {
    let first = chain.next_step().into_result().map_err(RBox::into_inner)?;
    let mut running = Running { step: first, chain };
    loop {
        match (&mut running.step.future).await {
            ROk(value) => return Ok(value),
            RErr(error) => {
                running.step = running
                    .chain
                    .failed(running.step.index, error)
                    .into_result()
                    .map_err(RBox::into_inner)?;
            }
        }
    }
}

/// The continuation handed to a waterfall listener. Consumed by [`Next::run`], so a listener
/// cannot run the rest of the chain twice; the host refuses a second claim as well.
pub struct Next<R> {
    handle: NextHandle,
    _types: PhantomData<fn() -> R>,
}

impl<R: 'static> Next<R> {
    /// Runs the listeners after this one and the innermost default, returning their result.
    pub async fn run(self) -> Result<R, PluginError> {
        drive(self.handle).await.map(unerase_value::<R>)
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
    fn call(
        &self,
        payload: RArc<()>,
        next: NextHandle,
        scratch: Scratch,
    ) -> DispatchFuture<ErasedValue> {
        let payload = unerase_arc::<P>(payload);
        let next = Next {
            handle: next,
            _types: PhantomData,
        };
        DispatchFuture::make(scratch, || (self.f)(payload, next))
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
    fn run(&self, payload: RArc<()>, scratch: Scratch) -> DispatchFuture<ErasedValue> {
        let Some(f) = self.f.lock().ok().and_then(|mut slot| slot.take()) else {
            let error = PluginError::new(
                ErrorKind::Dispatch,
                "the innermost default of a waterfall ran twice",
            );
            return DispatchFuture::ready(RErr(RBox::new(error)), scratch);
        };
        let payload = unerase_arc::<P>(payload);
        DispatchFuture::make(scratch, || f(payload))
    }
}
