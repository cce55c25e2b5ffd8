//! Surface and derive_messages (REFERENCE §2 projection rules).

use dsh_session_log::{NewEvent, Role, SessionEvent, SessionLog, SurfaceOp, messages_hash};
use serde_json::{Value, json};

use crate::common::*;

fn seqs(log: &SessionLog) -> Vec<u64> {
    log.derive_messages().iter().map(|m| m.seq()).collect()
}

fn compaction(b: &mut B, start: u64, end: u64, shadowed: Vec<u64>) -> u64 {
    let data = json!({"content": [text("summary")], "source": {"kind": "plugin", "plugin": "compact"},
        "role": "user", "id": format!("cp-{start}-{end}")});
    b.push(
        NewEvent::surface("user/message", data, SurfaceOp::replace(start, end), 0)
            .with_sources(shadowed),
    )
}

#[test]
fn one_turn_projects_user_assistant_and_tool_result_in_order() {
    let mut b = B::new();
    b.turn_start(1);
    let u = b.user("u", "list files");
    b.step_start(1, 1);
    b.plain(
        "assistant/chunk",
        json!({"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}),
    );
    let a = b.assistant(1, 1, json!([text("running"), call_block("c1")]));
    let call = b.tool_call(1, 1, "c1");
    let r = b.tool_result(1, 1, "c1", call);
    b.step_end(1, 1);
    b.turn_end(1, "completed");
    let derived = b.log.derive_messages();
    assert_eq!(
        seqs(&b.log),
        [u, a, r],
        "chunks, boundaries and tool/call never project"
    );
    let roles: Vec<Role> = derived.iter().map(|m| m.role()).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    let lines: Vec<Value> = derived.to_values();
    assert_eq!(
        lines[0],
        json!({"role":"user","content":[text("list files")],"source":{"kind":"user"}})
    );
    assert_eq!(lines[1]["source"]["provider"], "deepseek-official");
    assert_eq!(lines[2]["content"][0]["type"], "tool-result");
    assert_eq!(lines[2]["content"].as_array().unwrap().len(), 1);
    assert_eq!(serde_json::to_value(&derived).unwrap(), Value::Array(lines));
}

#[test]
fn empty_assistant_message_stays_on_the_surface_but_does_not_project() {
    let mut b = B::new();
    let u = b.user("u", "hi");
    let a = b.assistant(1, 1, json!([]));
    assert_eq!(b.log.surface_nodes(), [u, a]);
    assert_eq!(seqs(&b.log), [u]);
}

#[test]
fn replace_shadows_the_inclusive_span_and_follows_surface_order() {
    let mut b = B::new();
    let n: Vec<u64> = (0..5).map(|i| b.user(&format!("u{i}"), "x")).collect();
    let c = compaction(&mut b, n[1], n[3], vec![n[1], n[2], n[3]]);
    // Surface order, not seq order: the summary (highest seq) sits where the span was.
    assert_eq!(b.log.surface_nodes(), [n[0], c, n[4]]);
    assert_eq!(seqs(&b.log), [n[0], c, n[4]]);
    assert_eq!(b.log.replace_generation(), 1);
    // Raw events stay in the log.
    assert_eq!(b.log.len(), 6);
    // A second compaction may shadow the first one's summary.
    let c2 = compaction(&mut b, n[0], c, vec![n[0], c]);
    assert_eq!(seqs(&b.log), [c2, n[4]]);
}

#[test]
fn a_snapshot_never_changes_after_later_appends_or_replaces() {
    let mut b = B::new();
    let u0 = b.user("u0", "a");
    let u1 = b.user("u1", "b");
    let snap = b.log.derive_messages();
    let hash = b.log.derived_hash();
    b.user("u2", "c");
    compaction(&mut b, u0, u1, vec![u0, u1]);
    assert_eq!(snap.iter().map(|m| m.seq()).collect::<Vec<_>>(), [u0, u1]);
    assert_eq!(snap.hash(), hash);
    assert_ne!(b.log.derived_hash(), hash);
}

#[test]
fn derived_hash_equals_the_hash_of_the_printed_messages_and_of_a_reload() {
    let mut b = B::new();
    let empty = b.log.derived_hash();
    assert_eq!(empty, messages_hash([]));
    assert_eq!(dsh_session_log::DerivedMessages::default().hash(), empty);
    let n: Vec<u64> = (0..6)
        .map(|i| b.user(&format!("u{i}"), &format!("t{i}")))
        .collect();
    b.assistant(1, 1, json!([text("a")]));
    compaction(&mut b, n[2], n[4], n[2..=4].to_vec());
    let values = b.log.derive_messages().to_values();
    assert_eq!(b.log.derived_hash(), messages_hash(&values));
    assert_eq!(b.log.derive_messages().hash(), b.log.derived_hash());
    let events: Vec<SessionEvent> = b.log.events().iter().map(|e| (**e).clone()).collect();
    let reloaded = SessionLog::from_events(events, registry()).unwrap();
    assert_eq!(reloaded.derived_hash(), b.log.derived_hash());
    assert_eq!(reloaded.surface_nodes(), b.log.surface_nodes());
}

#[test]
fn messages_are_views_of_the_committed_events() {
    let mut b = B::new();
    b.user("u", "hello");
    let derived = b.log.derive_messages();
    let m = derived.get(0).unwrap();
    assert!(std::sync::Arc::ptr_eq(m.event(), &b.log.events()[0]));
    assert_eq!(m.id(), Some("u"));
    assert_eq!(m.content(), [text("hello")]);
}
