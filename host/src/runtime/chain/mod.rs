//! The host's side of a waterfall dispatch: the chain that plugins drive through counted
//! references ([`NextHandle`]).
//!
//! A chain holds the listener snapshot, the payload, the innermost default, one link per level
//! (the start, each listener, the innermost default: what a `next` points at, the slot the level's
//! future lives in, and a claim flag, so each `next` runs the rest of the chain at most once) and
//! the scratch memory the steps' futures are placed in. The futures placed there are always owned
//! by something that also holds a reference to the chain (the caller's driver keeps its reference
//! until its step's future is dropped), so the memory outlives them. When the last reference
//! goes, the block is parked in its event's slot and the next dispatch of that event reuses it,
//! links included: a chain is a few kilobytes, past the allocator's per-thread cache, and
//! allocating, copying and freeing it per dispatch cost a waterfall without listeners 188 ns
//! instead of 175.

#![allow(
    unsafe_code,
    reason = "the chain crosses the boundary as a counted raw pointer with an extern vtable"
)]

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::{NonNull, addr_of_mut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};

use abi_stable::std_types::{RArc, RBox};
use dsh_plugin_api::abi::{
    BoxedError, ChainVTable, Link, NextHandle, ScratchArea, WaterfallInnerBox, WaterfallListenerBox,
};
use dsh_plugin_api::{ErrorKind, PluginError};

use super::bus::{ListenerEntry, ListenerKind, Slot};
use super::dispatch::report;

mod spare;
pub(super) use spare::SpareChain;

/// Bytes of scratch memory per chain: ten listener futures of the size the typed adapters make
/// for a small `async move` block that awaits `next` (184 bytes), and the innermost default.
const CHAIN_SCRATCH: usize = 2048;

/// Links kept inline for chains of up to this many listeners.
const INLINE_LINKS: usize = 16;

/// The index of the link that starts a chain.
const START: usize = usize::MAX;

/// The reference count's part of a chain's `counts` word (four billion live references, far
/// past what a chain can have); the claims of its first 32 listeners are the bits above.
const REF_MASK: u64 = u32::MAX as u64;

/// The bit of `counts` that records the claim of listener `index`'s continuation, for the
/// first 32 listeners (the others use their link's flag).
fn claim_bit(index: usize) -> Option<u64> {
    (index < 32).then(|| 1_u64 << (32 + index))
}

/// What one dispatch puts in a chain block.
struct ChainState {
    slot: Arc<Slot>,
    listeners: Arc<Snapshot>,
    /// The slot generation `listeners` was filed under.
    generation: u64,
    inner: WaterfallInnerBox,
    /// The links of chains with more than [`INLINE_LINKS`] listeners.
    more_links: Option<Box<[LinkRecord]>>,
}

/// A level of a chain: the link plugins see, and what the host keeps beside it.
#[repr(C)]
struct LinkRecord {
    /// First, so a `*const Link` the host handed out is a `*const LinkRecord`.
    link: Link,
    block: *const ChainBlock,
    /// The listener's position in the snapshot; the snapshot's length for the innermost
    /// default; [`START`] for the chain's start.
    index: usize,
    /// Whether the listener's continuation was used (run, or given up by failing), for
    /// listeners past the 32 whose claims are bits of the block's `counts`.
    claimed: AtomicBool,
}

impl LinkRecord {
    /// # Safety
    /// `block` points to an allocated block whose payload cell and scratch area are initialized
    /// (zeroed is fine), and the record lives no longer than the block.
    unsafe fn new(block: *const ChainBlock, index: usize) -> Self {
        // SAFETY: per the contract, the fields exist; the payload is read only while a chain
        // runs, when it is initialized.
        let (payload, scratch) = unsafe {
            (
                UnsafeCell::raw_get(std::ptr::addr_of!((*block).payload))
                    .cast_const()
                    .cast(),
                // The steps of a chain start one after another (see `ChainBlock::start`).
                (*block).scratch.lend_exclusive(),
            )
        };
        Self {
            // SAFETY: the payload and scratch outlive the record, per the contract.
            link: unsafe { Link::new(&VTABLE, payload, scratch) },
            block,
            index,
            claimed: AtomicBool::new(false),
        }
    }

    /// The link, as a pointer that reaches the whole record (the host reads the record back
    /// through the links plugins hand it).
    fn link_ptr(&self) -> NonNull<Link> {
        NonNull::from(self).cast()
    }
}

type Snapshot = Vec<Arc<ListenerEntry>>;

/// A chain's memory. Every field but the links is valid when zeroed; a new block is one zeroed
/// allocation whose links are then written once, for good (they point into the block).
struct ChainBlock {
    /// The reference count (the low 32 bits) and the first 32 listeners' claims (the bits
    /// above): one word, so a `next` claims its listener's continuation and counts the reference
    /// of the step it starts in one atomic operation (a third of a level's atomics).
    counts: AtomicU64,
    /// Initialized from `start` until the last reference is released.
    state: UnsafeCell<MaybeUninit<ChainState>>,
    /// The payload, initialized like `state`; in a field of its own so its address, which every
    /// link carries, is fixed.
    payload: UnsafeCell<MaybeUninit<RArc<()>>>,
    /// The listener snapshot a parked block keeps for the next dispatch (`Arc::into_raw`, null
    /// when none), and the slot generation it was taken at: reusing it spares the dispatch the
    /// slot's lock and two reference counts.
    cached: UnsafeCell<*const Snapshot>,
    cached_generation: UnsafeCell<u64>,
    start: LinkRecord,
    /// One per listener, then the innermost default's.
    links: [LinkRecord; INLINE_LINKS + 1],
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
        // SAFETY: the layout is not zero-sized; all-zero bytes are valid for every field but the
        // links (atomics, uninitialized cells, a null cache and scratch bytes), written next.
        let block = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<ChainBlock>();
        let block = NonNull::new(block).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        let raw = block.as_ptr();
        // SAFETY: the links are written before anything makes a reference to the block; the
        // fields their constructor reads are valid zeroed.
        unsafe {
            addr_of_mut!((*raw).start).write(LinkRecord::new(raw, START));
            for index in 0..=INLINE_LINKS {
                addr_of_mut!((*raw).links[index]).write(LinkRecord::new(raw, index));
            }
        }
        block
    }

    /// # Safety
    /// `block` came from `allocate`, holds no state and no references.
    unsafe fn free(block: NonNull<ChainBlock>) {
        // SAFETY: per the contract, nobody else reaches the block.
        drop(unsafe { block.as_ref().take_cache() });
        // SAFETY: per the contract; `ChainBlock` has no drop glue besides its state and payload,
        // which are not initialized, its cache, just emptied, and its links, which own nothing.
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

    /// The link of listener `index`, or the innermost default's for the snapshot's length.
    fn record(&self, index: usize) -> Option<&LinkRecord> {
        match &self.state().more_links {
            Some(links) => links.get(index),
            None => self.links.get(index),
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
    let more_links = if listeners.len() > INLINE_LINKS {
        let raw = block.as_ptr().cast_const();
        // SAFETY: the block is allocated and outlives the state these records go into.
        Some(
            (0..=listeners.len())
                .map(|index| unsafe { LinkRecord::new(raw, index) })
                .collect(),
        )
    } else {
        // Inline links are for chains of up to 16 listeners, whose claims are all bits.
        None
    };
    // SAFETY: as above; nothing is placed in the scratch memory of a block without references.
    unsafe {
        this.scratch.reset();
        (*this.payload.get()).write(payload);
        (*this.state.get()).write(ChainState {
            slot,
            listeners,
            generation,
            inner,
            more_links,
        });
    }
    // One reference, no claims.
    this.counts.store(1, Ordering::Release);
    // SAFETY: the one reference just counted is handed over to the handle.
    unsafe { NextHandle::adopt(this.start.link_ptr()) }
}

/// Answers a failure through a chain function's error slot.
///
/// # Safety
/// `error` is the slot the caller passed.
unsafe fn fail(error: *mut MaybeUninit<BoxedError>, failure: BoxedError) -> *const Link {
    // SAFETY: per the contract.
    unsafe { (*error).write(failure) };
    std::ptr::null()
}

/// The step a `next` or a failure leads to.
enum Target<'a> {
    Listener(&'a WaterfallListenerBox, &'a LinkRecord),
    Inner(&'a LinkRecord),
    /// A listener the chain cannot run (of another kind, or past its links).
    Broken(usize),
}

impl ChainBlock {
    /// The first live listener at or after `index`, or the innermost default.
    fn target(&self, mut index: usize) -> Target<'_> {
        let state = self.state();
        loop {
            let Some(entry) = state.listeners.get(index) else {
                return self
                    .record(index)
                    .map_or(Target::Broken(index), Target::Inner);
            };
            if !entry.is_alive() {
                index += 1;
                continue;
            }
            return match (&entry.kind, self.record(index)) {
                (ListenerKind::Waterfall(listener), Some(record)) => {
                    Target::Listener(listener, record)
                }
                _ => Target::Broken(index),
            };
        }
    }

    /// Claims the continuation of listener `claimer` (none for the chain's start) and, when
    /// `target` is a listener, counts the reference its `next` will hold: in one atomic
    /// operation for the first 32 listeners. False when the continuation was claimed already
    /// (nothing is counted then).
    fn claim_for(&self, claimer: Option<usize>, target: &Target<'_>) -> bool {
        let counted = u64::from(matches!(target, Target::Listener(..)));
        let Some(claimer) = claimer else {
            if counted > 0 {
                self.counts.fetch_add(counted, Ordering::Relaxed);
            }
            return true;
        };
        let Some(bit) = claim_bit(claimer) else {
            let claimed = self
                .record(claimer)
                .is_none_or(|record| record.claimed.swap(true, Ordering::AcqRel));
            if !claimed && counted > 0 {
                self.counts.fetch_add(counted, Ordering::Relaxed);
            }
            return !claimed;
        };
        let mut current = self.counts.load(Ordering::Acquire);
        loop {
            if current & bit != 0 {
                return false;
            }
            match self.counts.compare_exchange_weak(
                current,
                (current | bit) + counted,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => current = now,
            }
        }
    }

    /// Starts `target`, whose reference (for a listener) was counted by the claim that chose
    /// it, and answers its link.
    ///
    /// Steps start one after another, each after the one before it: a step is started by the
    /// `next` or the failure of the step before it (whose start came first, and whose handle or
    /// outcome reached the starter through the executor's own synchronization), and each claim
    /// starts at most one step. So the links' exclusive scratch regions never reserve at the
    /// same time.
    ///
    /// # Safety
    /// `error` is the slot of the chain function this is called from; `self` is reached through
    /// a live reference.
    unsafe fn start(&self, target: Target<'_>, error: *mut MaybeUninit<BoxedError>) -> *const Link {
        match target {
            Target::Listener(listener, record) => {
                // SAFETY: the reference counted by the claim goes to the listener's `next`.
                listener.call(unsafe { NextHandle::adopt(record.link_ptr()) });
                record.link_ptr().as_ptr()
            }
            Target::Inner(record) => {
                let link = record.link_ptr().as_ptr().cast_const();
                self.state().inner.run(link);
                link
            }
            // SAFETY: per the contract.
            Target::Broken(index) => unsafe { fail(error, self.broken(index)) },
        }
    }

    /// The failure for a listener the chain cannot run: one of another kind, or past its links.
    fn broken(&self, index: usize) -> BoxedError {
        RBox::new(PluginError::new(
            ErrorKind::Dispatch,
            format!(
                "listener {index} of `{}` cannot run in a waterfall",
                self.state().slot.name
            ),
        ))
    }

    fn owner(&self, index: usize) -> &str {
        self.state()
            .listeners
            .get(index)
            .map_or("?", |entry| entry.owner.as_str())
    }
}

/// # Safety
/// `link` is a link of a live chain made by this module.
unsafe fn record_of<'a>(link: *const Link) -> (&'a LinkRecord, &'a ChainBlock) {
    // SAFETY: per the contract; every link this module hands out is the first field of a
    // `LinkRecord`, which points to its block.
    unsafe {
        let record = &*link.cast::<LinkRecord>();
        (record, &*record.block)
    }
}

unsafe extern "C" fn chain_next(
    link: *const Link,
    error: *mut MaybeUninit<BoxedError>,
) -> *const Link {
    // SAFETY: the vtable is only reached through a live handle.
    let (record, this) = unsafe { record_of(link) };
    let claimer = (record.index != START).then_some(record.index);
    let target = this.target(claimer.map_or(0, |index| index + 1));
    if !this.claim_for(claimer, &target) {
        let failure = PluginError::new(
            ErrorKind::Dispatch,
            format!(
                "`next` called twice by the `{}` listener of {}",
                this.state().slot.name,
                this.owner(record.index)
            ),
        );
        // SAFETY: the caller's error slot.
        return unsafe { fail(error, RBox::new(failure)) };
    }
    // SAFETY: called through a live handle with the caller's error slot.
    unsafe { this.start(target, error) }
}

unsafe extern "C" fn chain_failed(
    step: *const Link,
    failure: BoxedError,
    error: *mut MaybeUninit<BoxedError>,
) -> *const Link {
    // SAFETY: as in `chain_next`.
    let (record, this) = unsafe { record_of(step) };
    let state = this.state();
    let Some(entry) = state.listeners.get(record.index) else {
        // The innermost default belongs to the dispatcher: its failure is the dispatch's.
        // SAFETY: the caller's error slot.
        return unsafe { fail(error, failure) };
    };
    // Claimed either way: if the rest of the chain already ran for this listener, running it
    // again would repeat its effects, and the failure goes on outward as the chain's (logged by
    // whoever ends up with it, not once per level it crosses); if not, a `next` the failed
    // listener kept must not start a second run later, and the listener is skipped.
    let target = this.target(record.index + 1);
    if !this.claim_for(Some(record.index), &target) {
        // SAFETY: as above.
        return unsafe { fail(error, failure) };
    }
    report(&state.slot.name, entry, &failure);
    // SAFETY: as above.
    unsafe { this.start(target, error) }
}

unsafe extern "C" fn chain_release(link: *const Link) {
    // SAFETY: the caller gives up a reference it holds.
    let (record, this) = unsafe { record_of(link) };
    // Taken now: the record may live in `more_links`, dropped below.
    let block = record.block;
    if this.counts.fetch_sub(1, Ordering::Release) & REF_MASK != 1 {
        return;
    }
    // The last reference: every use of the block by other references happened before.
    fence(Ordering::Acquire);
    // SAFETY: no references are left, so nothing reads the state or the payload or uses the
    // scratch memory (every future placed there was dropped before its owner released its
    // reference).
    let (
        ChainState {
            slot,
            listeners,
            generation,
            inner,
            more_links,
        },
        payload,
    ) = unsafe {
        (
            (*this.state.get()).assume_init_read(),
            (*this.payload.get()).assume_init_read(),
        )
    };
    // Plugin code (the innermost default's destructor, the payload's) runs before the block is
    // parked, so it cannot reach a block that is already being reused.
    drop((inner, payload, more_links));
    // SAFETY: no references are left and the block is not parked: it is owned here; the cache
    // was emptied by `start`.
    unsafe { this.put_cache(generation, listeners) };
    if let Some(block) = NonNull::new(block.cast_mut()) {
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
