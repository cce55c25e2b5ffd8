//! The host's side of a waterfall dispatch: the chain that plugins drive through counted
//! references ([`NextHandle`]).
//!
//! One allocation per dispatch holds everything: the listener snapshot, the payload, the
//! innermost default, one claim flag per listener (so each `next` runs the rest of the chain at
//! most once) and the scratch memory the steps' futures are placed in. The futures placed there
//! are always owned by something that also holds a reference to the chain (the caller's driver
//! keeps its reference until its step's future is dropped), so the memory outlives them.

#![allow(
    unsafe_code,
    reason = "the chain crosses the boundary as a counted raw pointer with an extern vtable"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::std_types::{RArc, RErr, ROk, RResult};
use dsh_plugin_api::abi::{ChainVTable, NextHandle, ScratchArea, WaterfallInnerBox, WaterfallStep};
use dsh_plugin_api::{ErrorKind, PluginError};

use super::bus::{ListenerEntry, ListenerKind, Slot};

/// Bytes of scratch memory per chain: with the rest of the chain this stays within the size the
/// allocator serves from its per-thread cache, and holds ten small listener futures.
const CHAIN_SCRATCH: usize = 1536;

/// Claim flags kept inline up to this many listeners.
const INLINE_CLAIMS: usize = 16;

enum Claims {
    Inline([AtomicBool; INLINE_CLAIMS]),
    Heap(Box<[AtomicBool]>),
}

impl Claims {
    fn new(listeners: usize) -> Self {
        if listeners <= INLINE_CLAIMS {
            Self::Inline([const { AtomicBool::new(false) }; INLINE_CLAIMS])
        } else {
            Self::Heap((0..listeners).map(|_| AtomicBool::new(false)).collect())
        }
    }

    /// Marks listener `index`'s continuation as used; true when it already was.
    fn claim(&self, index: usize) -> bool {
        let flags: &[AtomicBool] = match self {
            Self::Inline(flags) => flags,
            Self::Heap(flags) => flags,
        };
        // An index past the end cannot come from a handle the host made; refuse it as used.
        flags
            .get(index)
            .is_none_or(|flag| flag.swap(true, Ordering::AcqRel))
    }
}

pub(super) struct Chain {
    slot: Arc<Slot>,
    listeners: Arc<Vec<Arc<ListenerEntry>>>,
    claims: Claims,
    inner: WaterfallInnerBox,
    payload: RArc<()>,
    scratch: ScratchArea<CHAIN_SCRATCH>,
}

static VTABLE: ChainVTable = ChainVTable {
    next: chain_next,
    failed: chain_failed,
    retain: chain_retain,
    release: chain_release,
};

impl Chain {
    /// Builds the chain over the slot's current listeners and returns the reference that starts
    /// it.
    pub(super) fn start(
        slot: Arc<Slot>,
        payload: RArc<()>,
        inner: WaterfallInnerBox,
    ) -> NextHandle {
        let listeners = slot.snapshot();
        let chain = Arc::new(Chain {
            slot,
            claims: Claims::new(listeners.len()),
            listeners,
            inner,
            payload,
            scratch: ScratchArea::new(),
        });
        // SAFETY: the reference made by `Arc::new` is handed over to the handle.
        unsafe { NextHandle::adopt(Arc::into_raw(chain).cast(), NextHandle::START, &VTABLE) }
    }

    /// Starts the first live listener at or after `index`, or the innermost default.
    fn step_from(&self, me: *const (), mut index: usize) -> RResult<WaterfallStep, PluginError> {
        loop {
            let Some(entry) = self.listeners.get(index) else {
                let future = self.inner.run(self.payload.clone(), self.scratch.lend());
                return ROk(WaterfallStep { index, future });
            };
            if !entry.is_alive() {
                index += 1;
                continue;
            }
            let ListenerKind::Waterfall(listener) = &entry.kind else {
                return RErr(PluginError::new(
                    ErrorKind::Dispatch,
                    format!("listener of `{}` has the wrong kind", self.slot.name),
                ));
            };
            // SAFETY: `me` is this chain, kept alive by the caller's reference; the new one is
            // handed to the listener's `next`.
            let next = unsafe {
                Arc::increment_strong_count(me.cast::<Chain>());
                NextHandle::adopt(me, index, &VTABLE)
            };
            let future = listener.call(self.payload.clone(), next, self.scratch.lend());
            return ROk(WaterfallStep { index, future });
        }
    }

    fn owner(&self, index: usize) -> &str {
        self.listeners
            .get(index)
            .map_or("?", |entry| entry.owner.as_str())
    }
}

/// # Safety
/// `chain` comes from a live `NextHandle` made by this module.
unsafe fn chain_ref<'a>(chain: *const ()) -> &'a Chain {
    // SAFETY: per the function's contract.
    unsafe { &*chain.cast::<Chain>() }
}

unsafe extern "C" fn chain_next(
    chain: *const (),
    after: usize,
) -> RResult<WaterfallStep, PluginError> {
    // SAFETY: the vtable is only reached through a live handle.
    let this = unsafe { chain_ref(chain) };
    if after == NextHandle::START {
        return this.step_from(chain, 0);
    }
    if this.claims.claim(after) {
        return RErr(PluginError::new(
            ErrorKind::Dispatch,
            format!(
                "`next` called twice by the `{}` listener of {}",
                this.slot.name,
                this.owner(after)
            ),
        ));
    }
    this.step_from(chain, after + 1)
}

unsafe extern "C" fn chain_failed(
    chain: *const (),
    index: usize,
    error: PluginError,
) -> RResult<WaterfallStep, PluginError> {
    // SAFETY: as in `chain_next`.
    let this = unsafe { chain_ref(chain) };
    if index >= this.listeners.len() {
        // The innermost default belongs to the dispatcher: its error is the dispatch's.
        return RErr(error);
    }
    tracing::error!(
        event = %this.slot.name,
        listener = %this.owner(index),
        "listener failed: {error}"
    );
    // Claimed either way: if the rest of the chain already ran for this listener, running it
    // again would repeat its effects; if not, a `next` the failed listener kept must not start a
    // second run later.
    if this.claims.claim(index) {
        return RErr(error);
    }
    this.step_from(chain, index + 1)
}

unsafe extern "C" fn chain_retain(chain: *const ()) {
    // SAFETY: the caller holds a reference, so the count is at least one.
    unsafe { Arc::increment_strong_count(chain.cast::<Chain>()) }
}

unsafe extern "C" fn chain_release(chain: *const ()) {
    // SAFETY: gives up one reference made by `Chain::start` or `chain_retain`.
    unsafe { Arc::decrement_strong_count(chain.cast::<Chain>()) }
}
