//! A value of an erased type passed by value across the boundary, kept inline when it is small.
//!
//! A waterfall hands its value from each listener to the one outside it; boxing it at every
//! level cost an allocation and a free per listener. Values of at most four words (numbers,
//! `RArc`, `RBox`, `RString`, `RVec`) now travel inline; larger ones are boxed. Both sides know the
//! type (the host checked its layout when the event was declared), so both make the same choice.

#![allow(unsafe_code, reason = "type erasure at the ABI edge")]

use std::mem::{ManuallyDrop, MaybeUninit, align_of, size_of};

use abi_stable::StableAbi;

const INLINE_WORDS: usize = 4;
type Inline = [MaybeUninit<u64>; INLINE_WORDS];

/// An erased `R`, inline or boxed; dropping it drops the `R`.
#[repr(C)]
#[derive(StableAbi)]
pub struct ErasedValue {
    data: Inline,
    drop_fn: unsafe extern "C" fn(data: *mut Inline),
}

// SAFETY: only built from `Send` values (see `erase_value`).
unsafe impl Send for ErasedValue {}

const fn fits_inline<R>() -> bool {
    size_of::<R>() <= size_of::<Inline>() && align_of::<R>() <= align_of::<Inline>()
}

unsafe extern "C" fn drop_inline<R>(data: *mut Inline) {
    // A panicking destructor must not unwind through `extern "C"`.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `data` holds the `R` written by `erase_value`, dropped exactly once.
        unsafe { std::ptr::drop_in_place(data.cast::<R>()) }
    }));
}

unsafe extern "C" fn drop_boxed<R>(data: *mut Inline) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the first word holds the box made by `erase_value`, dropped exactly once.
        drop(unsafe { Box::from_raw(data.cast::<*mut R>().read()) })
    }));
}

/// Erases `value`, inline when it fits.
pub(crate) fn erase_value<R: Send + 'static>(value: R) -> ErasedValue {
    let mut data: Inline = [MaybeUninit::uninit(); INLINE_WORDS];
    let slot = data.as_mut_ptr().cast::<u8>();
    if fits_inline::<R>() {
        // SAFETY: `data` is large and aligned enough for `R` (checked by `fits_inline`).
        unsafe { slot.cast::<R>().write(value) };
        ErasedValue {
            data,
            drop_fn: drop_inline::<R>,
        }
    } else {
        // SAFETY: a pointer fits in the first word.
        unsafe { slot.cast::<*mut R>().write(Box::into_raw(Box::new(value))) };
        ErasedValue {
            data,
            drop_fn: drop_boxed::<R>,
        }
    }
}

/// Recovers a value whose type the host has checked against `R`.
pub(crate) fn unerase_value<R: 'static>(value: ErasedValue) -> R {
    let mut value = ManuallyDrop::new(value);
    let slot = value.data.as_mut_ptr().cast::<u8>();
    if fits_inline::<R>() {
        // SAFETY: the same type was written inline; `ManuallyDrop` keeps it from a second drop.
        unsafe { slot.cast::<R>().read() }
    } else {
        // SAFETY: the first word holds the box made by `erase_value` for this `R`.
        *unsafe { Box::from_raw(slot.cast::<*mut R>().read()) }
    }
}

impl Drop for ErasedValue {
    fn drop(&mut self) {
        // SAFETY: `drop_fn` matches how `data` was filled, and runs exactly once.
        unsafe { (self.drop_fn)(&mut self.data) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::std_types::{RString, RVec};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn small_and_large_values_round_trip() {
        assert_eq!(unerase_value::<u64>(erase_value(7_u64)), 7);
        let text = RString::from("hello");
        assert_eq!(
            unerase_value::<RString>(erase_value(text)).as_str(),
            "hello"
        );
        let big = [9_u64; 12];
        assert!(!fits_inline::<[u64; 12]>());
        assert_eq!(unerase_value::<[u64; 12]>(erase_value(big)), big);
        let list: RVec<u8> = vec![1, 2, 3].into();
        assert_eq!(unerase_value::<RVec<u8>>(erase_value(list)).len(), 3);
    }

    #[test]
    fn dropping_an_erased_value_drops_it_once() {
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        drop(erase_value(Counted(drops.clone())));
        drop(erase_value((Counted(drops.clone()), [0_u64; 8])));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        let kept = unerase_value::<Counted>(erase_value(Counted(drops.clone())));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        drop(kept);
        assert_eq!(drops.load(Ordering::SeqCst), 3);
    }
}
