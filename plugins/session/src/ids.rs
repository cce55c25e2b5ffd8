//! Session ids and clocks.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Epoch milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn random_u64() -> u64 {
    // RandomState is seeded from the OS per process and per instance; mixing in a counter and
    // the clock makes every id distinct without a random-number dependency.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_i64(now_ms());
    hasher.finish()
}

/// A random UUID (version 4 layout), like the reference's session ids.
pub(crate) fn new_session_id() -> String {
    let (high, low) = (random_u64(), random_u64());
    dsh_protocol::uuid_v4_layout(high, low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_shaped_and_distinct() {
        let a = new_session_id();
        let b = new_session_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }
}
