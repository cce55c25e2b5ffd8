//! The agent tree's behaviour through the real `dsh-host`: ten children at once against the
//! fake DeepSeek server, a fork that inherits the completed turns of a resumed session, a
//! parent's cancel that stops the child it waits for, a background child that reports, is
//! sent more work, is listed and is interrupted, and one that settles while its parent's turn
//! still runs and is read in the parent's next turn (scripted replays whose later calls name the
//! child the run created, through the replay adapter's `{{fromRequest:…}}`).

use std::time::Duration;

use dsh_tests::events::{of_type, tool_result_texts};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use dsh_tests::headless::{against, against_args, replayed_run, stream_json};
use dsh_tests::sessions::{PLAIN_STORE, read_log, session_logs, stored_logs};
use dsh_tests::web::{start_in_workspace, turn_ended};
use dsh_tests::{HostProcess, TestDir};
use serde_json::{Value, json};

/// What Ctrl-C sends.
const SIGINT: i32 = 2;

/// A headless stream-json run of `task` against `server`, started in the background.
fn start_against(server: &FakeDeepSeek, dir: &TestDir, task: &str) -> HostProcess {
    let mut args = against_args(server, dir);
    args.extend(["--output", "stream-json", task].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HostProcess::start_with_env(&dir.home(), &args, &[("DEEPSEEK_API_KEY", "sk-test")])
}

fn slow_child(text: &str, pause: Duration) -> Reply {
    Reply::Sse(vec![
        first_chunk(),
        SseEvent::Pause(pause),
        SseEvent::content(text),
        SseEvent::Done,
    ])
}

#[test]
fn ten_children_run_at_once_and_each_answers_its_own_call() {
    let dir = TestDir::new("subagents-ten");
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let calls: Vec<(String, String)> = (0..10)
        .map(|n| {
            let arguments = json!({
                "description": format!("Child {n}"),
                "prompt": format!("Say child {n}."),
                "run_in_background": false
            });
            (format!("call_{n}"), arguments.to_string())
        })
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, arguments)| (id.as_str(), "subagent", arguments.as_str()))
        .collect();
    // Each child's answer pauses: run one after the other, the ten would need ten pauses.
    let pause = Duration::from_secs(5);
    let mut script = vec![Reply::tool_calls(&refs)];
    script.extend((0..10).map(|_| slow_child("a child's answer", pause)));
    script.push(Reply::text("all ten answered"));
    let server = FakeDeepSeek::start(script);
    let mut host = start_against(&server, &dir, "Delegate ten tasks.");
    // All ten children asked the model before the first pause ended: they run concurrently.
    let seen = server.wait_requests(11, pause - Duration::from_millis(500));
    assert_eq!(seen.len(), 11, "children asked one after the other");
    assert_eq!(host.wait_exit(Duration::from_secs(60)), Some(0));
    let logs = stored_logs(&dir.home());
    let (parent, children) = logs.split_first().unwrap();
    assert_eq!(children.len(), 10);
    let parent_events = &parent.1;
    assert_eq!(
        tool_result_texts(parent_events),
        vec!["a child's answer"; 10]
    );
    for (header, events) in children {
        assert_eq!(header["parentSession"], parent.0["id"]);
        assert_eq!(header["origin"], "subagent");
        assert_eq!(header["delegationDepth"], 1);
        let descriptor = of_type(events, "subagent/descriptor");
        assert_eq!(descriptor[0]["data"]["mode"], "one-shot");
        let policy = of_type(events, "approval/policy");
        assert_eq!(policy.last().unwrap()["data"]["source"], "delegation");
    }
    // A child's listing is kept while it runs and written beside its log when it closes: each
    // of the eleven sessions has its activity (its last message's time) and, where it was
    // titled, its title.
    for path in session_logs(&dir.home().join("sessions")) {
        let (header, events) = read_log(&path);
        let folder = path.parent().unwrap();
        let last_message = events
            .iter()
            .rev()
            .find(|event| {
                ["user/message", "assistant/message"].contains(&event["type"].as_str().unwrap())
            })
            .and_then(|event| event["time"].as_i64());
        let listing = dsh_session_jsonl::ListingFile::read(folder).unwrap_or_default();
        assert_eq!(
            listing.active_at, last_message,
            "the activity of {} ({:?})",
            header["id"], header["origin"]
        );
        let titled = of_type(&events, "session/title");
        let title = listing.title;
        match titled.last() {
            Some(event) => assert!(
                title.as_deref().is_some_and(|title| title
                    .trim_end_matches('…')
                    .starts_with(event["data"]["title"].as_str().unwrap().trim_end())),
                "{title:?} against {event}"
            ),
            None => assert_eq!(title, None, "an untitled session's listing"),
        }
    }
    server.assert_no_violations();
}

#[test]
fn a_fork_sees_the_completed_turns_and_not_the_one_asking() {
    let dir = TestDir::new("subagents-fork");
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let first = FakeDeepSeek::start(vec![Reply::text("OK")]);
    let out = against(
        &first,
        &dir,
        &[
            "--output",
            "stream-json",
            "The codeword is MARMALADE. Say OK.",
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (_, result) = stream_json(&out.stdout);
    let parent = result["sessionId"].as_str().unwrap().to_owned();
    let fork = json!({"description": "Recall the codeword", "prompt": "What is the codeword?"});
    let second = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_fork", "subagent_fork", &fork.to_string())]),
        Reply::text("MARMALADE"),
        Reply::text("It is MARMALADE."),
    ]);
    let out = against(
        &second,
        &dir,
        &[
            "--resume",
            &parent,
            "--output",
            "stream-json",
            "Ask a fork for the codeword.",
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (_, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "It is MARMALADE.");
    let requests = second.requests();
    let child_request = requests[1].body.to_string();
    assert!(child_request.contains("MARMALADE"), "{child_request}");
    assert!(child_request.contains("What is the codeword?"));
    assert!(
        !child_request.contains("Ask a fork for the codeword."),
        "the fork saw the turn in flight: {child_request}"
    );
    let logs = stored_logs(&dir.home());
    let child = logs
        .iter()
        .find(|(header, _)| header["parentSession"] == parent.as_str())
        .expect("the fork's log");
    assert!(child.0["seedLength"].as_u64().is_some_and(|n| n > 0));
    assert_eq!(
        of_type(&child.1, "subagent/descriptor")[0]["data"]["provider"],
        "fork"
    );
}

#[test]
fn cancelling_the_parent_cancels_the_child_it_waits_for() {
    let dir = TestDir::new("subagents-cancel");
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    let task =
        json!({"description": "Wait long", "prompt": "Talk slowly.", "run_in_background": false});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "subagent", &task.to_string())]),
        slow_child("never finished", Duration::from_secs(30)),
    ]);
    let mut host = start_against(&server, &dir, "Delegate a slow task.");
    assert_eq!(server.wait_requests(2, Duration::from_secs(20)).len(), 2);
    host.signal(SIGINT);
    assert!(host.wait_exit(Duration::from_secs(20)).is_some());
    let logs = stored_logs(&dir.home());
    let (parent, children) = logs.split_first().unwrap();
    let end = |events: &[Value]| {
        of_type(events, "turn/end")
            .last()
            .map(|end| end["data"]["reason"].clone())
    };
    assert_eq!(end(&parent.1).unwrap()["kind"], "aborted");
    assert_eq!(
        end(&children[0].1).unwrap(),
        json!({"kind": "aborted", "reason": {"kind": "parent"}})
    );
}

/// One replay script entry: a text answer.
fn text_entry(text: &str) -> Value {
    json!({"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": text},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "stop"}}
    ]})
}

/// One replay script entry: a single tool call.
fn call_entry(id: &str, name: &str, arguments: &Value) -> Value {
    let arguments = arguments.to_string();
    json!({"kind": "chunks", "chunks": [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": id, "name": name, "argumentsDelta": arguments},
        {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": id, "name": name, "arguments": arguments}},
        {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "tool-calls"}}
    ]})
}

/// A replay script as a log: a header, then each entry's chunks as `assistant/chunk` events.
fn script_log(created: i64, entries: &[Value]) -> String {
    let mut lines = vec![json!({"type": "session", "version": 0, "id": format!("script-{created}"), "createdAt": created, "delegationDepth": 0}).to_string()];
    let mut seq = 0;
    for (step, entry) in entries.iter().enumerate() {
        for chunk in entry["chunks"].as_array().unwrap() {
            lines.push(
                json!({"type": "assistant/chunk", "seq": seq, "time": 0, "data": {"turn": 1, "step": step + 1, "chunk": chunk}})
                    .to_string(),
            );
            seq += 1;
        }
    }
    lines.join("\n") + "\n"
}

/// Writes the replay scripts of one parent (`parent`, as the override of an empty log) and
/// one child, and the plain store; answers the parent's log.
fn write_scripts(dir: &TestDir, parent: &[Value], child: &[Value]) -> std::path::PathBuf {
    dir.write("home/cordis.patch.yml", PLAIN_STORE);
    dir.write(
        "replay/replay.override.json",
        &Value::from(parent.to_vec()).to_string(),
    );
    dir.write("replay/session.1.jsonl", &script_log(2, child));
    dir.write("replay/session.jsonl", &script_log(1, &[]))
}

/// Runs a replayed headless task with the parent's script `parent` and one child's `child`.
fn replayed(dir: &TestDir, parent: &[Value], child: &[Value], task: &str) -> dsh_tests::Output {
    let log = write_scripts(dir, parent, child);
    replayed_run(dir, &log, &[task])
}

/// The child the run started, as the parent's later calls name it.
const STARTED_CHILD: &str = "{{fromRequest:started subagent ([0-9a-f-]{36})}}";

#[test]
fn a_background_child_reports_is_sent_more_work_and_is_listed() {
    let dir = TestDir::new("subagents-report");
    let parent = [
        call_entry(
            "c1",
            "subagent",
            &json!({"description": "Report a finding", "prompt": "Report, then stop."}),
        ),
        call_entry(
            "c2",
            "send_message",
            &json!({"subagent_id": STARTED_CHILD, "message": "Now say SECOND."}),
        ),
        call_entry("c3", "list_agents", &json!({})),
        call_entry(
            "c4",
            "send_message",
            &json!({"subagent_id": "00000000-0000-4000-8000-000000000000", "message": "Anyone?"}),
        ),
        text_entry("STARTED"),
        text_entry("NOTED"),
        text_entry("NOTED AGAIN"),
    ];
    let child = [
        call_entry("r1", "report", &json!({"output": "CHILD_REPORT_OK"})),
        text_entry("Reported."),
        text_entry("SECOND"),
    ];
    let out = replayed(&dir, &parent, &child, "Start a reporting child.");
    assert_eq!(out.code, Some(0), "{out:?}");
    let logs = stored_logs(&dir.home());
    let (parent_log, children) = logs.split_first().unwrap();
    let texts = tool_result_texts(&parent_log.1);
    let child_id = texts[0]
        .strip_prefix("started subagent ")
        .unwrap()
        .to_owned();
    assert_eq!(
        texts[1],
        format!("message queued as the next turn for subagent {child_id}")
    );
    assert!(
        texts[2].starts_with(&format!("{child_id} [")) && texts[2].ends_with("— Report a finding"),
        "{}",
        texts[2]
    );
    assert_eq!(
        texts[3],
        "Error: subagent \"00000000-0000-4000-8000-000000000000\" is unavailable"
    );
    let sources: Vec<&str> = of_type(&parent_log.1, "user/message")
        .iter()
        .filter_map(|event| event["data"]["source"]["kind"].as_str())
        .collect();
    assert!(sources.contains(&"subagent-report"), "{sources:?}");
    assert!(sources.contains(&"subagent-settled"), "{sources:?}");
    let (child_header, child_events) = &children[0];
    assert_eq!(child_header["id"], child_id.as_str());
    assert!(
        tool_result_texts(child_events)[0]
            .starts_with("report accepted by the agent that started you as message ")
    );
    assert_eq!(
        of_type(child_events, "turn/end").len(),
        2,
        "the child ran the message as a second turn"
    );
}

/// A background child that settles while its parent's turn is still working is read in a turn
/// of its own, after that one: never steered into the turn it happened to overlap, so what the
/// parent's turns hold does not depend on which step the parent was in.
#[test]
fn a_child_settling_during_its_parents_turn_is_read_in_the_next_turn() {
    let dir = TestDir::new("subagents-settle-mid-turn");
    let parent = [
        call_entry(
            "c1",
            "subagent",
            &json!({"description": "Answer at once", "prompt": "Say CHILD_DONE."}),
        ),
        // The parent is still in its first turn, in this call, when the child settles.
        call_entry(
            "c2",
            "bash",
            &json!({"command": "sleep 2", "description": "wait"}),
        ),
        text_entry("DONE"),
        text_entry("NOTED"),
    ];
    let child = [text_entry("CHILD_DONE")];
    let out = replayed(&dir, &parent, &child, "Start a child, then wait.");
    assert_eq!(out.code, Some(0), "{out:?}");
    let logs = stored_logs(&dir.home());
    let (parent_log, children) = logs.split_first().unwrap();
    // The child was done long before the parent's wait was.
    let child_end = of_type(&children[0].1, "turn/end")[0]["time"]
        .as_u64()
        .unwrap();
    let wait_end = of_type(&parent_log.1, "tool/result")[1]["time"]
        .as_u64()
        .unwrap();
    assert!(child_end < wait_end, "the child settled after the wait");
    let events = &parent_log.1;
    let turn_of = |kind: &str| {
        let at = events
            .iter()
            .position(|event| {
                event["type"] == "user/message" && event["data"]["source"]["kind"] == kind
            })
            .unwrap_or_else(|| panic!("no {kind} message"));
        of_type(&events[..at], "turn/start").len()
    };
    assert_eq!(turn_of("subagent-settled"), 2, "the notice joined turn 1");
    let ends = of_type(events, "turn/end");
    assert_eq!(ends.len(), 2, "{ends:?}");
    // Turn 1 kept its three steps: the subagent call, the wait, the answer.
    let first_turn_steps = of_type(events, "step/start")
        .iter()
        .filter(|event| event["data"]["turn"] == 1)
        .count();
    assert_eq!(first_turn_steps, 3);
}

#[test]
fn an_interrupted_background_child_settles_and_its_parent_is_told() {
    let dir = TestDir::new("subagents-interrupt");
    let parent = [
        call_entry(
            "c1",
            "subagent",
            &json!({"description": "Sleep long", "prompt": "Sleep."}),
        ),
        call_entry("c2", "interrupt_agent", &json!({"agent_id": STARTED_CHILD})),
        call_entry(
            "c3",
            "interrupt_agent",
            &json!({"agent_id": "00000000-0000-4000-8000-000000000000"}),
        ),
        text_entry("DONE"),
        text_entry("NOTED"),
    ];
    let child = [
        call_entry(
            "b1",
            "bash",
            &json!({"command": "sleep 30", "description": "sleep"}),
        ),
        text_entry("slept"),
    ];
    let out = replayed(&dir, &parent, &child, "Start a sleeping child and stop it.");
    assert_eq!(out.code, Some(0), "{out:?}");
    let logs = stored_logs(&dir.home());
    let (parent_log, children) = logs.split_first().unwrap();
    let texts = tool_result_texts(&parent_log.1);
    assert!(
        texts[1].starts_with("interrupt requested for agent "),
        "{}",
        texts[1]
    );
    assert!(texts[2].contains("is not one you started"), "{}", texts[2]);
    let child_end = of_type(&children[0].1, "turn/end")[0]["data"]["reason"].clone();
    assert_eq!(
        child_end,
        json!({"kind": "aborted", "reason": {"kind": "parent"}})
    );
    let notice = of_type(&parent_log.1, "user/message")
        .into_iter()
        .find(|event| event["data"]["source"]["kind"] == "subagent-settled")
        .expect("the settled notice");
    assert!(
        notice["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("was interrupted")
    );
}

/// A child runs under its parent's preset: a session switched to read-only cannot write
/// through the subagent it starts.
#[test]
fn a_child_is_never_wider_than_its_parent() {
    dsh_tests::needs_bubblewrap!("a read-only session (protected paths need bubblewrap)");
    let dir = TestDir::new("subagents-preset");
    let task = json!({"description": "Make a file", "prompt": "Create made.txt.", "run_in_background": false});
    let write = json!({"command": "echo made > made.txt", "description": "make a file"});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "subagent", &task.to_string())]),
        Reply::tool_calls(&[("call_2", "bash", &write.to_string())]),
        Reply::text("I could not write it."),
        Reply::text("The child could not write."),
    ]);
    let mut web = start_in_workspace(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.setPermission",
        &json!({"sessionId": session, "preset": "read-only"}),
    );
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "delegate a write"}),
    );
    socket.until(300, turn_ended);
    assert!(
        !dir.join("work/made.txt").exists(),
        "the child wrote in a read-only session"
    );
    // The child's own request said so: it was told the read-only policy.
    let child_request = server.requests()[1].body["messages"].to_string();
    assert!(child_request.contains("read-only"), "{child_request}");
    assert_eq!(web.host.stop(), Some(0));
}

/// Ctrl-C while the agent waits for its background child: the child is cancelled, the run
/// ends aborted (exit 130), and the parent is not woken for another turn by the child's end.
#[test]
fn a_signal_while_a_background_child_runs_stops_it_and_nothing_restarts() {
    let dir = TestDir::new("subagents-signal");
    let parent = [
        call_entry(
            "c1",
            "subagent",
            &json!({"description": "Sleep long", "prompt": "Sleep."}),
        ),
        text_entry("STARTED"),
        text_entry("NOT AGAIN"),
    ];
    let child = [
        call_entry(
            "b1",
            "bash",
            &json!({"command": "sleep 30", "description": "sleep"}),
        ),
        text_entry("slept"),
    ];
    let log = write_scripts(&dir, &parent, &child);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut host = HostProcess::start_with_env(
        &dir.home(),
        &[
            "--profile",
            "headless",
            "--",
            "--cwd",
            work.to_str().unwrap(),
            "--replay",
            log.to_str().unwrap(),
            "--output",
            "stream-json",
            "Start a sleeping child.",
        ],
        &[
            ("DEEPSEEK_API_KEY", ""),
            ("DSH_PERMISSION_MODE", "danger-full-access"),
        ],
    );
    // The child's sleep has started once its call is logged.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !stored_logs(&dir.home()).iter().any(|(header, events)| {
        header["origin"] == "subagent" && !of_type(events, "tool/call").is_empty()
    }) {
        assert!(
            std::time::Instant::now() < deadline,
            "the child's call never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    host.signal(SIGINT);
    assert_eq!(host.wait_exit(Duration::from_secs(20)), Some(130));
    let logs = stored_logs(&dir.home());
    let (parent_log, children) = logs.split_first().unwrap();
    assert_eq!(
        of_type(&parent_log.1, "turn/start").len(),
        1,
        "the parent ran again"
    );
    let child_end = of_type(&children[0].1, "turn/end")[0]["data"]["reason"].clone();
    assert_eq!(
        child_end,
        json!({"kind": "aborted", "reason": {"kind": "parent"}})
    );
}
