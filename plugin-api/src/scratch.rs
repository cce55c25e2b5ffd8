//! The memory a dispatch lends the futures of its listener calls.
//!
//! Every listener call of the serial, parallel and waterfall modes used to box its future: an
//! allocation and a free per listener, and the allocator's slow path once its per-thread cache
//! for that size (seven chunks) overflowed in a ten-level chain. A dispatch now lends each call a
//! region of its own memory ([`Scratch`]): a future that fits is written there and later dropped
//! in place; one that does not is boxed as before. The lender ([`ScratchArea`]: inside a serial
//! or parallel dispatch's own state, or a waterfall's chain) keeps the region alive, and does not
//! hand the same bytes out again until every future placed in them has been dropped.

#![allow(unsafe_code, reason = "reservations in lent memory are raw pointers")]

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use abi_stable::StableAbi;

/// A region of a dispatch's memory lent to one listener call. Copying it is fine: every copy
/// hands out disjoint bytes through the same counter.
#[repr(C)]
#[derive(StableAbi, Clone, Copy)]
pub struct Scratch {
    base: *mut u8,
    capacity: usize,
    used: *const AtomicUsize,
    /// Whether only one thread reserves from the area at a time, with nothing else reserving
    /// until the call it was lent to returns: then a reservation needs no atomic
    /// read-modify-write, which was a tenth of a serial dispatch.
    exclusive: bool,
}

/// The counter of [`Scratch::none`]: with a capacity of zero it is never advanced.
static NO_SCRATCH_USED: AtomicUsize = AtomicUsize::new(0);

impl Scratch {
    /// A region nothing fits in: every future is boxed.
    pub fn none() -> Self {
        Self {
            base: NonNull::dangling().as_ptr(),
            capacity: 0,
            used: &NO_SCRATCH_USED,
            exclusive: true,
        }
    }

    /// Reserves `layout` in the region, or `None` when it does not fit in what is left.
    pub(crate) fn reserve(&self, layout: Layout) -> Option<NonNull<u8>> {
        if self.capacity == 0 {
            return None;
        }
        // SAFETY: `used` points to the counter of the area this region was lent from, which
        // outlives every call it is lent to.
        let used = unsafe { &*self.used };
        let mask = layout.align() - 1;
        let base = self.base as usize;
        let mut current = used.load(Ordering::Relaxed);
        loop {
            // Aligned by address: the region itself is only byte-aligned. Wrapping arithmetic
            // cannot hand out bytes outside the region: a wrapped `end` fails the check below.
            let start = (base.wrapping_add(current).wrapping_add(mask) & !mask).wrapping_sub(base);
            let end = start.wrapping_add(layout.size());
            if start < current || end < start || end > self.capacity {
                return None;
            }
            if self.exclusive {
                used.store(end, Ordering::Relaxed);
                // SAFETY: `start + size <= capacity`, so the range is inside the region.
                return NonNull::new(unsafe { self.base.add(start) });
            }
            // Relaxed is enough: the reserved bytes are disjoint from every other reservation,
            // and whoever polls the future placed there learns of it through the handle.
            match used.compare_exchange_weak(current, end, Ordering::Relaxed, Ordering::Relaxed) {
                // SAFETY: `start + size <= capacity`, so the range is inside the region.
                Ok(_) => return NonNull::new(unsafe { self.base.add(start) }),
                Err(seen) => current = seen,
            }
        }
    }
}

/// Memory a dispatch owns and lends to the futures of its listener calls.
pub struct ScratchArea<const N: usize> {
    used: AtomicUsize,
    bytes: UnsafeCell<[MaybeUninit<u8>; N]>,
}

// SAFETY: the bytes are only reached through reservations, which never overlap (the counter is
// atomic), and each reservation is used by the one future placed in it.
unsafe impl<const N: usize> Sync for ScratchArea<N> {}

impl<const N: usize> Default for ScratchArea<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ScratchArea<N> {
    pub const fn new() -> Self {
        Self {
            used: AtomicUsize::new(0),
            bytes: UnsafeCell::new([MaybeUninit::uninit(); N]),
        }
    }

    /// The region to lend to one call.
    ///
    /// # Safety
    /// The area does not move, is not freed and is not reset while a future placed through the
    /// region is alive (lend it from a pinned future's state or from heap memory that outlives
    /// those futures).
    pub unsafe fn lend(&self) -> Scratch {
        Scratch {
            base: self.bytes.get().cast(),
            capacity: N,
            used: &self.used,
            exclusive: false,
        }
    }

    /// [`lend`](Self::lend) for a lender that calls its listeners one at a time from one
    /// thread (a serial or parallel dispatch starting its listeners): the region it returns
    /// reserves without atomic read-modify-writes.
    ///
    /// # Safety
    /// As for [`lend`](Self::lend); and no other region of this area is reserved from while the
    /// call it is lent to runs.
    pub unsafe fn lend_exclusive(&self) -> Scratch {
        Scratch {
            exclusive: true,
            // SAFETY: the caller upholds `lend`'s contract as part of this one.
            ..unsafe { self.lend() }
        }
    }

    /// Bytes reserved since the last reset.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Makes the whole area available again.
    ///
    /// # Safety
    /// Every future placed in the area since the last reset has been dropped.
    pub unsafe fn reset(&self) {
        self.used.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_ranges_are_aligned_and_disjoint() {
        let area = ScratchArea::<256>::new();
        // SAFETY: nothing is placed in the reservations.
        let scratch = unsafe { area.lend() };
        let a = scratch
            .reserve(Layout::from_size_align(3, 1).unwrap())
            .unwrap();
        let b = scratch
            .reserve(Layout::from_size_align(16, 16).unwrap())
            .unwrap();
        assert_eq!(b.as_ptr() as usize % 16, 0);
        assert!(b.as_ptr() as usize >= a.as_ptr() as usize + 3);
        assert!(
            scratch
                .reserve(Layout::from_size_align(512, 8).unwrap())
                .is_none()
        );
        assert!(Scratch::none().reserve(Layout::new::<u8>()).is_none());
    }
}
