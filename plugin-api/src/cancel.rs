//! Cancellation across the boundary: the [`Cancel`] signal a caller hands to work it may want
//! to stop (a tool body, a step's calls, a model stream), the ready-made [`CancelFlag`] behind
//! it, and [`first_of`], the one race every waiter needs (work against its cancel or its
//! timeout). Waker-only: nothing here needs a runtime.

#![allow(
    unsafe_code,
    reason = "sabi_trait emits unsafe impls; nothing here is unsafe to use"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(unreachable_pub, reason = "sabi_trait generates public helper items")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::RArc;
use async_ffi::FfiFuture;

/// A cancellation signal. Tool bodies stop early when it fires; the pipeline fuses the caller's
/// signal with its own (timeouts), so a body only ever watches one.
#[sabi_trait]
pub trait Cancel: Send + Sync {
    fn is_cancelled(&self) -> bool;
    /// Resolves once cancelled (at once when already cancelled).
    fn cancelled(&self) -> FfiFuture<()>;
}
pub type CancelBox = Cancel_TO<'static, RArc<()>>;

/// Another handle on the same signal, for work handed on to another service.
pub fn share(cancel: &CancelBox) -> CancelBox {
    Cancel_TO::from_sabi(cancel.obj.shallow_clone())
}

/// A ready-made cancellation signal: a one-shot flag with wakers, for callers of `run_step`
/// and for anything else that needs a [`CancelBox`].
#[derive(Default)]
pub struct CancelFlag {
    fired: std::sync::atomic::AtomicBool,
    wakers: std::sync::Mutex<Vec<std::task::Waker>>,
}

impl CancelFlag {
    pub fn new() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self::default())
    }

    pub fn fire(&self) {
        self.fired.store(true, std::sync::atomic::Ordering::Release);
        // Taken out first: wakers run after the lock is released.
        let wakers = std::mem::take(&mut *crate::lock(&self.wakers));
        for waker in wakers {
            waker.wake();
        }
    }

    pub fn is_fired(&self) -> bool {
        self.fired.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Resolves once fired.
    pub fn wait(
        self: &std::sync::Arc<Self>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let flag = self.clone();
        std::future::poll_fn(move |cx| {
            if flag.is_fired() {
                return std::task::Poll::Ready(());
            }
            {
                // One entry per task: a task that waits again (a new wait per chunk) does not
                // grow the list.
                let mut wakers = crate::lock(&flag.wakers);
                if !wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
            }
            // Checked again: `fire` may have run between the first check and the push.
            if flag.is_fired() {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
    }

    /// Runs `future` until it finishes (`Some`) or this flag fires first (`None`, the future
    /// is dropped).
    pub async fn until<F: std::future::Future>(
        self: &std::sync::Arc<Self>,
        future: F,
    ) -> Option<F::Output> {
        match first_of(future, self.wait()).await {
            Either::Left(value) => Some(value),
            Either::Right(()) => None,
        }
    }

    /// This flag as a signal for the seam.
    pub fn signal(self: &std::sync::Arc<Self>) -> CancelBox {
        Cancel_TO::from_ptr(
            RArc::new(FlagSignal(self.clone())),
            abi_stable::sabi_trait::TD_Opaque,
        )
    }
}

struct FlagSignal(std::sync::Arc<CancelFlag>);

impl Cancel for FlagSignal {
    fn is_cancelled(&self) -> bool {
        self.0.is_fired()
    }

    fn cancelled(&self) -> FfiFuture<()> {
        async_ffi::FutureExt::into_ffi(self.0.wait())
    }
}

/// Which of two futures finished first.
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures and answers the first to finish, dropping the other (`a` wins a tie).
pub async fn first_of<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> Either<A::Output, B::Output> {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(move |cx| {
        if let std::task::Poll::Ready(value) = a.as_mut().poll(cx) {
            return std::task::Poll::Ready(Either::Left(value));
        }
        if let std::task::Poll::Ready(value) = b.as_mut().poll(cx) {
            return std::task::Poll::Ready(Either::Right(value));
        }
        std::task::Poll::Pending
    })
    .await
}
