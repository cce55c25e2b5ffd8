//! The five dispatch modes, over a slot's listener snapshot.
//!
//! A listener that fails (an error or a contained panic) is logged with its owner and the
//! dispatch goes on: emit and parallel call the others, bail and serial ask the next one, and a
//! waterfall listener that failed before calling `next` is skipped. In a waterfall each `next`
//! runs the rest of the chain at most once; a second call is an error, not a skip.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RSome};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::abi::{
    ErasedBox, EventChannel, EventChannel_TO, EventChannelBox, WaterfallInnerBox,
};
use dsh_plugin_api::{DispatchMode, ErrorKind, PluginError, next_step};

use super::bus::{ListenerEntry, ListenerKind, Slot};

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

fn report(event: &str, entry: &ListenerEntry, error: &PluginError) {
    tracing::error!(event, listener = %entry.owner, "listener failed: {error}");
}

fn wrong_kind(event: &str) -> PluginError {
    PluginError::new(
        ErrorKind::Dispatch,
        format!("listener of `{event}` has the wrong kind"),
    )
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
            // Every listener starts before any is awaited; one vector holds the running ones.
            let mut running: Vec<(usize, FfiFuture<_>)> = listeners
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
                running.retain_mut(|(index, fut)| match std::pin::Pin::new(fut).poll(cx) {
                    std::task::Poll::Ready(RErr(error)) => {
                        let entry = &listeners[*index];
                        report(&slot.name, entry, &error);
                        failures.push(format!("{}: {error}", entry.owner));
                        false
                    }
                    std::task::Poll::Ready(ROk(_)) => false,
                    std::task::Poll::Pending => true,
                });
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
            for entry in slot.snapshot().iter() {
                if !entry.is_alive() {
                    continue;
                }
                if let ListenerKind::Async(listener) = &entry.kind {
                    match listener.call(payload.clone()).await {
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
    ) -> FfiFuture<RResult<ErasedBox, PluginError>> {
        if let Err(error) = self.expect_mode(DispatchMode::Waterfall) {
            return async move { RErr(error) }.into_ffi();
        }
        let listeners = self.slot.snapshot();
        let used = listeners.iter().map(|_| AtomicBool::new(false)).collect();
        let chain = Arc::new(Chain {
            slot: self.slot.clone(),
            listeners,
            used,
            inner,
            payload,
        });
        run_from(chain, 0)
    }
}

struct Chain {
    slot: Arc<Slot>,
    listeners: Arc<Vec<Arc<ListenerEntry>>>,
    /// Whether listener `i` has run the rest of the chain (its `next`): one flag per listener,
    /// allocated once per dispatch.
    used: Vec<AtomicBool>,
    inner: WaterfallInnerBox,
    payload: RArc<()>,
}

/// Runs the chain from listener `index` inward.
fn run_from(chain: Arc<Chain>, index: usize) -> FfiFuture<RResult<ErasedBox, PluginError>> {
    async move {
        let mut index = index;
        loop {
            let Some(entry) = chain.listeners.get(index) else {
                return chain.inner.run(chain.payload.clone()).await;
            };
            let ListenerKind::Waterfall(listener) = &entry.kind else {
                return RErr(wrong_kind(&chain.slot.name));
            };
            if !entry.is_alive() {
                index += 1;
                continue;
            }
            let next = {
                let chain = chain.clone();
                next_step(move || {
                    if chain.used[index].swap(true, Ordering::AcqRel) {
                        let error = PluginError::new(
                            ErrorKind::Dispatch,
                            format!(
                                "`next` called twice by the `{}` listener of {}",
                                chain.slot.name, chain.listeners[index].owner
                            ),
                        );
                        return async move { RErr(error) }.into_ffi();
                    }
                    run_from(chain.clone(), index + 1)
                })
            };
            match listener.call(chain.payload.clone(), next).await {
                ROk(value) => return ROk(value),
                RErr(error) => {
                    report(&chain.slot.name, entry, &error);
                    // Marked used either way: if the rest of the chain already ran for this
                    // listener, running it again would repeat its effects; if not, a `next`
                    // the failed listener kept must not start a second run later.
                    if chain.used[index].swap(true, Ordering::AcqRel) {
                        return RErr(error);
                    }
                    index += 1;
                }
            }
        }
    }
    .into_ffi()
}
