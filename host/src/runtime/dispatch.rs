//! The five dispatch modes, over a slot's listener snapshot.
//!
//! A listener that fails (an error or a contained panic) is logged with its owner and the
//! dispatch goes on: emit and parallel call the others, bail and serial ask the next one. The
//! waterfall mode, whose listeners nest, lives in the `waterfall` module.
//!
//! Every async listener call answers one boxed FFI future. Polling one goes through
//! [`settle`]: the SDK already turns a panic in plugin code into an error, but a library
//! that implements the ABI traits by hand would otherwise unwind into the host.

use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RSome};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::abi::{
    ErasedBox, EventChannel, EventChannel_TO, EventChannelBox, ListenerResult, WaterfallInnerBox,
    WaterfallResult,
};
use dsh_plugin_api::{DispatchMode, ErrorKind, PluginError};

use super::bus::{ListenerEntry, ListenerKind, Slot};
use super::waterfall;

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

/// A plugin's future, awaited with a panic (of a library that bypassed the SDK) as its error.
pub(super) fn settle<T>(future: FfiFuture<RResult<T, PluginError>>) -> Settle<T> {
    Settle(future)
}

/// See [`settle`]. A plain future over the FFI one (which is `Unpin`), so awaiting a listener
/// adds no state machine of its own.
pub(super) struct Settle<T>(FfiFuture<RResult<T, PluginError>>);

impl<T> std::future::Future for Settle<T> {
    type Output = RResult<T, PluginError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        poll_contained(&mut self.0, cx)
    }
}

/// Polls a plugin's future once, its panic answered as an error.
fn poll_contained<T>(
    future: &mut FfiFuture<RResult<T, PluginError>>,
    cx: &mut std::task::Context<'_>,
) -> Poll<RResult<T, PluginError>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Pin::new(future).poll(cx))) {
        Ok(poll) => poll,
        Err(payload) => Poll::Ready(RErr(PluginError::new(
            ErrorKind::Panic,
            format!("panicked: {}", dsh_plugin_api::panic_message(&*payload)),
        ))),
    }
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

    fn bail(&self, payload: *const ()) -> ListenerResult {
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
            // Every live listener is called before any is awaited, then all are polled until
            // each has answered.
            let mut running: Vec<(usize, FfiFuture<ListenerResult>)> = listeners
                .iter()
                .enumerate()
                .filter(|(_, entry)| entry.is_alive())
                .filter_map(|(index, entry)| match &entry.kind {
                    ListenerKind::Async(listener) => Some((index, listener.call(payload.clone()))),
                    _ => None,
                })
                .collect();
            let mut failures = Vec::new();
            std::future::poll_fn(|cx| {
                running.retain_mut(|(index, future)| {
                    let Poll::Ready(answer) = poll_contained(future, cx) else {
                        return true;
                    };
                    if let RErr(error) = answer {
                        let entry = &listeners[*index];
                        report(&slot.name, entry, &error);
                        failures.push(format!("{}: {error}", entry.owner));
                    }
                    false
                });
                if running.is_empty() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
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

    fn serial(&self, payload: RArc<()>) -> FfiFuture<ListenerResult> {
        let checked = self.expect_mode(DispatchMode::Serial);
        let slot = self.slot.clone();
        async move {
            if let Err(error) = checked {
                return RErr(error);
            }
            for entry in slot.snapshot().iter() {
                if !entry.is_alive() {
                    continue;
                }
                if let ListenerKind::Async(listener) = &entry.kind {
                    match settle(listener.call(payload.clone())).await {
                        ROk(RSome(value)) => return ROk(RSome::<ErasedBox>(value)),
                        ROk(RNone) => {}
                        RErr(error) => report(&slot.name, entry, &error),
                    }
                }
            }
            ROk(ROption::RNone)
        }
        .into_ffi()
    }

    fn waterfall(&self, payload: RArc<()>, inner: WaterfallInnerBox) -> FfiFuture<WaterfallResult> {
        if let Err(error) = self.expect_mode(DispatchMode::Waterfall) {
            return std::future::ready(RErr(error)).into_ffi();
        }
        waterfall::run(self.slot.clone(), payload, inner)
    }
}
