//! The five dispatch modes, over a slot's listener snapshot.
//!
//! A listener that fails (an error or a contained panic) is logged with its owner and the
//! dispatch goes on: emit and parallel call the others, bail and serial ask the next one, and a
//! waterfall listener that failed before calling `next` is skipped. A waterfall listener that
//! failed after its `next` ran passes its error outward instead, to the listener around it or to
//! the dispatcher. In a waterfall each `next` runs the rest of the chain at most once; a second
//! call is an error, not a skip.

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RSome};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::abi::{
    DispatchFuture, ErasedBox, EventChannel, EventChannel_TO, EventChannelBox, NextHandle,
    PollContext, ScratchArea, Started, WaterfallInnerBox,
};
use dsh_plugin_api::{DispatchMode, ErrorKind, PluginError};

use super::bus::{ListenerEntry, ListenerKind, Slot};
use super::chain;

/// Scratch bytes a serial dispatch lends its listeners, one at a time.
const SERIAL_SCRATCH: usize = 256;
/// Scratch bytes a parallel dispatch lends its listeners, all at once.
const PARALLEL_SCRATCH: usize = 1024;

/// A resolved channel handed to plugins (and used by the host itself).
#[derive(Clone)]
pub struct Channel {
    slot: Arc<Slot>,
    /// The declared mode, read once: a slot is only re-declared when nobody holds a channel on
    /// it, so it cannot change under this one.
    mode: DispatchMode,
}

impl Channel {
    pub fn new(slot: Arc<Slot>) -> Self {
        let mode = slot.declaration().mode;
        Self { slot, mode }
    }

    pub fn boxed(self) -> EventChannelBox {
        EventChannel_TO::from_value(self, TD_Opaque)
    }

    fn expect_mode(&self, mode: DispatchMode) -> Result<(), PluginError> {
        let declared = self.mode;
        if declared == mode {
            Ok(())
        } else {
            Err(PluginError::new(
                ErrorKind::Dispatch,
                format!(
                    "event `{}` is declared as {} and cannot be dispatched as {}",
                    self.slot.name,
                    declared.as_str(),
                    mode.as_str()
                ),
            ))
        }
    }
}

pub(super) fn report(event: &str, entry: &ListenerEntry, error: &PluginError) {
    tracing::error!(event, listener = %entry.owner, "listener failed: {error}");
}

impl EventChannel for Channel {
    fn emit(&self, payload: *const ()) -> RResult<(), PluginError> {
        if let Err(error) = self.expect_mode(DispatchMode::Emit) {
            return RErr(error);
        }
        for entry in self.slot.snapshot().iter() {
            if !entry.is_alive() {
                continue;
            }
            if let ListenerKind::Sync(listener) = &entry.kind
                && let RErr(error) = listener.call(payload)
            {
                report(&self.slot.name, entry, &error);
            }
        }
        ROk(())
    }

    fn bail(&self, payload: *const ()) -> RResult<ROption<ErasedBox>, PluginError> {
        if let Err(error) = self.expect_mode(DispatchMode::Bail) {
            return RErr(error);
        }
        for entry in self.slot.snapshot().iter() {
            if !entry.is_alive() {
                continue;
            }
            if let ListenerKind::Sync(listener) = &entry.kind {
                match listener.call(payload) {
                    ROk(RSome(value)) => return ROk(RSome(value)),
                    ROk(RNone) => {}
                    RErr(error) => report(&self.slot.name, entry, &error),
                }
            }
        }
        ROk(RNone)
    }

    fn parallel(&self, payload: RArc<()>) -> FfiFuture<RResult<(), PluginError>> {
        let checked = self.expect_mode(DispatchMode::Parallel);
        let slot = self.slot.clone();
        async move {
            if let Err(error) = checked {
                return RErr(error);
            }
            let listeners = slot.snapshot();
            // The listeners' futures are placed in this dispatch's own memory when they fit; it
            // is never reset, and outlives them as part of the same future state.
            let scratch = ScratchArea::<PARALLEL_SCRATCH>::new();
            let mut failures = Vec::new();
            let mut fail = |index: usize, error: &PluginError| {
                let entry = &listeners[index];
                report(&slot.name, entry, error);
                failures.push(format!("{}: {error}", entry.owner));
            };
            // Every listener starts, and runs until it first waits, in the first poll, before any
            // is awaited; the ones still pending go into one vector (unallocated while none are)
            // and are polled again when woken.
            let mut running: Vec<(usize, DispatchFuture<_>)> = Vec::new();
            let mut started = false;
            std::future::poll_fn(|cx| {
                if !std::mem::replace(&mut started, true) {
                    PollContext::with(cx, |cx| {
                        for (index, entry) in listeners.iter().enumerate() {
                            if let ListenerKind::Async(listener) = &entry.kind
                                && entry.is_alive()
                            {
                                // SAFETY: the calls are made one after another by this future.
                                #[allow(unsafe_code, reason = "listeners started one at a time")]
                                let lent = unsafe { scratch.lend_exclusive() };
                                match listener.call(payload.clone(), lent, cx) {
                                    Started::Ready(ROk(_)) => {}
                                    Started::Ready(RErr(error)) => fail(index, &error),
                                    Started::Pending(future) => running.push((index, future)),
                                }
                            }
                        }
                    });
                } else {
                    running.retain_mut(|(index, fut)| match std::pin::Pin::new(fut).poll(cx) {
                        std::task::Poll::Ready(RErr(error)) => {
                            fail(*index, &error);
                            false
                        }
                        std::task::Poll::Ready(ROk(_)) => false,
                        std::task::Poll::Pending => true,
                    });
                }
                if running.is_empty() {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            })
            .await;
            if failures.is_empty() {
                ROk(())
            } else {
                RErr(PluginError::new(
                    ErrorKind::Dispatch,
                    format!(
                        "{} listener(s) of `{}` failed: {}",
                        failures.len(),
                        slot.name,
                        failures.join("; ")
                    ),
                ))
            }
        }
        .into_ffi()
    }

    fn serial(&self, payload: RArc<()>) -> FfiFuture<RResult<ROption<ErasedBox>, PluginError>> {
        let checked = self.expect_mode(DispatchMode::Serial);
        let slot = self.slot.clone();
        async move {
            if let Err(error) = checked {
                return RErr(error);
            }
            // One listener runs at a time, so each reuses the same bytes for its future.
            let scratch = ScratchArea::<SERIAL_SCRATCH>::new();
            for entry in slot.snapshot().iter() {
                if !entry.is_alive() {
                    continue;
                }
                if let ListenerKind::Async(listener) = &entry.kind {
                    let started = std::future::poll_fn(|cx| {
                        // SAFETY: one listener is called at a time, by this future only.
                        #[allow(unsafe_code, reason = "listeners started one at a time")]
                        let lent = unsafe { scratch.lend_exclusive() };
                        std::task::Poll::Ready(PollContext::with(cx, |cx| {
                            listener.call(payload.clone(), lent, cx)
                        }))
                    })
                    .await;
                    let answer = match started {
                        Started::Ready(answer) => answer,
                        Started::Pending(mut future) => (&mut future).await,
                    };
                    // SAFETY: the listener's future is gone: dropped in the call when it finished
                    // there, or at the end of the match arm above.
                    #[allow(unsafe_code, reason = "reuse of the scratch area between listeners")]
                    unsafe {
                        scratch.reset()
                    };
                    match answer {
                        ROk(RSome(value)) => return ROk(RSome(value)),
                        ROk(RNone) => {}
                        RErr(error) => report(&slot.name, entry, &error),
                    }
                }
            }
            ROk(RNone)
        }
        .into_ffi()
    }

    fn waterfall(
        &self,
        payload: RArc<()>,
        inner: WaterfallInnerBox,
    ) -> RResult<NextHandle, PluginError> {
        if let Err(error) = self.expect_mode(DispatchMode::Waterfall) {
            return RErr(error);
        }
        ROk(chain::start(self.slot.clone(), payload, inner))
    }
}
