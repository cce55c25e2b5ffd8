//! `dsh-history-hash`: the history hash, a cheap, stable fingerprint of a message history, so
//! "what the model saw equals what the log derives" is asserted by comparing two numbers
//! instead of two message lists. The session log computes it over its derived messages and a
//! plugin over the messages it sends (`dsh-visible-check`); both take it from here, so they
//! agree by construction. No I/O, no plugin boundary.
//!
//! Definition (stable, so any component can recompute it): each message is written as canonical
//! JSON (objects with keys sorted bytewise, no whitespace, strings and numbers as `serde_json`
//! prints them) and hashed with 64-bit FNV-1a; the history hash starts at the FNV offset basis
//! and feeds each message hash as 8 little-endian bytes through FNV-1a, in order.

use std::io;

use serde_json::Value;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The hash of an empty history.
pub const EMPTY_HISTORY_HASH: u64 = FNV_OFFSET;

#[derive(Clone, Copy)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv64 {
    pub const fn new() -> Self {
        Self(FNV_OFFSET)
    }

    pub const fn resume(state: u64) -> Self {
        Self(state)
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    pub const fn finish(self) -> u64 {
        self.0
    }
}

impl io::Write for Fnv64 {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.feed(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Extends a history hash by one message hash.
pub fn chain(history: u64, message: u64) -> u64 {
    let mut h = Fnv64::resume(history);
    h.feed(&message.to_le_bytes());
    h.finish()
}

/// Writes `value` as canonical JSON into `out`. Iterative, so depth is not bounded by the stack.
pub fn write_canonical(out: &mut Fnv64, value: &Value) {
    enum Work<'a> {
        Value(&'a Value),
        Key(&'a str),
        Raw(&'static [u8]),
    }
    let mut stack = vec![Work::Value(value)];
    while let Some(work) = stack.pop() {
        match work {
            Work::Raw(bytes) => out.feed(bytes),
            Work::Key(k) => {
                write_string(out, k);
                out.feed(b":");
            }
            Work::Value(Value::Null) => out.feed(b"null"),
            Work::Value(Value::Bool(b)) => out.feed(if *b { b"true" } else { b"false" }),
            Work::Value(Value::Number(n)) => out.feed(n.to_string().as_bytes()),
            Work::Value(Value::String(s)) => write_string(out, s),
            Work::Value(Value::Array(items)) => {
                out.feed(b"[");
                stack.push(Work::Raw(b"]"));
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Work::Value(item));
                    if i > 0 {
                        stack.push(Work::Raw(b","));
                    }
                }
            }
            Work::Value(Value::Object(map)) => {
                // Sorted explicitly: with serde_json's `preserve_order` feature (which another
                // crate could switch on for the whole build) maps keep insertion order.
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.feed(b"{");
                stack.push(Work::Raw(b"}"));
                for (i, (k, item)) in members.into_iter().enumerate().rev() {
                    stack.push(Work::Value(item));
                    stack.push(Work::Key(k));
                    if i > 0 {
                        stack.push(Work::Raw(b","));
                    }
                }
            }
        }
    }
}

pub fn write_string(out: &mut Fnv64, s: &str) {
    // Writing a &str through serde_json cannot fail and the sink never errors.
    let _ = serde_json::to_writer(out, s);
}

/// The hash of one message given as a JSON value (`{role, content, source}`).
pub fn message_hash(message: &Value) -> u64 {
    let mut h = Fnv64::new();
    write_canonical(&mut h, message);
    h.finish()
}

/// The history hash of a message list given as JSON values; equals
/// the session log's `derived_hash` for the log's derived messages.
pub fn messages_hash<'a>(messages: impl IntoIterator<Item = &'a Value>) -> u64 {
    messages
        .into_iter()
        .fold(EMPTY_HISTORY_HASH, |acc, m| chain(acc, message_hash(m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(v: &Value) -> u64 {
        message_hash(v)
    }

    #[test]
    fn canonical_form_matches_sorted_compact_serde_output() {
        let v = json!({"b":[1,2.5,{"z":null,"a":"q\"\n"}],"a":true,"é":-3});
        // Keys sorted bytewise, compact, whatever order the map keeps (the workspace enables
        // serde_json's `preserve_order`, so this is the literal canonical text).
        let mut h = Fnv64::new();
        h.feed(r#"{"a":true,"b":[1,2.5,{"a":"q\"\n","z":null}],"é":-3}"#.as_bytes());
        assert_eq!(canonical(&v), h.finish());
    }

    #[test]
    fn fnv_known_vector() {
        let mut h = Fnv64::new();
        h.feed(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn history_hash_is_order_sensitive() {
        let a = json!({"role":"user","content":[],"source":{"kind":"user"}});
        let b = json!({"role":"assistant","content":[],"source":{"kind":"model"}});
        assert_ne!(messages_hash([&a, &b]), messages_hash([&b, &a]));
        assert_eq!(messages_hash([]), EMPTY_HISTORY_HASH);
        assert_eq!(
            messages_hash([&a]),
            chain(EMPTY_HISTORY_HASH, message_hash(&a))
        );
    }
}
