//! Packing rules on hand-made runs: what packs, what stays verbatim, and that rows expand back to
//! the exact events.

use dsh_session_jsonl::{
    CommittedLine, StorageRecord, decode_record, encode_committed, encode_lines, pack_chunk_runs,
};
use dsh_session_log::SessionEvent;
use serde_json::{Value, json};

fn ev(seq: u64, time: i64, data: Value) -> SessionEvent {
    SessionEvent {
        kind: "assistant/chunk".into(),
        seq,
        time,
        data,
        surface_op: None,
        source_event_seqs: None,
        ignorable: None,
    }
}

fn text(seq: u64, time: i64, index: u64, t: &str) -> SessionEvent {
    ev(
        seq,
        time,
        json!({"turn":1,"step":1,"chunk":{"type":"text-delta","index":index,"text":t}}),
    )
}

/// Decode our own lines back, layout-blind.
fn decode_lines(lines: &str) -> Vec<SessionEvent> {
    lines
        .lines()
        .flat_map(|l| decode_record(serde_json::from_str(l).unwrap()).unwrap())
        .collect()
}

fn rows(events: &[SessionEvent]) -> usize {
    pack_chunk_runs(events)
        .iter()
        .filter(|r| matches!(r, StorageRecord::Row(_)))
        .count()
}

#[test]
fn packs_runs_of_three_with_gaps_including_negative() {
    let events = vec![
        text(0, 10, 0, "a"),
        text(1, 11, 0, "b"),
        text(2, 11, 0, "c"),
        text(3, 9, 0, "d"),
    ];
    let lines = encode_lines(&events, true).unwrap();
    assert_eq!(
        lines,
        "{\"type\":\"text-chunks\",\"seq0\":0,\"time0\":10,\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[1,0,-2],\"texts\":[\"a\",\"b\",\"c\",\"d\"]}}\n"
    );
    assert_eq!(decode_lines(&lines), events);
}

#[test]
fn short_runs_and_breaks_stay_verbatim() {
    let two = vec![text(0, 0, 0, "a"), text(1, 0, 0, "b")];
    assert_eq!(pack_chunk_runs(&two).len(), 2);
    let other_block = vec![
        text(0, 0, 0, "a"),
        text(1, 0, 0, "b"),
        text(2, 0, 1, "c"),
        text(3, 0, 1, "d"),
    ];
    assert_eq!(rows(&other_block), 0);
    let seq_jump = vec![text(0, 0, 0, "a"), text(1, 0, 0, "b"), text(3, 0, 0, "c")];
    assert_eq!(pack_chunk_runs(&seq_jump).len(), 3);
    // Text then reasoning at the same index: different kinds never share a row.
    let mut kinds = vec![text(0, 0, 0, "a"), text(1, 0, 0, "b")];
    kinds.push(ev(
        2,
        0,
        json!({"turn":1,"step":1,"chunk":{"type":"reasoning-delta","index":0,"text":"c"}}),
    ));
    assert_eq!(rows(&kinds), 0);
    // Integer 1 and float 1.0 differ in representation, so they stay apart (stricter than JS).
    let mut float_turn = vec![text(0, 0, 0, "a"), text(1, 0, 0, "b")];
    float_turn.push(ev(
        2,
        0,
        json!({"turn":1.0,"step":1,"chunk":{"type":"text-delta","index":0,"text":"c"}}),
    ));
    assert_eq!(rows(&float_turn), 0);
    // A gap a JS number could not hold exactly.
    let far = vec![
        text(0, -(1 << 52), 0, "a"),
        text(1, 1 << 52, 0, "b"),
        text(2, 1 << 52, 0, "c"),
    ];
    assert_eq!(rows(&far), 0);
    let lines = encode_lines(&far, true).unwrap();
    assert_eq!(decode_lines(&lines), far);
}

#[test]
fn whitelist_is_exact() {
    let variants: Vec<Box<dyn Fn(u64) -> SessionEvent>> = vec![
        Box::new(|s| {
            ev(
                s,
                0,
                json!({"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x","extra":1}}),
            )
        }),
        Box::new(|s| {
            let mut e = text(s, 0, 0, "y");
            e.ignorable = Some(true);
            e
        }),
        Box::new(|s| {
            let mut e = text(s, 0, 0, "y");
            e.source_event_seqs = Some(vec![]);
            e
        }),
        Box::new(|s| {
            ev(
                s,
                0,
                json!({"turn":1,"step":1,"x":null,"chunk":{"type":"text-delta","index":0,"text":"x"}}),
            )
        }),
        Box::new(|s| {
            ev(
                s,
                0,
                json!({"turn":"1","step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}),
            )
        }),
        Box::new(|s| {
            ev(
                s,
                0,
                json!({"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":null}}),
            )
        }),
        Box::new(|s| {
            ev(
                s,
                0,
                json!({"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c","name":null,"argumentsDelta":"x"}}),
            )
        }),
        Box::new(|s| ev(s, 0, json!({"turn":1,"step":1,"chunk":{"type":"usage"}}))),
        Box::new(|s| {
            ev(
                s,
                0,
                json!({"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}),
            )
        }),
    ];
    for (i, make) in variants.iter().enumerate() {
        let run: Vec<SessionEvent> = (0..4).map(make).collect();
        assert_eq!(rows(&run), 0, "variant {i} must stay verbatim");
        let lines = encode_lines(&run, true).unwrap();
        assert_eq!(decode_lines(&lines), run, "variant {i} round trip");
    }
}

#[test]
fn tool_rows_keep_name_presence() {
    let call = |seq, name: Option<&str>| {
        let mut chunk = json!({"type":"tool-call-delta","index":1,"id":"c1","argumentsDelta":"{"});
        if let Some(n) = name {
            chunk["name"] = json!(n);
        }
        ev(seq, 100, json!({"turn":1,"step":2,"chunk":chunk}))
    };
    let named = vec![
        call(0, Some("bash")),
        call(1, Some("bash")),
        call(2, Some("bash")),
    ];
    let line = encode_lines(&named, true).unwrap();
    assert_eq!(
        line,
        "{\"type\":\"tool-call-chunks\",\"seq0\":0,\"time0\":100,\"data\":{\"turn\":1,\"step\":2,\"index\":1,\"dt\":[0,0],\"id\":\"c1\",\"name\":\"bash\",\"args\":[\"{\",\"{\",\"{\"]}}\n"
    );
    assert_eq!(decode_lines(&line), named);
    // A name present on some members only: the named one stays verbatim, the rest pack.
    let mixed = vec![
        call(0, Some("bash")),
        call(1, None),
        call(2, None),
        call(3, None),
    ];
    let records = pack_chunk_runs(&mixed);
    assert_eq!(records.len(), 2);
    assert!(matches!(&records[1], StorageRecord::Row(r) if r.len() == 3 && r.seq0() == 1));
    let lines = encode_lines(&mixed, true).unwrap();
    assert!(lines.contains("\"id\":\"c1\",\"args\""));
    assert_eq!(decode_lines(&lines), mixed);
    // Another call id breaks the run.
    let mut other_id = named.clone();
    other_id[2].data["chunk"]["id"] = json!("c2");
    assert_eq!(rows(&other_id), 0);
}

/// The store writes the log's own JSON lines and parses only chunk runs long enough to pack;
/// the bytes must be those of encoding the parsed events, packed or not.
#[test]
fn committed_lines_encode_like_the_events() {
    let other = |seq: u64| SessionEvent {
        kind: "step/start".into(),
        ..ev(seq, 5, json!({"turn":1,"step":1}))
    };
    let events = vec![
        other(0),
        text(1, 10, 0, "a"),
        text(2, 11, 0, "b"),
        other(3),
        text(4, 12, 0, "c"),
        text(5, 12, 0, "d"),
        text(6, 13, 0, "e"),
        text(7, 13, 1, "f"),
        text(8, 14, 1, "g"),
        other(9),
        text(10, 15, 0, "h"),
    ];
    let json: Vec<String> = events
        .iter()
        .map(|event| serde_json::to_string(event).unwrap())
        .collect();
    let lines: Vec<CommittedLine<'_>> = events
        .iter()
        .zip(&json)
        .map(|(event, json)| CommittedLine {
            seq: event.seq,
            kind: &event.kind,
            json,
        })
        .collect();
    for pack in [true, false] {
        let committed = encode_committed(&lines, pack).unwrap();
        assert_eq!(
            committed,
            encode_lines(&events, pack).unwrap(),
            "pack: {pack}"
        );
        assert_eq!(decode_lines(&committed), events);
    }
    // Of the five consecutive chunks, the three of block 0 pack into one row; the two of block
    // 1 and the pair before stay verbatim: 11 events, 9 lines.
    assert_eq!(encode_committed(&lines, true).unwrap().lines().count(), 9);
}
