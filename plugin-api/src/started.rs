//! Futures that cross the boundary during a dispatch ([`DispatchFuture`]), and listener calls
//! that start them ([`Started`]).
//!
//! A listener's future is built where it will live: in the scratch memory the dispatch lends
//! (see the `scratch` module) when it fits, boxed otherwise. The serial and parallel modes make
//! each call from inside their own poll and pass its context along ([`PollContext`]), so the
//! future is polled once right away; most finish there, are dropped in place, and only their
//! outcome crosses back, sparing a crossing to poll them and another to drop them. A waterfall
//! builds its steps' futures in the chain's links instead (see the `waterfall` module) and does
//! not poll them in the call that starts them: its steps nest, and polling each one there
//! doubled the depth of the stack per level and made a chain slower (measured: 720 to 980 ns
//! for ten).

#![allow(
    unsafe_code,
    reason = "futures placed in lent memory, polled and dropped through extern fns"
)]

use std::alloc::Layout;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use abi_stable::StableAbi;
use abi_stable::std_types::{RBox, RErr, RNone, ROk, ROption, RResult, RSome};
use async_ffi::{ContextExt, FfiContext, FfiPoll};

use crate::abi::{BoxedError, ErasedBox, ErrorKind, PluginError};
use crate::events::erase_box;
use crate::scratch::Scratch;

/// What a future's output becomes when it crosses the boundary as a [`DispatchFuture<V>`].
pub(crate) trait IntoDispatch<V> {
    fn into_dispatch(self) -> RResult<V, BoxedError>;
}

impl<V> IntoDispatch<V> for RResult<V, BoxedError> {
    fn into_dispatch(self) -> RResult<V, BoxedError> {
        self
    }
}

/// A serial listener's answer: `Some` stops the dispatch.
impl<R: Send + 'static> IntoDispatch<ROption<ErasedBox>> for Option<R> {
    fn into_dispatch(self) -> RResult<ROption<ErasedBox>, BoxedError> {
        match self {
            Some(value) => ROk(RSome(erase_box(value))),
            None => ROk(RNone),
        }
    }
}

/// A fallible parallel listener's outcome.
impl IntoDispatch<ROption<ErasedBox>> for Result<(), PluginError> {
    fn into_dispatch(self) -> RResult<ROption<ErasedBox>, BoxedError> {
        match self {
            Ok(()) => ROk(RNone),
            Err(error) => RErr(RBox::new(error)),
        }
    }
}

/// A future handed across the boundary: in lent scratch memory when it fitted, boxed otherwise.
/// Polling it runs the future inside `catch_unwind`; a panic ends it with a `Panic` error.
#[repr(C)]
#[derive(StableAbi)]
pub struct DispatchFuture<V> {
    fut: *mut (),
    // Spelled out rather than aliased: the StableAbi derive reads function pointer types.
    poll_fn:
        unsafe extern "C" fn(fut: *mut (), cx: *mut FfiContext) -> FfiPoll<RResult<V, BoxedError>>,
    drop_fn: unsafe extern "C" fn(fut: *mut ()),
}

// SAFETY: only built from `Send` futures (see `new`).
unsafe impl<V: Send> Send for DispatchFuture<V> {}

impl<V: Send + 'static> DispatchFuture<V> {
    /// Builds the future with `make` where it will live (see [`place`]). A panic in `make`
    /// becomes a `Panic` error.
    pub(crate) fn make<F, M>(scratch: Scratch, make: M) -> Self
    where
        M: FnOnce() -> F,
        F: Future + Send + 'static,
        F::Output: IntoDispatch<V>,
    {
        match place(&scratch, make) {
            Ok(placed) => Self {
                fut: placed.fut,
                poll_fn: poll_placed::<F, V>,
                drop_fn: placed.drop_fn,
            },
            // Boxed: a panic is rare, and the region may be partly taken by what the panicking
            // call reserved.
            Err(panic) => Self::ready(RErr(RBox::new(panic)), Scratch::none()),
        }
    }

    /// Places `future` in `scratch` when it fits, in a box otherwise.
    pub(crate) fn new<F>(future: F, scratch: Scratch) -> Self
    where
        F: Future + Send + 'static,
        F::Output: IntoDispatch<V>,
    {
        Self::make(scratch, || future)
    }

    /// A future that is ready with `value` at once.
    pub(crate) fn ready(value: RResult<V, BoxedError>, scratch: Scratch) -> Self {
        Self::new(std::future::ready(value), scratch)
    }

    /// [`make`](Self::make)s the future and polls it once with `cx`: when it is done, it is
    /// dropped at once and its outcome is the answer; otherwise the future is.
    pub(crate) fn start<F, M>(scratch: Scratch, cx: PollContext<'_>, make: M) -> Started<V>
    where
        M: FnOnce() -> F,
        F: Future + Send + 'static,
        F::Output: IntoDispatch<V>,
    {
        let future = Self::make(scratch, make);
        // SAFETY: `poll_fn` was built for the future behind `fut`; `cx` is the context of the
        // poll this call is made from.
        match unsafe { (future.poll_fn)(future.fut, cx.context) } {
            FfiPoll::Ready(outcome) => Started::Ready(outcome),
            FfiPoll::Pending => Started::Pending(future),
            FfiPoll::Panicked => Started::Ready(RErr(RBox::new(PluginError::new(
                ErrorKind::Panic,
                "a listener future panicked",
            )))),
        }
    }
}

/// A future built by [`place`]: where it lives and how to drop it there.
pub(crate) struct Placed {
    pub(crate) fut: *mut (),
    pub(crate) drop_fn: unsafe extern "C" fn(fut: *mut ()),
}

/// Builds `make`'s future directly where it will live: in `scratch` when it fits, in a box
/// otherwise (building in place spares copying the future, a few hundred bytes for a typical
/// listener). A panic in `make` is answered as the error to report instead.
pub(crate) fn place<F, M>(scratch: &Scratch, make: M) -> Result<Placed, PluginError>
where
    M: FnOnce() -> F,
{
    let (place, boxed) = match scratch.reserve(Layout::new::<F>()) {
        Some(place) => (place.cast::<F>(), false),
        None => (
            NonNull::from(Box::leak(Box::<F>::new_uninit())).cast(),
            true,
        ),
    };
    // SAFETY: `place` is sized and aligned for `F` and used by nothing else.
    match catch_unwind(AssertUnwindSafe(|| unsafe { place.write(make()) })) {
        Ok(()) => Ok(Placed {
            fut: place.as_ptr().cast(),
            drop_fn: if boxed {
                drop_boxed::<F>
            } else {
                drop_placed::<F>
            },
        }),
        Err(payload) => {
            if boxed {
                // SAFETY: the box was leaked above and never initialized: free it as
                // uninitialized memory.
                drop(unsafe { Box::from_raw(place.as_ptr().cast::<std::mem::MaybeUninit<F>>()) });
            }
            // Callers box the error's future rather than placing it: in a waterfall, the
            // panicking code may already have handed its `next` to another thread, whose step may
            // be reserving from the same scratch memory now.
            Err(PluginError::from_panic(payload.as_ref()))
        }
    }
}

/// The waker context of the poll a call is made from. Its lifetime keeps it inside the call
/// [`PollContext::with`] makes.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy)]
pub struct PollContext<'a> {
    // 'static only names a lifetime the ABI can carry; `'a` is the real one.
    context: *mut FfiContext<'static>,
    _call: PhantomData<&'a mut ()>,
}

impl PollContext<'_> {
    /// Calls `call` with the context of the poll `cx` belongs to; the context cannot leave it.
    pub fn with<T>(cx: &mut Context<'_>, call: impl for<'a> FnOnce(PollContext<'a>) -> T) -> T {
        cx.with_ffi_context(|ffi| {
            call(PollContext {
                context: std::ptr::from_mut(ffi).cast(),
                _call: PhantomData,
            })
        })
    }
}

/// A listener call's answer: its outcome when its future finished on the first poll (then the
/// future is already dropped), or the future still pending.
#[repr(C, u8)]
#[derive(StableAbi)]
pub enum Started<V> {
    Ready(RResult<V, BoxedError>),
    Pending(DispatchFuture<V>),
}

/// Polls the `F` at `fut` with the context behind `cx`, a panic caught and answered as its
/// error.
///
/// Always inlined: it sits in every level's poll of a waterfall, and as a call of its own (its
/// nested result returned through memory) it made a ten-level chain about 60 ns slower.
///
/// # Safety
/// `fut` points to a live `F` that never moves (placed or boxed); `cx` is the live context of
/// the poll this is called from.
#[inline(always)]
pub(crate) unsafe fn poll_in_place<F: Future>(
    fut: *mut (),
    cx: *mut FfiContext<'_>,
) -> Poll<Result<F::Output, PluginError>> {
    let polled = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per the contract.
        let fut = unsafe { Pin::new_unchecked(&mut *fut.cast::<F>()) };
        unsafe { &mut *cx }.with_context(|cx| fut.poll(cx))
    }));
    match polled {
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
        Err(payload) => Poll::Ready(Err(PluginError::from_panic(payload.as_ref()))),
    }
}

unsafe extern "C" fn poll_placed<F, V>(
    fut: *mut (),
    cx: *mut FfiContext<'_>,
) -> FfiPoll<RResult<V, BoxedError>>
where
    F: Future,
    F::Output: IntoDispatch<V>,
{
    // SAFETY: `fut` points to the `F` placed by `DispatchFuture::make`, which never moves it;
    // `cx` is the live context of the poll that called us.
    match unsafe { poll_in_place::<F>(fut, cx) } {
        Poll::Pending => FfiPoll::Pending,
        Poll::Ready(Ok(output)) => FfiPoll::Ready(output.into_dispatch()),
        Poll::Ready(Err(panic)) => FfiPoll::Ready(RErr(RBox::new(panic))),
    }
}

unsafe extern "C" fn drop_placed<F>(fut: *mut ()) {
    // A panicking destructor must not unwind through `extern "C"`; what it did not drop leaks.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called once, by `DispatchFuture::drop`, on the `F` placed in scratch memory.
        unsafe { std::ptr::drop_in_place(fut.cast::<F>()) }
    }));
}

pub(crate) unsafe extern "C" fn drop_boxed<F>(fut: *mut ()) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called once, by `DispatchFuture::drop`, on the box made in `new`.
        drop(unsafe { Box::from_raw(fut.cast::<F>()) })
    }));
}

impl<V> Future for DispatchFuture<V> {
    type Output = RResult<V, BoxedError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `poll_fn` was built for the future behind `fut`, which is alive until drop.
        match cx.with_ffi_context(|cx| unsafe { (self.poll_fn)(self.fut, cx) }) {
            FfiPoll::Ready(output) => Poll::Ready(output),
            FfiPoll::Pending => Poll::Pending,
            FfiPoll::Panicked => Poll::Ready(RErr(RBox::new(PluginError::new(
                ErrorKind::Panic,
                "a listener future panicked",
            )))),
        }
    }
}

impl<V> Drop for DispatchFuture<V> {
    fn drop(&mut self) {
        // SAFETY: `drop_fn` matches how `fut` was placed, and runs exactly once.
        unsafe { (self.drop_fn)(self.fut) }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::scratch::ScratchArea;

    fn poll_once<V>(fut: &mut DispatchFuture<V>) -> Poll<RResult<V, BoxedError>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(fut).poll(&mut cx)
    }

    #[test]
    fn a_future_that_fits_is_placed_and_one_that_does_not_is_boxed() {
        let area = ScratchArea::<64>::new();
        let small = [7_u8; 16];
        let mut placed: DispatchFuture<ROption<ErasedBox>> =
            // SAFETY: the area outlives the future, dropped before it.
            DispatchFuture::new(async move { Some(u64::from(small[0])) }, unsafe { area.lend() });
        assert!(area.used() >= 16);
        let big = [1_u8; 128];
        let before = area.used();
        let mut boxed: DispatchFuture<ROption<ErasedBox>> =
            // SAFETY: as above.
            DispatchFuture::new(async move { Some(u64::from(big[3])) }, unsafe { area.lend() });
        assert_eq!(area.used(), before, "too big: boxed");
        for (fut, want) in [(&mut placed, 7), (&mut boxed, 1)] {
            match poll_once(fut) {
                Poll::Ready(ROk(RSome(value))) => {
                    assert_eq!(crate::events::unerase_box::<u64>(value), want)
                }
                _ => panic!("expected a value"),
            }
        }
    }

    /// Counts its drops.
    struct Flag(std::sync::Arc<AtomicUsize>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_panic_while_polling_becomes_an_error_and_drop_runs_in_place() {
        let dropped = std::sync::Arc::new(AtomicUsize::new(0));
        let area = ScratchArea::<256>::new();
        let flag = Flag(dropped.clone());
        let mut fut: DispatchFuture<ROption<ErasedBox>> = DispatchFuture::new(
            async move {
                let _flag = flag;
                if true {
                    panic!("listener boom");
                }
                Some(0_u8)
            },
            // SAFETY: the area outlives the future, dropped below.
            unsafe { area.lend() },
        );
        match poll_once(&mut fut) {
            Poll::Ready(RErr(error)) => {
                assert_eq!(error.kind, ErrorKind::Panic);
                assert!(error.message.as_str().contains("listener boom"));
            }
            _ => panic!("expected the panic as an error"),
        }
        drop(fut);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    fn start_now<V: Send + 'static, F>(
        area: &ScratchArea<256>,
        make: impl FnOnce() -> F,
    ) -> Started<V>
    where
        F: Future + Send + 'static,
        F::Output: IntoDispatch<V>,
    {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        // SAFETY: the area outlives the future, which the test drops before it.
        let scratch = unsafe { area.lend() };
        PollContext::with(&mut cx, |cx| DispatchFuture::start(scratch, cx, make))
    }

    #[test]
    fn a_started_future_done_at_once_answers_and_is_already_dropped() {
        let dropped = std::sync::Arc::new(AtomicUsize::new(0));
        let area = ScratchArea::<256>::new();
        let flag = Flag(dropped.clone());
        let started: Started<ROption<ErasedBox>> = start_now(&area, move || async move {
            let _flag = flag;
            Some(5_u64)
        });
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        match started {
            Started::Ready(ROk(RSome(value))) => {
                assert_eq!(crate::events::unerase_box::<u64>(value), 5)
            }
            _ => panic!("expected the answer at once"),
        }
    }

    #[test]
    fn a_started_future_that_waits_is_handed_back_and_finishes_later() {
        let area = ScratchArea::<256>::new();
        let mut first_poll = true;
        let started: Started<ROption<ErasedBox>> = start_now(&area, move || {
            std::future::poll_fn(move |_| {
                if std::mem::replace(&mut first_poll, false) {
                    Poll::Pending
                } else {
                    Poll::Ready(Some(9_u64))
                }
            })
        });
        let Started::Pending(mut future) = started else {
            panic!("expected the future back");
        };
        match poll_once(&mut future) {
            Poll::Ready(ROk(RSome(value))) => {
                assert_eq!(crate::events::unerase_box::<u64>(value), 9)
            }
            _ => panic!("expected the answer on the second poll"),
        }
    }
}
