//! The fake model's side of the reload-under-load test: which step of which session's turn a
//! request is, what it is answered, and the gates that hold a turn where the test wants it.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk, usage};
use dsh_tests::web::Web;
use serde_json::{Value, json};

/// The marker a prompt carries, by which the fake model knows the session and the turn.
fn marker(session: usize, turn: usize) -> String {
    format!("[load s{session} t{turn}]")
}

/// The session and turn of the last prompt marker in `messages`, and how many tool results
/// follow it: which step of which turn this request is.
pub(super) fn step_of(body: &Value) -> Option<(usize, usize, usize)> {
    let messages = body["messages"].as_array()?;
    let (at, session, turn) = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| message["role"] == "user")
        .find_map(|(at, message)| {
            let text = message["content"].to_string();
            let start = text.find("[load s")?;
            let rest = &text[start + "[load s".len()..];
            let end = rest.find(']')?;
            let (session, turn) = rest[..end].split_once(" t")?;
            Some((at, session.parse().ok()?, turn.parse().ok()?))
        })?;
    let results = messages[at..]
        .iter()
        .filter(|message| message["role"] == "tool")
        .count();
    Some((session, turn, results))
}

/// The answer to one step: `bash` first, then `read` of `work/notes.txt`, then a streamed
/// closing text. The test holds each turn where it wants it with two gates (files under
/// `work/gates`, which the test creates): the `bash` call marks itself started and waits for
/// `bash-t<turn>`, the answer streams its first piece and waits for `answer-t<turn>`.
pub(super) fn reply_for(body: &Value, work: &Path) -> Option<Reply> {
    let (session, turn, done) = step_of(body)?;
    let id = |tool: &str| format!("s{session}_t{turn}_{tool}");
    let (gates, started) = (work.join("gates"), work.join("started"));
    Some(match done {
        0 => {
            let command = format!(
                "touch {started}/s{session}-t{turn}; for i in $(seq 600); do [ -e {gate} ] && break; sleep 0.05; done; echo bash s{session}-t{turn}",
                started = started.display(),
                gate = gates.join(format!("bash-t{turn}")).display(),
            );
            Reply::tool_call(
                &id("bash"),
                "bash",
                json!({"command": command, "description": "wait for the test"}),
            )
        }
        1 => Reply::tool_call(
            &id("read"),
            "read",
            json!({"file_path": work.join("notes.txt").display().to_string()}),
        ),
        _ => {
            let mut events = vec![first_chunk()];
            for piece in 0..6 {
                events.push(SseEvent::content(&format!(
                    "answer s{session}-t{turn} part {piece}. "
                )));
                if piece == 0 {
                    events.push(SseEvent::Gate(gates.join(format!("answer-t{turn}"))));
                }
                events.push(SseEvent::Pause(Duration::from_millis(20)));
            }
            events.push(SseEvent::finish_with_usage("stop", &usage(40, 12, 0, None)));
            events.push(SseEvent::Done);
            Reply::Sse(events)
        }
    })
}

/// Lets every session past gate `name` of [`reply_for`].
pub(super) fn open_gate(work: &Path, name: &str) {
    std::fs::write(work.join("gates").join(name), "").unwrap();
}

/// Waits until every session's `bash` call of turn `turn` runs (each marked itself started).
pub(super) fn wait_bash_started(work: &Path, sessions: usize, turn: usize) {
    let suffix = format!("-t{turn}");
    let deadline = Instant::now() + dsh_tests::WAIT;
    loop {
        let started = std::fs::read_dir(work.join("started"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(&suffix))
            .count();
        if started == sessions {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "turn {turn}: {started} of {sessions} bash calls started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Prompts every session with turn `turn`.
pub(super) fn prompt_all(web: &Web, sessions: &[String], turn: usize) {
    for (n, session) in sessions.iter().enumerate() {
        web.prompt(session, &format!("{} run, read, answer", marker(n, turn)));
    }
}

/// Waits until every session has asked for step `step` (0: the `bash` call, 1: the `read`,
/// 2: the answer) of turn `turn`: all of them are then mid-turn, in that step.
pub(super) fn wait_step(server: &FakeDeepSeek, sessions: usize, turn: usize, step: usize) {
    let deadline = Instant::now() + dsh_tests::WAIT;
    loop {
        let asking: BTreeSet<usize> = server
            .requests()
            .iter()
            .filter_map(|request| step_of(&request.body))
            .filter(|(_, of, done)| *of == turn && *done == step)
            .map(|(session, _, _)| session)
            .collect();
        if asking.len() == sessions {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "turn {turn}: only {} session(s) reached step {step}",
            asking.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
