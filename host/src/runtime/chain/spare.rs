//! Where an event's last chain block waits for the event's next waterfall dispatch.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};

use super::ChainBlock;

/// The block an event's last chain left behind, for its next dispatch. Its swaps are `SeqCst`,
/// like the slot's generation: a release that parks a block and then reads the generation, and a
/// listener change that bumps the generation and then takes the parked block, must not both miss
/// each other.
#[derive(Default)]
pub(in crate::runtime) struct SpareChain(AtomicPtr<ChainBlock>);

impl SpareChain {
    pub(super) fn take(&self) -> Option<NonNull<ChainBlock>> {
        NonNull::new(self.0.swap(std::ptr::null_mut(), Ordering::SeqCst))
    }

    /// # Safety
    /// `block` holds no state and no references.
    pub(super) unsafe fn park(&self, block: NonNull<ChainBlock>) {
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
    pub(in crate::runtime) fn forget_snapshot(&self) {
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
