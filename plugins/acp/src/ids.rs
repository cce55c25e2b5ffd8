//! Fresh ids in the UUID v4 layout the log's message ids have (the prompt's user message is
//! given its id here, so the turn that claims it is recognised).

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh id. Unique, not secret: the process-seeded hasher, a counter and the clock suffice.
pub(crate) fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let half = || {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        hasher.write_u128(nanos);
        hasher.finish()
    };
    dsh_protocol::uuid_v4_layout(half(), half())
}
