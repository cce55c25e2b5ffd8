//! Property test: random valid event sequences survive the store (write in random batches,
//! either encoding, packing on) and come back unchanged. Fixed seeds, so a failure reproduces.

use dsh_session_jsonl::{Encoding, SessionHeader, SessionWriter, WriterOptions};
use dsh_session_log::{SessionEvent, SurfaceOp};
use serde_json::{Value, json};

use crate::common::{read_both, scratch};

/// xorshift64*: small, deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn text(rng: &mut Rng) -> String {
    const PIECES: [&str; 8] = [
        "a",
        "Zebra ",
        "你好",
        "🦀",
        "\"quoted\"",
        "\\back",
        "\n",
        "tab\t",
    ];
    (0..rng.below(6))
        .map(|_| PIECES[rng.below(8) as usize])
        .collect()
}

fn number(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 => json!(rng.below(9_007_199_254_740_991)),
        1 => json!(-(rng.below(1_000_000) as i64)),
        2 => json!(rng.below(1000) as f64 / 8.0),
        _ => json!(0),
    }
}

/// One random but valid log: turns of steps with chunk runs of random length (some long
/// enough to be packed, some not), messages, tool calls and plugin events.
fn random_log(rng: &mut Rng) -> Vec<SessionEvent> {
    let mut events = Vec::new();
    let mut time = 1_785_000_000_000_i64;
    let mut push = |events: &mut Vec<SessionEvent>,
                    kind: &str,
                    data: Value,
                    op: Option<SurfaceOp>,
                    rng: &mut Rng| {
        time += rng.below(50) as i64 - 10;
        events.push(SessionEvent {
            kind: kind.to_owned(),
            seq: events.len() as u64,
            time,
            data,
            surface_op: op,
            source_event_seqs: None,
            ignorable: if kind.starts_with("plugin/") {
                Some(true)
            } else {
                None
            },
        });
    };
    for turn in 1..=rng.below(4) + 1 {
        push(&mut events, "turn/start", json!({"turn": turn}), None, rng);
        let user = json!({"role": "user", "id": format!("u{turn}"), "source": {"kind": "user"}, "content": [{"type": "text", "text": text(rng)}]});
        push(
            &mut events,
            "user/message",
            user,
            Some(SurfaceOp::append()),
            rng,
        );
        for step in 1..=rng.below(3) + 1 {
            push(
                &mut events,
                "step/start",
                json!({"turn": turn, "step": step}),
                None,
                rng,
            );
            for (index, kind) in ["text", "reasoning"].iter().enumerate() {
                let chunk = |c: Value| json!({"turn": turn, "step": step, "chunk": c});
                push(
                    &mut events,
                    "assistant/chunk",
                    chunk(json!({"type": "block-start", "index": index, "blockType": kind})),
                    None,
                    rng,
                );
                for _ in 0..rng.below(7) {
                    let delta =
                        json!({"type": format!("{kind}-delta"), "index": index, "text": text(rng)});
                    push(&mut events, "assistant/chunk", chunk(delta), None, rng);
                }
            }
            let args = format!("{{\"n\":{}}}", rng.below(100));
            for _ in 0..rng.below(5) {
                let delta = json!({"type": "tool-call-delta", "index": 2, "id": "c1", "name": "read", "argumentsDelta": text(rng)});
                push(
                    &mut events,
                    "assistant/chunk",
                    json!({"turn": turn, "step": step, "chunk": delta}),
                    None,
                    rng,
                );
            }
            if rng.below(3) == 0 {
                push(
                    &mut events,
                    "plugin/metric",
                    json!({"value": number(rng), "label": text(rng)}),
                    None,
                    rng,
                );
            }
            let message = json!({"turn": turn, "step": step, "message": {"role": "assistant", "id": format!("a{turn}.{step}"),
                "source": {"kind": "model", "provider": "p", "model": "m"},
                "content": [{"type": "text", "text": text(rng)}, {"type": "tool-call", "id": "c1", "name": "read", "arguments": args}]},
                "usage": {"inputTokens": rng.below(5000), "outputTokens": rng.below(500)}});
            push(
                &mut events,
                "assistant/message",
                message,
                Some(SurfaceOp::append()),
                rng,
            );
            push(
                &mut events,
                "step/end",
                json!({"turn": turn, "step": step}),
                None,
                rng,
            );
        }
        push(
            &mut events,
            "turn/end",
            json!({"turn": turn, "reason": {"kind": "completed"}}),
            None,
            rng,
        );
    }
    events
}

#[test]
fn random_logs_survive_store_and_load_unchanged() {
    let dir = scratch("properties");
    for seed in 1..=60_u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let events = random_log(&mut rng);
        let encoding = if seed % 2 == 0 {
            Encoding::Zstd
        } else {
            Encoding::Raw
        };
        let options = WriterOptions {
            encoding,
            pack_chunks: true,
        };
        let header = SessionHeader::new(format!("prop-{seed}"), 1);
        let mut writer = SessionWriter::create(&dir, header, options).unwrap();
        let mut rest = &events[..];
        while !rest.is_empty() {
            let take = (rng.below(12) as usize + 1).min(rest.len());
            writer.append(&rest[..take]).unwrap();
            rest = &rest[take..];
        }
        let read = read_both(writer.path()).unwrap();
        assert!(read.repair.is_none(), "seed {seed}");
        assert_eq!(
            read.events, events,
            "seed {seed}: the log changed through the store"
        );
    }
}
