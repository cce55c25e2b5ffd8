//! What the unit tests of this crate share: a stored log read as the records the store hands out.

#![allow(clippy::unwrap_used, reason = "tests")]

use abi_stable::std_types::RString;
use dsh_sessions_seam::EventRecord;

/// The records of a stored log, packed chunk rows expanded as the store expands them.
pub(crate) fn records(path: &str) -> Vec<EventRecord> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .flat_map(|line| {
            dsh_session_jsonl::decode_record(serde_json::from_str(line).unwrap()).unwrap()
        })
        .map(|event| EventRecord {
            session: RString::from("s"),
            seq: event.seq,
            kind: RString::from(event.kind.as_str()),
            time: event.time,
            json: RString::from(serde_json::to_string(&event).unwrap()),
        })
        .collect()
}
