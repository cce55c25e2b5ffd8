//! The host's side of a waterfall dispatch: the chain that plugins drive through counted
//! references ([`NextHandle`]).
//!
//! A chain holds the listener snapshot, the payload, the innermost default, one claim flag per
//! listener (so each `next` runs the rest of the chain at most once) and the scratch memory the
//! steps' futures are placed in. The futures placed there are always owned by something that also
//! holds a reference to the chain (the caller's driver keeps its reference until its step's future
//! is dropped), so the memory outlives them. When the last reference goes, the block is parked in
//! its event's slot and the next dispatch of that event reuses it: a chain is a couple of
//! kilobytes, past the allocator's per-thread cache, and allocating, copying and freeing it per
//! dispatch cost a waterfall without listeners 188 ns instead of 175.

#![allow(
    unsafe_code,
    reason = "the chain crosses the boundary as a counted raw pointer with an extern vtable"
)]

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence};

use abi_stable::std_types::{RArc, RBox, RErr, ROk, RResult};
use dsh_plugin_api::abi::{
    BoxedError, ChainVTable, NextHandle, ScratchArea, WaterfallInnerBox, WaterfallStep,
};
use dsh_plugin_api::{ErrorKind, PluginError};

use super::bus::{ListenerEntry, ListenerKind, Slot};
use super::dispatch::report;

/// Bytes of scratch memory per chain: ten listener futures of the size the typed adapters make
/// for a small `async move` block that awaits `next` (184 bytes), and the innermost default.
const CHAIN_SCRATCH: usize = 2048;

/// Claim flags kept inline up to this many listeners.
const INLINE_CLAIMS: usize = 16;

/// What one dispatch puts in a chain block.
struct ChainState {
    slot: Arc<Slot>,
    listeners: Arc<Snapshot>,
    /// The slot generation `listeners` was filed under.
    generation: u64,
    inner: WaterfallInnerBox,
    payload: RArc<()>,
    /// Claim flags for chains with more than [`INLINE_CLAIMS`] listeners.
    more_claims: Option<Box<[AtomicBool]>>,
}

type Snapshot = Vec<Arc<ListenerEntry>>;

/// A chain's memory; every field is valid when zeroed, so a new block is one zeroed allocation.
struct ChainBlock {
    refs: AtomicUsize,
    /// Initialized from `Chain::start` until the last reference is released.
    state: UnsafeCell<MaybeUninit<ChainState>>,
    /// The listener snapshot a parked block keeps for the next dispatch (`Arc::into_raw`, null
    /// when none), and the slot generation it was taken at: reusing it spares the dispatch the
    /// slot's lock and two reference counts.
    cached: UnsafeCell<*const Snapshot>,
    cached_generation: UnsafeCell<u64>,
    claims: [AtomicBool; INLINE_CLAIMS],
    scratch: ScratchArea<CHAIN_SCRATCH>,
}

// SAFETY: `state` and the cache are written only while the block has no references (before
// `start` hands out the first, after the last is released, or while parked and taken) and `state`
// is read while it has some.
unsafe impl Sync for ChainBlock {}
unsafe impl Send for ChainBlock {}

impl ChainBlock {
    fn allocate() -> NonNull<ChainBlock> {
        let layout = std::alloc::Layout::new::<ChainBlock>();
        // SAFETY: the layout is not zero-sized; all-zero bytes are a valid `ChainBlock` (atomics,
        // uninitialized cells and scratch bytes).
        let block = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<ChainBlock>();
        NonNull::new(block).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
    }

    /// # Safety
    /// `block` came from `allocate`, holds no state and no references.
    unsafe fn free(block: NonNull<ChainBlock>) {
        // SAFETY: per the contract, nobody else reaches the block.
        drop(unsafe { block.as_ref().take_cache() });
        // SAFETY: per the contract; `ChainBlock` has no drop glue besides its state, which is
        // not initialized, and its cache, just emptied.
        unsafe {
            std::alloc::dealloc(
                block.as_ptr().cast(),
                std::alloc::Layout::new::<ChainBlock>(),
            )
        }
    }

    /// Empties the cache, answering what it held.
    ///
    /// # Safety
    /// The caller owns the block exclusively (no references, not parked).
    unsafe fn take_cache(&self) -> Option<(u64, Arc<Snapshot>)> {
        // SAFETY: exclusive access per the contract; a non-null pointer came from `into_raw`.
        unsafe {
            let raw = std::mem::replace(&mut *self.cached.get(), std::ptr::null());
            (!raw.is_null()).then(|| (*self.cached_generation.get(), Arc::from_raw(raw)))
        }
    }

    /// # Safety
    /// As for [`take_cache`](Self::take_cache); the cache is empty.
    unsafe fn put_cache(&self, generation: u64, listeners: Arc<Snapshot>) {
        // SAFETY: exclusive access per the contract.
        unsafe {
            *self.cached_generation.get() = generation;
            *self.cached.get() = Arc::into_raw(listeners);
        }
    }

    fn state(&self) -> &ChainState {
        // SAFETY: called only through a live reference, while the state is initialized.
        unsafe { (*self.state.get()).assume_init_ref() }
    }

    /// Marks listener `index`'s continuation as used; true when it already was.
    fn claim(&self, index: usize) -> bool {
        let state = self.state();
        let flags: &[AtomicBool] = match &state.more_claims {
            Some(flags) => flags,
            None => self.claims.get(..state.listeners.len()).unwrap_or(&[]),
        };
        // An index past the end cannot come from a handle the host made; refuse it as used.
        flags
            .get(index)
            .is_none_or(|flag| flag.swap(true, Ordering::AcqRel))
    }
}

/// The block an event's last chain left behind, for its next dispatch. Its swaps are `SeqCst`,
/// like the slot's generation: a release that parks a block and then reads the generation, and a
/// listener change that bumps the generation and then takes the parked block, must not both miss
/// each other.
#[derive(Default)]
pub(super) struct SpareChain(AtomicPtr<ChainBlock>);

impl SpareChain {
    fn take(&self) -> Option<NonNull<ChainBlock>> {
        NonNull::new(self.0.swap(std::ptr::null_mut(), Ordering::SeqCst))
    }

    /// # Safety
    /// `block` holds no state and no references.
    unsafe fn park(&self, block: NonNull<ChainBlock>) {
        let previous = self.0.swap(block.as_ptr(), Ordering::SeqCst);
        if let Some(previous) = NonNull::new(previous) {
            // SAFETY: a parked block holds no state and no references.
            unsafe { ChainBlock::free(previous) }
        }
    }
}

impl SpareChain {
    /// Drops the snapshot a parked block keeps: called after the slot's listeners changed, so a
    /// removed listener is not kept alive by a block nobody dispatches with.
    pub(super) fn forget_snapshot(&self) {
        let Some(block) = self.take() else {
            return;
        };
        // SAFETY: a taken block is owned exclusively and holds no state or references.
        let stale = unsafe { block.as_ref().take_cache() };
        // SAFETY: as above.
        unsafe { self.park(block) };
        drop(stale);
    }
}

impl Drop for SpareChain {
    fn drop(&mut self) {
        if let Some(block) = self.take() {
            // SAFETY: as in `park`.
            unsafe { ChainBlock::free(block) }
        }
    }
}

static VTABLE: ChainVTable = ChainVTable {
    next: chain_next,
    failed: chain_failed,
    release: chain_release,
};

/// Builds a chain over the slot's current listeners and returns the reference that starts it.
pub(super) fn start(slot: Arc<Slot>, payload: RArc<()>, inner: WaterfallInnerBox) -> NextHandle {
    let block = slot.spare_chain.take().unwrap_or_else(ChainBlock::allocate);
    // SAFETY: a fresh or parked block holds no state and no references: this is the only access.
    let this = unsafe { block.as_ref() };
    // Read before the snapshot: if the listeners change in between, the snapshot is newer than
    // the generation it is filed under, and the next dispatch merely takes a fresh one.
    let generation = slot.generation();
    // SAFETY: exclusive access, as above.
    let listeners = match unsafe { this.take_cache() } {
        Some((cached_generation, listeners)) if cached_generation == generation => listeners,
        _ => slot.snapshot(),
    };
    let more_claims = if listeners.len() > INLINE_CLAIMS {
        Some(
            (0..listeners.len())
                .map(|_| AtomicBool::new(false))
                .collect(),
        )
    } else {
        for flag in &this.claims[..listeners.len()] {
            flag.store(false, Ordering::Relaxed);
        }
        None
    };
    // SAFETY: as above; nothing is placed in the scratch memory of a block without references.
    unsafe {
        this.scratch.reset();
        (*this.state.get()).write(ChainState {
            slot,
            listeners,
            generation,
            inner,
            payload,
            more_claims,
        });
    }
    this.refs.store(1, Ordering::Release);
    // SAFETY: the one reference just counted is handed over to the handle.
    unsafe {
        NextHandle::adopt(
            block.as_ptr().cast_const().cast(),
            NextHandle::START,
            &VTABLE,
        )
    }
}

impl ChainBlock {
    /// Starts the first live listener at or after `index`, or the innermost default.
    fn step_from(&self, me: *const (), mut index: usize) -> RResult<WaterfallStep, BoxedError> {
        let state = self.state();
        // SAFETY: steps start one after another, each after the one before it: a step is started
        // by the `next` or the failure of the step before it (whose start came first, and whose
        // handle or outcome reached the starter through the executor's own synchronization), and
        // each claim starts at most one step. So no two reservations from this area overlap in
        // time, and the exclusive region is sound.
        let scratch = unsafe { self.scratch.lend_exclusive() };
        loop {
            let Some(entry) = state.listeners.get(index) else {
                let future = state.inner.run(state.payload.clone(), scratch);
                return ROk(WaterfallStep { index, future });
            };
            if !entry.is_alive() {
                index += 1;
                continue;
            }
            let ListenerKind::Waterfall(listener) = &entry.kind else {
                return RErr(RBox::new(PluginError::new(
                    ErrorKind::Dispatch,
                    format!("listener of `{}` has the wrong kind", state.slot.name),
                )));
            };
            self.refs.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the reference just counted goes to the listener's `next`.
            let next = unsafe { NextHandle::adopt(me, index, &VTABLE) };
            let future = listener.call(state.payload.clone(), next, scratch);
            return ROk(WaterfallStep { index, future });
        }
    }

    fn owner(&self, index: usize) -> &str {
        self.state()
            .listeners
            .get(index)
            .map_or("?", |entry| entry.owner.as_str())
    }
}

/// # Safety
/// `chain` comes from a live `NextHandle` made by this module.
unsafe fn chain_ref<'a>(chain: *const ()) -> &'a ChainBlock {
    // SAFETY: per the function's contract.
    unsafe { &*chain.cast::<ChainBlock>() }
}

unsafe extern "C" fn chain_next(
    chain: *const (),
    after: usize,
) -> RResult<WaterfallStep, BoxedError> {
    // SAFETY: the vtable is only reached through a live handle.
    let this = unsafe { chain_ref(chain) };
    if after == NextHandle::START {
        return this.step_from(chain, 0);
    }
    if this.claim(after) {
        return RErr(RBox::new(PluginError::new(
            ErrorKind::Dispatch,
            format!(
                "`next` called twice by the `{}` listener of {}",
                this.state().slot.name,
                this.owner(after)
            ),
        )));
    }
    this.step_from(chain, after + 1)
}

unsafe extern "C" fn chain_failed(
    chain: *const (),
    index: usize,
    error: BoxedError,
) -> RResult<WaterfallStep, BoxedError> {
    // SAFETY: as in `chain_next`.
    let this = unsafe { chain_ref(chain) };
    let state = this.state();
    let Some(entry) = state.listeners.get(index) else {
        // The innermost default belongs to the dispatcher: its error is the dispatch's.
        return RErr(error);
    };
    // Claimed either way: if the rest of the chain already ran for this listener, running it
    // again would repeat its effects, and the error goes on outward as the chain's (logged by
    // whoever ends up with it, not once per level it crosses); if not, a `next` the failed
    // listener kept must not start a second run later, and the listener is skipped.
    if this.claim(index) {
        return RErr(error);
    }
    report(&state.slot.name, entry, &error);
    this.step_from(chain, index + 1)
}

unsafe extern "C" fn chain_release(chain: *const ()) {
    // SAFETY: the caller gives up a reference it holds.
    let this = unsafe { chain_ref(chain) };
    if this.refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    // The last reference: every use of the block by other references happened before.
    fence(Ordering::Acquire);
    // SAFETY: no references are left, so nothing reads the state or uses the scratch memory
    // (every future placed there was dropped before its owner released its reference).
    let ChainState {
        slot,
        listeners,
        generation,
        inner,
        payload,
        more_claims,
    } = unsafe { (*this.state.get()).assume_init_read() };
    // Plugin code (the innermost default's destructor, the payload's) runs before the block is
    // parked, so it cannot reach a block that is already being reused.
    drop((inner, payload, more_claims));
    // SAFETY: no references are left and the block is not parked: it is owned here; the cache
    // was emptied by `start`.
    unsafe { this.put_cache(generation, listeners) };
    if let Some(block) = NonNull::new(chain.cast_mut().cast::<ChainBlock>()) {
        // SAFETY: the block holds no state and no references now.
        unsafe { slot.spare_chain.park(block) };
    }
    // The listeners may have changed while this chain ran, after the change dropped the parked
    // block's snapshot: then drop the one just parked (the generation is bumped before that drop,
    // so one of the two sees the other).
    if slot.generation() != generation {
        slot.spare_chain.forget_snapshot();
    }
}
