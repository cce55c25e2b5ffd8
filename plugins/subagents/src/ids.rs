//! Fresh message ids in the UUID v4 layout of the log's other message ids. A report is given
//! its id here, before it reaches the parent's inbox, so the id its tool result names is the
//! reference's kind of id (its recorded `subagent-report` case pins a UUID there) and the
//! one the parent's log holds.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh id. Unique, not secret: the process-seeded hasher, a counter and the clock suffice.
pub(crate) fn new_message_id() -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_shaped_and_distinct() {
        let (a, b) = (new_message_id(), new_message_id());
        assert_ne!(a, b);
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{a}");
        assert_eq!(&a[14..15], "4", "{a}");
    }
}
