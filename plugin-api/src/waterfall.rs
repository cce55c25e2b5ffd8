//! The waterfall mode on the plugin's side: the continuation each listener receives
//! ([`Next`]) and the typed adapters for listeners and the innermost default.
//!
//! The host owns the chain (the listener snapshot, the payload, the innermost default) and
//! hands each listener a [`NextBox`]: the chain and the position after that listener. Every call
//! across the boundary is one boxed FFI future; nothing of the chain's memory is shared with the
//! plugin, so the host can change how it runs a chain without breaking a library built against
//! this crate.

use std::future::Future;
use std::marker::PhantomData;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RBox, RErr};
use async_ffi::{FfiFuture, FutureExt};

use crate::abi::{
    ErrorKind, NextBox, PluginError, WaterfallInner, WaterfallInner_TO, WaterfallListener,
    WaterfallListener_TO, WaterfallResult,
};
use crate::events::{erase_box, unerase_arc, unerase_box};
use crate::guard::{contain, guarded};

/// The continuation handed to a waterfall listener: the payload, and the rest of the chain.
/// [`run`](Self::run) consumes it, so a listener runs the rest of the chain at most once; what
/// it needs of the payload afterwards it reads first, or keeps through
/// [`payload_arc`](Self::payload_arc).
pub struct Next<P, R> {
    payload: RArc<P>,
    rest: NextBox,
    _result: PhantomData<fn() -> R>,
}

impl<P: Send + Sync + 'static, R: 'static> Next<P, R> {
    /// The dispatch's payload.
    pub fn payload(&self) -> &P {
        &self.payload
    }

    /// A counted reference to the payload, for keeping it past this listener.
    pub fn payload_arc(&self) -> RArc<P> {
        self.payload.clone()
    }

    /// Runs the listeners after this one and the innermost default, returning their result.
    pub async fn run(self) -> Result<R, PluginError> {
        outcome(self.rest.run()).await
    }
}

/// The typed result of a level the host ran. The host's futures never panic; the SDK's own
/// run inside the guard of the level that awaits this.
pub(crate) async fn outcome<R>(level: FfiFuture<WaterfallResult>) -> Result<R, PluginError> {
    level.await.into_result().map(unerase_box::<R>)
}

/// A typed level's future as the host receives it: one boxed future, a panic in it its error.
fn level<R, Fut>(future: Fut) -> FfiFuture<WaterfallResult>
where
    R: Send + 'static,
    Fut: Future<Output = Result<R, PluginError>> + Send + 'static,
{
    async move { guarded(future, |result| result.map(erase_box)).await.into() }.into_ffi()
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
    fn call(&self, payload: RArc<()>, next: NextBox) -> FfiFuture<WaterfallResult> {
        let next = Next {
            payload: unerase_arc::<P>(payload),
            rest: next,
            _result: PhantomData,
        };
        match contain(|| Ok((self.f)(next))) {
            Ok(future) => level(future),
            Err(panic) => std::future::ready(RErr(panic)).into_ffi(),
        }
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
    fn run(&self, payload: RArc<()>) -> FfiFuture<WaterfallResult> {
        // The host runs the default at most once per chain; a second run (a host bug) fails
        // instead of calling an `FnOnce` twice.
        let Some(f) = self.f.lock().ok().and_then(|mut slot| slot.take()) else {
            let error = PluginError::new(
                ErrorKind::Dispatch,
                "the innermost default of a waterfall ran twice",
            );
            return std::future::ready(RErr(error)).into_ffi();
        };
        let payload = unerase_arc::<P>(payload);
        match contain(|| Ok(f(payload))) {
            Ok(future) => level(future),
            Err(panic) => std::future::ready(RErr(panic)).into_ffi(),
        }
    }
}
