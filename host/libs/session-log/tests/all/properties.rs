//! Random valid logs (fixed seeds, so failures reproduce): every append is accepted, the log
//! reloads unchanged (in memory and through JSON text), the incremental derivation always equals
//! a from-scratch one, and repair leaves a log that checks clean.

use std::sync::Arc;

use dsh_session_log::{
    NewEvent, SessionEvent, SessionLog, SurfaceOp, TypeRegistry, TypeRequirement, check_log,
    messages_hash, parse_lossless,
};
use serde_json::{Value, json};

use crate::common::*;

/// SplitMix64: tiny, good enough, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn plugin_registry() -> Arc<TypeRegistry> {
    let mut r = TypeRegistry::new();
    r.register_ignorable("demo/note").unwrap();
    r.register("demo/state", TypeRequirement::Required).unwrap();
    Arc::new(r)
}

/// The generator's view of the log, enough to only emit valid events.
struct Gen {
    rng: Rng,
    log: SessionLog,
    turn: u64,
    step: u64,
    in_turn: bool,
    in_step: bool,
    /// Calls of the open step: (call id, tool/call seq once logged, answered).
    calls: Vec<(String, Option<u64>, bool)>,
    time: i64,
}

impl Gen {
    fn push(&mut self, e: NewEvent) {
        self.time += self.rng.below(3) as i64;
        let e = NewEvent {
            time: self.time,
            ..e
        };
        if let Err(err) = self.log.append(e) {
            panic!("generator produced an invalid event: {err}");
        }
    }

    fn text(&mut self) -> String {
        // Unicode, quotes and escapes, so the JSON round trip has something to chew on.
        ["plain", "é ü", "quote \" and \\", "line\nbreak", "", "🙂"][self.rng.below(6) as usize]
            .to_owned()
    }

    fn surface_seq(&mut self, kind: Option<&str>) -> Option<u64> {
        let nodes: Vec<u64> = self
            .log
            .surface_nodes()
            .iter()
            .copied()
            .filter(|s| kind.is_none_or(|k| self.log.get(*s).is_some_and(|e| e.kind == k)))
            .collect();
        (!nodes.is_empty()).then(|| nodes[self.rng.below(nodes.len() as u64) as usize])
    }

    fn user(&mut self) {
        let t = self.text();
        let id = format!("u{}", self.log.next_seq());
        self.push(NewEvent::surface(
            "user/message",
            user_data(&id, &t),
            SurfaceOp::append(),
            0,
        ));
    }

    fn compaction(&mut self) {
        let nodes = self.log.surface_nodes().to_vec();
        if nodes.is_empty() {
            return;
        }
        let a = self.rng.below(nodes.len() as u64) as usize;
        let b = a + self.rng.below((nodes.len() - a) as u64) as usize;
        let mut sources: Vec<u64> = nodes[a..=b].to_vec();
        if self.rng.chance(50) {
            sources.push(self.log.next_seq() - 1);
            sources.sort_unstable();
            sources.dedup();
        }
        let id = format!("c{}", self.log.next_seq());
        let data = json!({"content": [text("summary")], "source": {"kind": "plugin", "plugin": "compact"},
            "role": "user", "id": id});
        self.push(
            NewEvent::surface(
                "user/message",
                data,
                SurfaceOp::replace(nodes[a], nodes[b]),
                0,
            )
            .with_sources(sources),
        );
    }

    fn rewrite_result(&mut self) {
        let Some(seq) = self.surface_seq(Some("tool/result")) else {
            return;
        };
        let Some(original) = self.log.get(seq) else {
            return;
        };
        let mut data = original.data.clone();
        data["message"]["content"][0]["content"] = json!([text("spilled to a file")]);
        self.push(
            NewEvent::surface("tool/result", data, SurfaceOp::replace(seq, seq), 0)
                .with_sources(vec![seq]),
        );
    }

    fn log_only(&mut self) {
        let (kind, data) = match self.rng.below(5) {
            0 => ("demo/note", json!({"n": self.rng.below(1 << 53)})),
            1 => (
                "demo/state",
                json!({"deep": {"a": [1, 2.5, null, {"b": true}]}}),
            ),
            2 => (
                "todo/write",
                json!({"todos": [{"content": "x", "status": "pending"}]}),
            ),
            3 => (
                "session/title",
                json!({"title": "t", "messageSeqs": [], "source": {"kind": "fallback"}}),
            ),
            _ => ("plan/mode", json!({"active": self.rng.chance(50)})),
        };
        self.push(NewEvent::new(kind, data, 0));
    }

    fn in_step_action(&mut self) {
        let (turn, step) = (self.turn, self.step);
        match self.rng.below(10) {
            0 | 1 => {
                let usage = json!({"type": "usage", "usage": {"inputTokens": self.rng.below(100), "outputTokens": 3}});
                self.push(NewEvent::new(
                    "assistant/chunk",
                    json!({"turn": turn, "step": step, "chunk": usage}),
                    0,
                ));
            }
            2 | 3 => {
                let mut content = Vec::new();
                if self.rng.chance(70) {
                    content.push(text(&self.text()));
                }
                for _ in 0..self.rng.below(3) {
                    let id = format!("call-{}-{}", self.log.next_seq(), content.len());
                    content.push(call_block(&id));
                    self.calls.push((id, None, false));
                }
                let mut e = NewEvent::surface(
                    "assistant/message",
                    assistant_data(turn, step, Value::Array(content)),
                    SurfaceOp::append(),
                    0,
                );
                if self.rng.chance(30) {
                    e = e.with_sources(vec![]);
                }
                self.push(e);
            }
            4 | 5 => {
                let Some(i) = self.calls.iter().position(|c| c.1.is_none()) else {
                    return;
                };
                let seq = self.log.next_seq();
                let id = self.calls[i].0.clone();
                self.push(NewEvent::new("tool/call", json!({"turn": turn, "step": step, "callId": id, "name": "bash", "arguments": "{}"}), 0));
                self.calls[i].1 = Some(seq);
            }
            6 | 7 => {
                let Some(i) = self.calls.iter().position(|c| c.1.is_some() && !c.2) else {
                    return;
                };
                let (id, call_seq) = (self.calls[i].0.clone(), self.calls[i].1.unwrap_or(0));
                self.push(
                    NewEvent::surface(
                        "tool/result",
                        tool_result_data(turn, step, &id, "ok"),
                        SurfaceOp::append(),
                        0,
                    )
                    .with_sources(vec![call_seq]),
                );
                self.calls[i].2 = true;
            }
            8 => self.rewrite_result(),
            _ => {
                self.push(NewEvent::new(
                    "step/end",
                    json!({"turn": turn, "step": step}),
                    0,
                ));
                self.in_step = false;
                self.calls.clear();
            }
        }
    }

    fn action(&mut self) {
        if self.rng.chance(8) {
            return self.log_only();
        }
        if self.rng.chance(5) {
            return self.compaction();
        }
        match (self.in_turn, self.in_step) {
            (false, _) => {
                if self.rng.chance(20) {
                    return self.user();
                }
                self.turn += 1;
                self.step = 0;
                self.in_turn = true;
                self.push(NewEvent::new("turn/start", json!({"turn": self.turn}), 0));
            }
            (true, false) => match self.rng.below(4) {
                0 => self.user(),
                1 => {
                    let reason = ["completed", "blocked", "max-tokens"][self.rng.below(3) as usize];
                    self.push(NewEvent::new(
                        "turn/end",
                        json!({"turn": self.turn, "reason": {"kind": reason}}),
                        0,
                    ));
                    self.in_turn = false;
                }
                _ => {
                    self.step += 1;
                    self.in_step = true;
                    self.push(NewEvent::new(
                        "step/start",
                        json!({"turn": self.turn, "step": self.step}),
                        0,
                    ));
                }
            },
            (true, true) => self.in_step_action(),
        }
    }
}

fn generate(seed: u64, len: usize) -> SessionLog {
    let mut g = Gen {
        rng: Rng(seed),
        log: SessionLog::new(plugin_registry()),
        turn: 0,
        step: 0,
        in_turn: false,
        in_step: false,
        calls: Vec::new(),
        time: 1_700_000_000_000,
    };
    while g.log.len() < len {
        g.action();
        if g.log.len().is_multiple_of(7) {
            assert_derivation_matches_a_fresh_fold(&g.log);
        }
    }
    g.log
}

/// The derivation computed from scratch, the obvious way, must equal the incremental one.
fn assert_derivation_matches_a_fresh_fold(log: &SessionLog) {
    let mut nodes: Vec<u64> = Vec::new();
    for e in log.events() {
        match e.surface_op.as_ref().map(SurfaceOp::replace_span) {
            None => {}
            Some(None) => nodes.push(e.seq),
            Some(Some((s, t))) => {
                let a = nodes.iter().position(|n| *n == s).unwrap();
                let b = nodes.iter().position(|n| *n == t).unwrap();
                nodes.splice(a..=b, [e.seq]);
            }
        }
    }
    assert_eq!(log.surface_nodes(), nodes.as_slice());
    let expected: Vec<u64> = nodes
        .into_iter()
        .filter(|s| {
            let e = log.get(*s).unwrap();
            !(e.kind == "assistant/message" && e.data["message"]["content"] == json!([]))
        })
        .collect();
    let derived = log.derive_messages();
    assert_eq!(
        derived.iter().map(|m| m.seq()).collect::<Vec<_>>(),
        expected
    );
    assert_eq!(log.derived_hash(), messages_hash(&derived.to_values()));
}

fn owned(log: &SessionLog) -> Vec<SessionEvent> {
    log.events().iter().map(|e| (**e).clone()).collect()
}

#[test]
fn random_valid_logs_append_and_reload_unchanged() {
    // What the generator exercised, so a generator change cannot silently stop covering a rule.
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for seed in 0..150_u64 {
        let len = 20 + (seed as usize * 37) % 400;
        let mut log = generate(seed, len);
        let events = owned(&log);
        for e in &events {
            let replace = e
                .surface_op
                .as_ref()
                .and_then(SurfaceOp::replace_span)
                .is_some();
            let feature = match e.kind.as_str() {
                "user/message" if replace => "compaction replace",
                "tool/result" if replace => "tool-result rewrite",
                "assistant/message" if e.data["message"]["content"] == json!([]) => {
                    "empty assistant"
                }
                "demo/note" => "ignorable plugin event",
                _ => continue,
            };
            *seen.entry(feature).or_default() += 1;
        }
        if log.open_turn().is_some() {
            *seen.entry("open turn at end").or_default() += 1;
        }

        // In memory.
        let reloaded = SessionLog::from_events(events.clone(), Arc::clone(log.registry()))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(owned(&reloaded), events, "seed {seed}");
        assert_eq!(reloaded.surface_nodes(), log.surface_nodes(), "seed {seed}");
        assert_eq!(
            reloaded.replace_generation(),
            log.replace_generation(),
            "seed {seed}"
        );
        assert_eq!(reloaded.derived_hash(), log.derived_hash(), "seed {seed}");

        // Through JSON text, as persistence stores it.
        let text: Vec<String> = events
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        let parsed: Vec<SessionEvent> = text
            .iter()
            .map(|line| serde_json::from_value(parse_lossless(line).unwrap()).unwrap())
            .collect();
        let from_text = SessionLog::from_events(parsed, Arc::clone(log.registry())).unwrap();
        assert_eq!(owned(&from_text), events, "seed {seed}");
        assert_eq!(from_text.derived_hash(), log.derived_hash(), "seed {seed}");

        // A reader without the plugin keeps its ignorable events but refuses the required ones.
        let without_plugin = SessionLog::from_events(events.clone(), registry());
        let has_required = events.iter().any(|e| e.kind == "demo/state");
        assert_eq!(without_plugin.is_err(), has_required, "seed {seed}");

        // Checks: clean apart from an open tail turn, which repair closes.
        let problems = check_log(&events, log.registry());
        assert!(
            problems
                .iter()
                .all(|p| p.rule == dsh_session_log::Rule::OpenTurnAtEnd),
            "seed {seed}: {problems:#?}"
        );
        log.repair_interrupted()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(
            check_log(log.events(), log.registry()).is_empty(),
            "seed {seed}"
        );
        assert_derivation_matches_a_fresh_fold(&log);
    }
    println!("{seen:?}");
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert!(seen.values().all(|n| *n >= 10), "{seen:?}");
}
