//! The waterfall mode across the boundary: the links of the chain a dispatch runs, the
//! continuation each listener receives ([`Next`]), and the typed adapters for listeners and the
//! innermost default.
//!
//! The host owns the chain: its listener snapshot, the payload, and one [`Link`] per level, in
//! memory that does not move while the chain runs. A [`NextHandle`] is a counted reference to a
//! level's link, one word wide. Driving happens on the caller's side: running a `Next` asks the
//! host to start the next step (the first live listener after the caller, or the innermost
//! default), whose future the listener library builds in that step's link, polls it there and
//! takes its outcome from memory the driver owns; when the step fails before running its own
//! `next`, the driver asks the host to report it and go on with the one after it.
//!
//! Everything crosses by pointer. The first version passed the payload `RArc`, a three-word
//! handle, a three-word future and a seven-word poll result by value at every level: the copies
//! stalled on store forwarding, and the `RArc` clone and drop cost two atomics and two calls
//! through its vtable per level. A listener reads the payload through its `Next` instead.

#![allow(
    unsafe_code,
    reason = "the chain's links are host memory reached through counted raw pointers"
)]

use std::cell::UnsafeCell;
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use abi_stable::StableAbi;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RBox, RErr, ROk, RResult};
use async_ffi::{ContextExt, FfiContext};

use crate::abi::{
    BoxedError, ErrorKind, PluginError, WaterfallInner, WaterfallInner_TO, WaterfallListener,
    WaterfallListener_TO,
};
use crate::scratch::Scratch;
use crate::started::{Placed, drop_boxed, place, poll_in_place};

/// A step's future, built in its link's scratch memory when it fits. Polling it writes the
/// step's outcome, an `RResult<R, BoxedError>`, to `out` and answers true once it is done.
#[repr(C)]
#[derive(StableAbi)]
pub struct StepFuture {
    fut: *mut (),
    poll_fn: unsafe extern "C" fn(fut: *mut (), cx: *mut FfiContext, out: *mut ()) -> bool,
    drop_fn: unsafe extern "C" fn(fut: *mut ()),
}

impl StepFuture {
    fn make<R, F, M>(scratch: &Scratch, make: M) -> Self
    where
        R: 'static,
        M: FnOnce() -> F,
        F: Future<Output = Result<R, PluginError>> + Send + 'static,
    {
        match place(scratch, make) {
            Ok(Placed { fut, drop_fn }) => Self {
                fut,
                poll_fn: poll_step::<F, R>,
                drop_fn,
            },
            Err(panic) => Self::failed::<R>(panic),
        }
    }

    /// A step that fails with `error`, boxed rather than placed: the code that panicked may
    /// already have handed a `next` to another thread, whose step may be reserving from the same
    /// scratch memory now.
    fn failed<R: 'static>(error: PluginError) -> Self {
        type Failed<R> = std::future::Ready<Result<R, PluginError>>;
        let fut = Box::new(std::future::ready(Err::<R, _>(error)));
        Self {
            fut: Box::into_raw(fut).cast(),
            poll_fn: poll_step::<Failed<R>, R>,
            drop_fn: drop_boxed::<Failed<R>>,
        }
    }
}

unsafe extern "C" fn poll_step<F, R>(fut: *mut (), cx: *mut FfiContext<'_>, out: *mut ()) -> bool
where
    F: Future<Output = Result<R, PluginError>>,
{
    // SAFETY: `fut` points to the `F` built by `StepFuture::make`, which never moves it; `cx` is
    // the live context of the poll that called us.
    let outcome: RResult<R, BoxedError> = match unsafe { poll_in_place::<F>(fut, cx) } {
        Poll::Pending => return false,
        Poll::Ready(Ok(Ok(value))) => ROk(value),
        Poll::Ready(Ok(Err(error)) | Err(error)) => RErr(RBox::new(error)),
    };
    // SAFETY: the driver passes room for its step's outcome, of the type the event declares.
    unsafe { out.cast::<RResult<R, BoxedError>>().write(outcome) };
    true
}

/// One level of a running chain, in host memory: what a listener's `next` refers to, and where
/// that listener's future lives while it runs.
#[repr(C)]
#[derive(StableAbi)]
pub struct Link {
    vtable: &'static ChainVTable,
    /// The dispatch's payload (an erased `RArc<P>`), alive as long as the chain.
    payload: *const RArc<()>,
    /// The memory this level's future is built in.
    scratch: Scratch,
    /// This level's future, from the call that starts the step until its driver drops it.
    step: UnsafeCell<MaybeUninit<StepFuture>>,
}

impl Link {
    /// # Safety
    /// `payload` and `scratch` stay valid while any reference to the link's chain is alive, and
    /// the steps started in this link reserve from `scratch` one at a time.
    pub unsafe fn new(
        vtable: &'static ChainVTable,
        payload: *const RArc<()>,
        scratch: Scratch,
    ) -> Self {
        Self {
            vtable,
            payload,
            scratch,
            step: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Builds this level's future: the one thing the call that starts the step does.
    fn start_step<R, F, M>(&self, make: M)
    where
        R: 'static,
        M: FnOnce() -> F,
        F: Future<Output = Result<R, PluginError>> + Send + 'static,
    {
        self.set_step(StepFuture::make(&self.scratch, make));
    }

    fn set_step(&self, step: StepFuture) {
        // SAFETY: each step is started once per chain, by the one claim that reaches it, and
        // its driver touches the slot only after the call that starts it returned.
        unsafe { (*self.step.get()).write(step) };
    }

    /// # Safety
    /// The step was started and not dropped; `out` has room for its `RResult<R, BoxedError>`.
    unsafe fn poll_step(&self, cx: &mut Context<'_>, out: *mut ()) -> Poll<()> {
        // SAFETY: per the contract, the slot holds the live future.
        let step = unsafe { (*self.step.get()).assume_init_ref() };
        // SAFETY: `poll_fn` was built for the future behind `fut`.
        let done = cx.with_ffi_context(|cx| unsafe { (step.poll_fn)(step.fut, cx, out) });
        if done { Poll::Ready(()) } else { Poll::Pending }
    }

    /// # Safety
    /// The step was started and not dropped yet; it is not polled again.
    unsafe fn drop_step(&self) {
        // SAFETY: per the contract.
        let step = unsafe { (*self.step.get()).assume_init_ref() };
        // SAFETY: `drop_fn` matches how `fut` was built, and runs once.
        unsafe { (step.drop_fn)(step.fut) }
    }
}

/// What the host does for a chain. Every function gets a link of a live reference; one that
/// answers a link answers null when it failed, with the failure written to `error`.
#[repr(C)]
#[derive(StableAbi)]
pub struct ChainVTable {
    /// Claims `link`'s continuation and starts the first live listener after it, or the
    /// innermost default; answers the started step's link. A second claim of the same
    /// continuation is an error.
    pub next:
        unsafe extern "C" fn(link: *const Link, error: *mut MaybeUninit<BoxedError>) -> *const Link,
    /// The step in `step` failed with `failure` (its future is dropped): the host reports it
    /// and, when that listener had not run its continuation, starts the one after it;
    /// otherwise the failure ends the chain.
    pub failed: unsafe extern "C" fn(
        step: *const Link,
        failure: BoxedError,
        error: *mut MaybeUninit<BoxedError>,
    ) -> *const Link,
    pub release: unsafe extern "C" fn(link: *const Link),
}

/// A counted reference to a running chain, positioned at the link of the listener it was
/// handed to (or at the chain's start).
#[repr(C)]
#[derive(StableAbi)]
pub struct NextHandle {
    link: NonNull<Link>,
}

// SAFETY: the host's chain is `Sync` (what changes while it runs are atomics and step slots,
// each used by one party at a time) and counted atomically.
unsafe impl Send for NextHandle {}
unsafe impl Sync for NextHandle {}

impl NextHandle {
    /// Takes over one counted reference to the chain `link` belongs to.
    ///
    /// # Safety
    /// `link` is a live link of a chain, and carries a reference the caller gives up.
    pub unsafe fn adopt(link: NonNull<Link>) -> Self {
        Self { link }
    }

    fn link(&self) -> &Link {
        // SAFETY: `self` holds a reference, so the chain and its links are alive.
        unsafe { self.link.as_ref() }
    }

    fn start_next(&self) -> Result<NonNull<Link>, PluginError> {
        let mut error = MaybeUninit::uninit();
        // SAFETY: the link belongs to a live reference. The pointer passed is the one the host
        // made, which reaches the whole record it keeps the link in (a `&Link` would not).
        let step = unsafe { (self.link().vtable.next)(self.link.as_ptr(), &mut error) };
        // SAFETY: the host wrote the failure when it answered null.
        unsafe { answered(step, error) }
    }

    fn failed(
        &self,
        step: NonNull<Link>,
        failure: BoxedError,
    ) -> Result<NonNull<Link>, PluginError> {
        let mut error = MaybeUninit::uninit();
        // SAFETY: as in `start_next`; `step` is a link of the same chain.
        let next = unsafe { (self.link().vtable.failed)(step.as_ptr(), failure, &mut error) };
        // SAFETY: as in `start_next`.
        unsafe { answered(next, error) }
    }
}

/// The link a chain function answered, or the failure it wrote instead.
///
/// # Safety
/// When `step` is null, `error` was written.
unsafe fn answered(
    step: *const Link,
    error: MaybeUninit<BoxedError>,
) -> Result<NonNull<Link>, PluginError> {
    match NonNull::new(step.cast_mut()) {
        Some(step) => Ok(step),
        // SAFETY: per the contract.
        None => Err(RBox::into_inner(unsafe { error.assume_init() })),
    }
}

impl Drop for NextHandle {
    fn drop(&mut self) {
        // SAFETY: gives up the reference this handle holds, exactly once, through the pointer
        // the host made (see `start_next`).
        unsafe { (self.link().vtable.release)(self.link.as_ptr()) }
    }
}

/// A started step whose future is alive; dropping this drops the future, in place. It lives in
/// the driver beside the handle that keeps the chain alive, and is dropped first: a driver that
/// is never dropped (forgotten) keeps the chain, and the memory the step lives in, for good.
struct LiveStep(NonNull<Link>);

// SAFETY: the step's future was built from a `Send` future, and the link it lives in is only
// polled and dropped through the `LiveStep` that owns it.
unsafe impl Send for LiveStep {}
unsafe impl Sync for LiveStep {}

impl LiveStep {
    fn poll<R>(
        &self,
        cx: &mut Context<'_>,
        out: &mut MaybeUninit<RResult<R, BoxedError>>,
    ) -> Poll<()> {
        // SAFETY: the step is live while `self` is; `out` has room for its outcome, of the type
        // the event declares.
        unsafe { self.0.as_ref().poll_step(cx, out.as_mut_ptr().cast()) }
    }
}

impl Drop for LiveStep {
    fn drop(&mut self) {
        // SAFETY: the step was started and is dropped once, here; its chain is kept alive by
        // the handle of the driver that owns this.
        unsafe { self.0.as_ref().drop_step() }
    }
}

/// Runs the chain from `handle`'s position inward and returns its result. The handle is owned,
/// so the chain outlives every step this driver keeps (locals drop before parameters).
pub(crate) async fn drive<R: 'static>(handle: NextHandle) -> Result<R, PluginError> {
    let mut step = LiveStep(handle.start_next()?);
    loop {
        let mut out = MaybeUninit::<RResult<R, BoxedError>>::uninit();
        poll_fn(|cx| step.poll(cx, &mut out)).await;
        let link = step.0;
        drop(step);
        // SAFETY: a step that answered ready wrote its outcome.
        match unsafe { out.assume_init() } {
            ROk(value) => return Ok(value),
            RErr(failure) => step = LiveStep(handle.failed(link, failure)?),
        }
    }
}

/// The continuation handed to a waterfall listener: the payload, and the rest of the chain.
/// [`run`](Self::run) consumes it, so a listener runs the rest of the chain at most once; what
/// it needs of the payload afterwards it reads first, or keeps through
/// [`payload_arc`](Self::payload_arc).
pub struct Next<P, R> {
    handle: NextHandle,
    _types: PhantomData<fn() -> (P, R)>,
}

impl<P: Send + Sync + 'static, R: 'static> Next<P, R> {
    /// The dispatch's payload.
    pub fn payload(&self) -> &P {
        // SAFETY: the chain keeps its payload alive while this handle is; the host checked the
        // event's payload type, so the erased `RArc<()>` is an `RArc<P>`, of the same layout.
        unsafe { &*self.handle.link().payload.cast::<RArc<P>>() }
    }

    /// A counted reference to the payload, for keeping it past this listener.
    pub fn payload_arc(&self) -> RArc<P> {
        // SAFETY: as in `payload`.
        unsafe { (*self.handle.link().payload.cast::<RArc<P>>()).clone() }
    }

    /// Runs the listeners after this one and the innermost default, returning their result.
    pub async fn run(self) -> Result<R, PluginError> {
        drive(self.handle).await
    }
}

pub(crate) struct WaterfallFn<P, R, F> {
    f: F,
    _types: PhantomData<fn(P) -> R>,
}

pub(crate) fn waterfall_listener<P, R, F, Fut>(f: F) -> WaterfallListener_TO<'static, RBox<()>>
where
    P: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(Next<P, R>) -> Fut + Send + Sync + 'static,
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
    F: Fn(Next<P, R>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
{
    fn call(&self, next: NextHandle) {
        let link = next.link;
        let next = Next {
            handle: next,
            _types: PhantomData,
        };
        // SAFETY: the driver that started this step holds its own reference to the chain, so
        // the link outlives this call whatever the listener does with `next`.
        unsafe { link.as_ref() }.start_step(|| (self.f)(next));
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
    fn run(&self, step: *const Link) {
        // SAFETY: the host passes a live link of the chain this default belongs to.
        let link = unsafe { &*step };
        let Some(f) = self.f.lock().ok().and_then(|mut slot| slot.take()) else {
            let error = PluginError::new(
                ErrorKind::Dispatch,
                "the innermost default of a waterfall ran twice",
            );
            link.set_step(StepFuture::failed::<R>(error));
            return;
        };
        // SAFETY: as in `Next::payload`.
        let payload = unsafe { (*link.payload.cast::<RArc<P>>()).clone() };
        link.start_step(|| f(payload));
    }
}
