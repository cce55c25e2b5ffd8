//! The host's side of a waterfall dispatch: the chain of one dispatch, and the `next` each
//! listener gets.
//!
//! A chain is shared (`Arc`) by the dispatch and every `next` handed out: the listener snapshot,
//! the payload and the innermost default. A `next` is the chain plus the position after its
//! listener, and a claim flag, so the rest of the chain runs at most once per listener: a
//! second `run` is an error, not a skip.
//!
//! A listener that fails before its `next` ran is logged and skipped: the chain goes on with
//! the listener after it. One that fails after its `next` ran passes its error outward, to the
//! listener around it or to the dispatcher, which end up with it and log it as they see fit.
//! The flag settles the race between a failed listener and a `next` it handed to another task:
//! whoever claims it first runs the rest of the chain, the other one does not.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, ROk};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::abi::{
    WaterfallInnerBox, WaterfallListenerBox, WaterfallNext, WaterfallNext_TO, WaterfallResult,
};
use dsh_plugin_api::{ErrorKind, PluginError};

use super::bus::{ListenerEntry, ListenerKind, Slot};
use super::dispatch::{report, settle};

/// One running dispatch.
struct Chain {
    slot: Arc<Slot>,
    listeners: Arc<Vec<Arc<ListenerEntry>>>,
    payload: RArc<()>,
    inner: WaterfallInnerBox,
    /// Per listener: whether its continuation was used (run, or given up when it failed).
    claimed: Box<[AtomicBool]>,
}

/// What comes next from a position in the chain.
enum Level<'a> {
    Listener(usize, &'a ListenerEntry, &'a WaterfallListenerBox),
    Inner,
}

impl Chain {
    /// The first live listener at or after `index`, or the innermost default.
    fn level(&self, index: usize) -> Result<Level<'_>, PluginError> {
        for (position, entry) in self.listeners.iter().enumerate().skip(index) {
            if !entry.is_alive() {
                continue;
            }
            return match &entry.kind {
                ListenerKind::Waterfall(listener) => Ok(Level::Listener(position, entry, listener)),
                _ => Err(PluginError::new(
                    ErrorKind::Dispatch,
                    format!(
                        "listener {position} of `{}` cannot run in a waterfall",
                        self.slot.name
                    ),
                )),
            };
        }
        Ok(Level::Inner)
    }
}

/// Runs the chain of `slot`'s listeners around `inner`.
pub(super) fn run(
    slot: Arc<Slot>,
    payload: RArc<()>,
    inner: WaterfallInnerBox,
) -> FfiFuture<WaterfallResult> {
    let listeners = slot.snapshot();
    let claimed = listeners.iter().map(|_| AtomicBool::new(false)).collect();
    let chain = Arc::new(Chain {
        slot,
        listeners,
        payload,
        inner,
        claimed,
    });
    run_from(chain, 0)
}

/// Runs the chain from position `start` inward.
fn run_from(chain: Arc<Chain>, start: usize) -> FfiFuture<WaterfallResult> {
    async move {
        let mut index = start;
        loop {
            let (position, entry, listener) = match chain.level(index) {
                Ok(Level::Listener(position, entry, listener)) => (position, entry, listener),
                Ok(Level::Inner) => return settle(chain.inner.run(chain.payload.clone())).await,
                Err(error) => return RErr(error),
            };
            let next = WaterfallNext_TO::from_value(
                Rest {
                    chain: chain.clone(),
                    after: position + 1,
                },
                TD_Opaque,
            );
            match settle(listener.call(chain.payload.clone(), next)).await {
                ROk(value) => return ROk(value),
                // Its `next` never ran and now never will: the chain goes on without it.
                RErr(error) if !chain.claim(position) => {
                    report(&chain.slot.name, entry, &error);
                    index = position + 1;
                }
                RErr(error) => return RErr(error),
            }
        }
    }
    .into_ffi()
}

impl Chain {
    /// Claims the continuation of listener `position`: true when it was claimed already.
    fn claim(&self, position: usize) -> bool {
        self.claimed
            .get(position)
            .is_none_or(|flag| flag.swap(true, Ordering::AcqRel))
    }
}

/// The `next` of the listener at `after - 1`.
struct Rest {
    chain: Arc<Chain>,
    after: usize,
}

impl WaterfallNext for Rest {
    fn run(&self) -> FfiFuture<WaterfallResult> {
        if self.chain.claim(self.after - 1) {
            let owner = self
                .chain
                .listeners
                .get(self.after - 1)
                .map_or("?", |entry| entry.owner.as_str());
            let error = PluginError::new(
                ErrorKind::Dispatch,
                format!(
                    "`next` called twice by the `{owner}` listener of `{}`",
                    self.chain.slot.name
                ),
            );
            return std::future::ready(RErr(error)).into_ffi();
        }
        run_from(self.chain.clone(), self.after)
    }
}
