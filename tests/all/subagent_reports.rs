//! A background child's report through the real host and the fake DeepSeek server: a report
//! that lands while its parent's final answer is still streaming does not keep that turn
//! going (an injected message never costs the parent a step of its own); the parent reads it
//! in its next turn, with the child's settled notice.

use std::time::{Duration, Instant};

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use dsh_tests::headless::against;
use dsh_tests::sessions::{PLAIN_STORE, stored_logs};
use serde_json::{Value, json};

const TASK: &str = "Start a reporting child.";
const CHILD_PROMPT: &str = "Report, then stop.";

/// Whose request `body` is: the child's first user message is its prompt.
fn from_child(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|message| message["role"] == "user"))
        .is_some_and(|first| first["content"].to_string().contains(CHILD_PROMPT))
}

fn tool_results(body: &Value) -> usize {
    body["messages"].as_array().map_or(0, |messages| {
        messages
            .iter()
            .filter(|message| message["role"] == "tool")
            .count()
    })
}

/// An answer whose stream holds after its first words until `gate` exists.
fn held_answer(gate: &std::path::Path) -> Reply {
    Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("DO"),
        SseEvent::Gate(gate.to_path_buf()),
        SseEvent::content("NE"),
        SseEvent::finish("stop"),
        SseEvent::Done,
    ])
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

#[test]
fn a_report_landing_during_the_parents_final_answer_waits_for_its_next_turn() {
    let dir = TestDir::new("subagent-report-final-step");
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let gate = dir.join("release-the-answer");
    let held = held_answer(&gate);
    let server = FakeDeepSeek::start(Vec::new())
        .answer_titles("Reports")
        .route(move |body| {
            let results = tool_results(body);
            let text = body.to_string();
            Some(match (from_child(body), results) {
                (true, 0) => Reply::tool_call("r1", "report", json!({"output": "CHILD_REPORT_OK"})),
                (true, _) => Reply::text("Reported."),
                (false, 0) => Reply::tool_call(
                    "c1",
                    "subagent",
                    json!({"description": "Report a finding", "prompt": CHILD_PROMPT}),
                ),
                (false, _) if !text.contains("CHILD_REPORT_OK") => held.clone(),
                (false, _) => Reply::text("NOTED"),
            })
        });
    let releasing = std::thread::scope(|scope| {
        let server = &server;
        let gate = &gate;
        // Once the child's report is in (its next request carries the report's result) and
        // the parent's answer is held mid-stream, the answer goes on.
        let released = scope.spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                let requests = server.requests();
                let child_reported = requests
                    .iter()
                    .any(|request| from_child(&request.body) && tool_results(&request.body) > 0);
                let parent_answering = requests
                    .iter()
                    .any(|request| !from_child(&request.body) && tool_results(&request.body) > 0);
                if child_reported && parent_answering {
                    std::fs::write(gate, "").unwrap();
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            std::fs::write(gate, "").unwrap();
            false
        });
        let out = against(server, &dir, &[TASK]);
        assert_eq!(out.code, Some(0), "{out:?}");
        released.join().unwrap()
    });
    assert!(
        releasing,
        "the child never reported during the parent's answer"
    );
    let logs = stored_logs(&dir.home());
    // The parent's log is the first made.
    let (_, events) = &logs[0];
    let turn_of_report = {
        let at = events
            .iter()
            .position(|event| {
                event["type"] == "user/message"
                    && event["data"]["source"]["kind"] == "subagent-report"
            })
            .expect("the report reached the parent");
        of_type(&events[..at], "turn/start").len()
    };
    // Turn 1 kept its two steps (the call and the answer the report landed in).
    let first_turn_steps = of_type(events, "step/start")
        .iter()
        .filter(|event| event["data"]["turn"] == 1)
        .count();
    assert_eq!(first_turn_steps, 2, "the report cost turn 1 a step");
    assert_eq!(turn_of_report, 2, "the report joined turn 1");
}
