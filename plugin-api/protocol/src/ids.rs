//! What may name a session. Ids come from requests and from headers anyone could have written,
//! and stores build paths from them: an id is checked against this before that.

/// The longest session id.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// An id no session may have, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{id:?} is not a session id: {reason}")]
pub struct BadSessionId {
    /// The id (cut after 129 characters).
    pub id: String,
    pub reason: &'static str,
}

/// Two 64-bit halves written in the UUID version 4 layout (`xxxxxxxx-xxxx-4xxx-yxxx-...`), the
/// shape the log's session and message ids have. Where the halves come from is the caller's.
pub fn uuid_v4_layout(high: u64, low: u64) -> String {
    let mut bytes = [0_u8; 16];
    bytes[..8].copy_from_slice(&high.to_be_bytes());
    bytes[8..].copy_from_slice(&low.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A fresh id in the UUID v4 layout, for a message or a report the log will hold. Unique in
/// practice, not secret: the process-seeded hasher, a counter and the clock suffice (an id
/// that must not be guessed is drawn from the OS instead).
pub fn fresh_uuid() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
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
    uuid_v4_layout(half(), half())
}

/// Letters, digits, `-`, `_` and `.`, starting with a letter or a digit, no `..`, at most 128
/// characters: what ours and the reference's sessions have (UUIDs; names like `s-one` in
/// tests and fixtures), and nothing that could climb out of a folder or hide in one.
pub fn check_session_id(id: &str) -> Result<(), BadSessionId> {
    let bad = |reason| {
        Err(BadSessionId {
            id: id.chars().take(MAX_SESSION_ID_LEN + 1).collect(),
            reason,
        })
    };
    let Some(first) = id.chars().next() else {
        return bad("it is empty");
    };
    if id.len() > MAX_SESSION_ID_LEN {
        return bad("longer than 128 characters");
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return bad("only letters, digits, `-`, `_` and `.` name a session");
    }
    if !first.is_ascii_alphanumeric() {
        return bad("it must start with a letter or a digit");
    }
    if id.contains("..") {
        return bad("it contains `..`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_name_a_session() {
        for good in [
            "00000000-0000-0000-0000-000000000000",
            "s-one",
            "persistent-tools-snapshot",
            "a.b_c",
            "7",
        ] {
            assert_eq!(check_session_id(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "../x",
            "..",
            ".",
            "a/b",
            "a\\b",
            "x\0",
            "a..b",
            ".hidden",
            "-x",
            "a b",
            "é",
            "~002E",
            "{{sessionId}}",
        ] {
            assert!(check_session_id(bad).is_err(), "{bad:?}");
        }
        assert!(check_session_id(&"a".repeat(128)).is_ok());
        let long = check_session_id(&"a".repeat(1000)).unwrap_err();
        assert_eq!(long.id.len(), 129);
    }

    #[test]
    fn fresh_ids_are_distinct_uuids() {
        let (a, b) = (fresh_uuid(), fresh_uuid());
        assert_ne!(a, b);
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{a}");
        assert_eq!(&a[14..15], "4", "{a}");
    }
}
