//! The JSONL session reader, raw and zstd: the input decoded as a session file (header, lines
//! or frames, packed chunk rows, torn tails), and what decodes loaded into a `SessionLog`,
//! checked, summarized, derived to messages and given its crash closers, as resuming does.
//!
//! The zstd target takes two kinds of input: a zstd file as it is (frame and checksum damage),
//! and plain JSONL (it starts with `{`, which no zstd frame does), framed here the way the
//! writer frames it, the last frame torn or not, so mutations of the text reach the record
//! decoder past the codec.

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use dsh_session_jsonl::{Encoding, decode_session, encode_raw_log};
use dsh_session_log::{SessionEvent, SessionLog, TypeRegistry, check_log, closers_for, summarize};

use crate::mutate::{Rng, fnv};

const DEMO: &[u8] = include_bytes!("../../../../demo/session.jsonl");

pub(crate) const DICT: &[&[u8]] = &[
    b"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1}\n",
    b"\"seq\":",
    b"\"time\":",
    b"\"type\":",
    b"\"data\":",
    b"\"version\":",
    b"\"op\":",
    b"\"ignorable\":",
    b"\"sources\":",
    b"\"turn\":",
    b"turn/start",
    b"turn/end",
    b"agent/inbox/spliced",
    b"message",
    b"llm/chunks",
    b"tool/call",
    b"\"role\":",
    b"\"content\":",
    b"\"chunks\":",
    b"\"seq0\":",
    b"\"deltas\":",
    b"append",
    b"replace",
    b"\"target\":",
    b"\"start\":",
    b"\"removedCount\":",
    b"\"inserted\":",
    b"null",
    b"\n",
    b"\r\n",
    b"\\u0000",
];

fn demo_events() -> Option<(dsh_session_jsonl::SessionHeader, Vec<SessionEvent>)> {
    let read = decode_session(Path::new("demo/session.jsonl"), DEMO, Encoding::Raw).ok()?;
    Some((read.header, read.events))
}

pub(crate) fn raw_seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![DEMO.to_vec()];
    if let Some((header, events)) = demo_events()
        && let Ok(packed) = encode_raw_log(&header, &events, true)
    {
        seeds.push(packed);
    }
    seeds
}

pub(crate) fn zstd_seeds() -> Vec<Vec<u8>> {
    let plain = raw_seeds();
    let mut seeds: Vec<Vec<u8>> = plain.iter().map(|text| frame(text, false)).collect();
    seeds.extend(plain);
    seeds
}

thread_local! {
    /// One compressor per thread: making one per frame would cost more than the reading.
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
}

/// One frame as the writer makes it: default level, with a content checksum.
fn compress(data: &[u8]) -> Vec<u8> {
    COMPRESSOR.with(|cell| {
        let mut kept = cell.borrow_mut();
        if kept.is_none() {
            *kept = zstd::bulk::Compressor::new(zstd::DEFAULT_COMPRESSION_LEVEL)
                .and_then(|mut made| {
                    made.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
                    Ok(made)
                })
                .ok();
        }
        kept.as_mut()
            .and_then(|compressor| compressor.compress(data).ok())
            .unwrap_or_default()
    })
}

/// Plain JSONL as a zstd session: the first line alone in frame 1, then the other lines in
/// frames of 1 to 8 lines (chosen from the text, so a replay frames the same way); `tear`
/// cuts the last frame short.
fn frame(text: &[u8], tear: bool) -> Vec<u8> {
    let mut rng = Rng::new(fnv(text));
    let mut lines = text.split_inclusive(|byte| *byte == b'\n');
    let mut out = lines.next().map(compress).unwrap_or_default();
    let rest: Vec<&[u8]> = lines.collect();
    let mut last = 0;
    for group in rest.chunks(1 + (rng.next_u64() % 8) as usize) {
        last = out.len();
        out.extend(compress(&group.concat()));
    }
    if tear && out.len() > last {
        let frame_len = out.len() - last;
        out.truncate(last + (rng.next_u64() as usize % frame_len));
    }
    out
}

/// What resuming a session does with the events a file gave.
fn load(events: Vec<SessionEvent>) {
    let registry = TypeRegistry::new();
    let _ = check_log(&events, &registry);
    let _ = summarize(&events);
    let _ = closers_for(&events);
    if let Ok(log) = SessionLog::from_events(events, Arc::new(registry)) {
        let _ = log.derive_messages();
        let _ = log.derived_hash();
    }
}

pub(crate) fn run_raw(input: &[u8]) {
    if let Ok(read) = decode_session(Path::new("fuzz/session.jsonl"), input, Encoding::Raw) {
        load(read.events);
    }
}

pub(crate) fn run_zstd(input: &[u8]) {
    let framed;
    let bytes = match input.first() {
        Some(b'{') => {
            framed = frame(input, fnv(input).is_multiple_of(3));
            &framed[..]
        }
        _ => input,
    };
    if let Ok(read) = decode_session(Path::new("fuzz/session.jsonl.zstd"), bytes, Encoding::Zstd) {
        load(read.events);
    }
}
