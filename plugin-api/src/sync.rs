//! Locking that survives a contained panic.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking it over if a panic poisoned it. Panics in plugin code are caught at the
/// boundary and the host goes on; the data behind a lock is updated field by field, so a
/// poisoned lock still guards consistent values and refusing it would only spread the failure.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
