//! `dsh-host --profile headless "task"` end to end: the real runner, loop, tools and session
//! store, answered by a recorded log (`--replay`) or by the fake DeepSeek server over loopback.

use std::path::PathBuf;

use dsh_tests::events::durable_types;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk, usage};
use dsh_tests::headless::{self, against, stream_json};
use dsh_tests::recorded::{
    DEMO_TASK, demo_log, hanging_replay, round_trip_log, round_trip_with, wait_until_hanging,
};
use dsh_tests::sessions::stored_session_ids;
use dsh_tests::{HostProcess, TestDir, WAIT};
use serde_json::{Value, json};

#[test]
fn a_recorded_tool_round_trip_replays_to_the_same_durable_sequence() {
    dsh_tests::needs_corpus!("a_recorded_tool_round_trip_replays_to_the_same_durable_sequence");
    let dir = TestDir::new("headless-replay");
    let log = round_trip_log();
    let task = "Prove the product headless profile path with one real tool round trip.";
    let out = headless::run(
        &dir,
        &[
            "--replay",
            log.to_str().unwrap(),
            "--output",
            "stream-json",
            task,
        ],
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    let recorded_events: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(durable_types(&events), durable_types(&recorded_events));
    let result_text = |events: &[Value]| {
        events
            .iter()
            .find(|event| event["type"] == "tool/result")
            .map(|event| event["data"]["message"]["content"][0]["content"].clone())
    };
    assert_eq!(result_text(&events), result_text(&recorded_events));
    assert_eq!(
        result["output"],
        "CLI tool round trip complete: CLI_TOOL_ROUND_TRIP"
    );
    let first_user = events
        .iter()
        .find(|event| event["type"] == "user/message")
        .unwrap();
    assert_eq!(first_user["data"]["content"][0]["text"], task);
    // The session is persisted and checks sound.
    let sessions = dir.home().join("sessions");
    assert!(
        sessions.is_dir(),
        "nothing persisted under {}",
        sessions.display()
    );
}

#[test]
fn text_output_is_the_final_answer_alone() {
    dsh_tests::needs_corpus!("text_output_is_the_final_answer_alone");
    let dir = TestDir::new("headless-text");
    let log = round_trip_log();
    let out = headless::run(&dir, &["--replay", log.to_str().unwrap(), "run it"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout,
        "CLI tool round trip complete: CLI_TOOL_ROUND_TRIP"
    );
}

#[test]
fn without_a_model_the_turn_ends_no_model_and_exits_1() {
    let dir = TestDir::new("headless-no-model");
    let out = headless::run(&dir, &["--output", "stream-json", "say hi"], &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("NO_MODEL"), "{}", out.stderr);
    let (events, _) = stream_json(&out.stdout);
    let end = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert_eq!(end["data"]["reason"]["error"]["code"], "NO_MODEL", "{end}");
}

#[test]
fn usage_mistakes_exit_2_and_say_what_is_wrong() {
    let dir = TestDir::new("headless-usage");
    let out = headless::run(&dir, &[], &[]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("give a task"), "{}", out.stderr);
    let out = headless::run(&dir, &["--output", "xml", "task"], &[]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("`xml`"), "{}", out.stderr);
}

#[test]
fn a_bash_round_trip_through_the_deepseek_adapter() {
    let arguments = json!({"command": "echo fake-ok", "description": "say ok"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &arguments)]),
        Reply::text("all done"),
    ]);
    let dir = TestDir::new("headless-deepseek");
    let out = against(&server, &dir, &["run echo"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "all done");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.to_string();
    assert!(
        second.contains("fake-ok"),
        "the tool result did not reach the model: {second}"
    );
    let tools = requests[0].body["tools"].to_string();
    assert!(
        tools.contains("\"bash\"") && tools.contains("\"read\""),
        "{tools}"
    );
}

/// The fake server refuses, as the live API does, a thinking-mode request whose tool-call turn
/// lost its reasoning or whose calls are not each answered once: this run passes only if the
/// real loop and adapter keep both.
#[test]
fn a_reasoning_tool_call_turn_goes_back_whole_with_its_answers() {
    let echo = |word: &str| {
        json!({"command": format!("echo {word}"), "description": "say a word"}).to_string()
    };
    let (first, second) = (echo("one"), echo("two"));
    let Reply::Sse(mut events) = Reply::tool_calls(&[
        ("call_a", "bash", first.as_str()),
        ("call_b", "bash", second.as_str()),
    ]) else {
        panic!("tool calls stream");
    };
    events.insert(1, SseEvent::reasoning("Two words, "));
    events.insert(2, SseEvent::reasoning("two calls."));
    let server = FakeDeepSeek::start(vec![Reply::Sse(events), Reply::text("both said")]);
    let dir = TestDir::new("headless-reasoning-calls");
    let out = against(&server, &dir, &["say two words"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "both said");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let at = messages
        .iter()
        .position(|message| message["tool_calls"].is_array())
        .unwrap();
    assert_eq!(
        messages[at]["reasoning_content"], "Two words, two calls.",
        "{}",
        requests[1].body
    );
    // Answered in whatever order the calls finished, each once, right after the turn.
    let mut answers: Vec<&str> = messages[at + 1..at + 3]
        .iter()
        .map(|message| message["tool_call_id"].as_str().unwrap_or_default())
        .collect();
    answers.sort_unstable();
    assert_eq!(answers, ["call_a", "call_b"], "{}", requests[1].body);
}

#[test]
fn a_refused_request_ends_the_turn_error_and_max_tokens_exits_4() {
    // A 400 is not transient: no retry, the turn ends `error` at once.
    let server = FakeDeepSeek::start(vec![Reply::error(
        400,
        "invalid_request_error",
        "fake refusal",
    )]);
    let dir = TestDir::new("headless-500");
    let out = against(&server, &dir, &["--output", "stream-json", "fail please"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let end = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert_eq!(end["data"]["reason"]["kind"], "error", "{end}");
    assert_eq!(server.requests().len(), 1);
    assert!(out.stderr.contains("fake refusal"), "{}", out.stderr);

    let cut = Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("a long answer that"),
        SseEvent::finish_with_usage("length", &usage(10, 4096, 0, None)),
        SseEvent::Done,
    ]);
    let server = FakeDeepSeek::start(vec![cut]);
    let dir = TestDir::new("headless-length");
    let out = against(&server, &dir, &["--output", "stream-json", "write a lot"]);
    assert_eq!(out.code, Some(4), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let end = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert_eq!(end["data"]["reason"]["kind"], "max-tokens", "{end}");
}

/// A headless turn (stream-json) hanging in its model request.
fn hanging_headless(name: &str) -> (HostProcess, TestDir) {
    let dir = TestDir::new(name);
    let (log, ready) = hanging_replay(&dir);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let host = HostProcess::start_with_env(
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
            "wait forever",
        ],
        &[("DEEPSEEK_API_KEY", "")],
    );
    wait_until_hanging(&host, &ready);
    (host, dir)
}

/// Starts a headless turn whose replayed model hangs, sends `signal` once it hangs, and answers
/// the exit code and the logged events.
fn signal_mid_stream(name: &str, signal: i32) -> (Option<i32>, Vec<Value>) {
    let (mut host, _dir) = hanging_headless(name);
    host.signal(signal);
    let code = host.wait_exit(WAIT);
    let (events, _) = stream_json(&host.stdout().join("\n"));
    (code, events)
}

#[test]
fn sigint_mid_stream_cancels_the_turn_and_exits_130() {
    dsh_tests::needs_corpus!("sigint_mid_stream_cancels_the_turn_and_exits_130");
    let (code, events) = signal_mid_stream("headless-sigint", 2);
    assert_eq!(code, Some(130), "{events:?}");
    let end = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert_eq!(
        end["data"]["reason"],
        json!({"kind": "aborted", "reason": {"kind": "user"}})
    );
    // The hanging replay streams the reference's `partial` first: the cut-off answer is kept,
    // marked interrupted.
    let kinds = durable_types(&events);
    assert_eq!(
        kinds,
        [
            "agent/inbox/spliced",
            "turn/start",
            "agent/inbox/spliced",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end"
        ],
        "{events:?}"
    );
    let kept = events
        .iter()
        .find(|event| event["type"] == "assistant/message")
        .unwrap();
    assert_eq!(kept["data"]["interrupted"], true, "{kept}");
    assert_eq!(kept["data"]["message"]["content"][0]["text"], "partial");
}

#[test]
fn sigterm_mid_stream_closes_the_turn_and_exits_143() {
    dsh_tests::needs_corpus!("sigterm_mid_stream_closes_the_turn_and_exits_143");
    let (code, events) = signal_mid_stream("headless-sigterm", 15);
    assert_eq!(code, Some(143), "{events:?}");
    let end = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert_eq!(
        end["data"]["reason"],
        json!({"kind": "aborted", "reason": {"kind": "disposed"}})
    );
}

/// The README's run command replays the shipped demo: the loop and the real bash tool at work,
/// offline and without a key.
#[test]
fn the_shipped_demo_replays_offline() {
    let dir = TestDir::new("headless-demo");
    let demo = demo_log();
    let out = headless::run(
        &dir,
        &[
            "--replay",
            demo.to_str().unwrap(),
            "--output",
            "stream-json",
            DEMO_TASK,
        ],
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    let tool_text = events
        .iter()
        .find(|event| event["type"] == "tool/result")
        .map(|event| event["data"]["message"]["content"][0]["content"][0]["text"].clone());
    assert_eq!(tool_text, Some(json!("42\n")), "{events:?}");
    assert!(
        result["output"].as_str().unwrap().contains("42"),
        "{result}"
    );
}

/// A plugin that adds an unlogged message to the request is stopped where the request leaves:
/// the turn ends `error` naming the session, and the replayed model never answers it.
#[test]
fn a_smuggled_message_is_stopped_by_the_model_visible_check() {
    dsh_tests::needs_corpus!("a_smuggled_message_is_stopped_by_the_model_visible_check");
    dsh_tests::plugin_lib("smuggler");
    let (out, events, result) = round_trip_with(
        "headless-smuggler",
        "    - id: smuggler\n      name: smuggler\n",
        &[],
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let end = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    let message = end["data"]["reason"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("model-visible history") && message.contains(&session),
        "{end}"
    );
    assert!(
        !events.iter().any(|event| event["type"] == "tool/call"),
        "the doctored request was answered: {events:?}"
    );
}

/// The instruction chain reaches the model as one logged context snapshot, in the reference's
/// frame: the user-wide `$DSH_HOME/AGENTS.md` first, then from the project root (the parent
/// holding `.git`) down to the working directory, a `CLAUDE.md` beside an `AGENTS.md` too
/// (one that repeats it is shown once); the system prompt comes from the system-prompt
/// plugin, and a second turn of the same session does not log the unchanged snapshot again.
#[test]
fn agents_md_reaches_the_model_as_a_logged_snapshot_once() {
    let server = FakeDeepSeek::start(vec![Reply::text("first"), Reply::text("second")]);
    let dir = TestDir::new("headless-agents-md");
    dir.write(".git/HEAD", "ref: refs/heads/main\n");
    dir.write("home/AGENTS.md", "User rule: answer in English.");
    dir.write("AGENTS.md", "Outer rule: run the tests.");
    dir.write("work/AGENTS.md", "Inner rule: keep it small.");
    dir.write("work/CLAUDE.md", "Claude rule: no emoji.");
    dir.write("work/AGENTS.local.md", "  Inner rule: keep it small.\n");
    let out = against(&server, &dir, &["--output", "stream-json", "hello"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    let snapshots: Vec<&Value> = events
        .iter()
        .filter(|event| event["data"]["source"]["key"] == "agents-md")
        .collect();
    assert_eq!(snapshots.len(), 1, "{events:?}");
    let text = snapshots[0]["data"]["content"][0]["text"].as_str().unwrap();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing: {text}"))
    };
    assert!(text.starts_with("<system-reminder>\n") && text.ends_with("\n</system-reminder>"));
    assert!(
        at("Instructions from: $DSH_HOME/AGENTS.md") < at("Instructions from: AGENTS.md")
            && at("Instructions from: AGENTS.md\n\nOuter rule")
                < at("Instructions from: work/AGENTS.md\n\nInner rule")
            && at("Inner rule") < at("Instructions from: work/CLAUDE.md\n\nClaude rule"),
        "{text}"
    );
    assert_eq!(
        text.matches("Inner rule").count(),
        1,
        "the repeating overlay: {text}"
    );
    let first = server.requests()[0].body.clone();
    assert!(
        first["messages"].to_string().contains("Inner rule"),
        "{first}"
    );
    assert_eq!(first["messages"][0]["role"], "system", "{first}");
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are a coding agent") && system.contains("what you could not do"),
        "the system-prompt plugin's identity and persona sections: {system}"
    );
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let again = against(
        &server,
        &dir,
        &["--output", "stream-json", "--resume", &session, "again"],
    );
    assert_eq!(again.code, Some(0), "{again:?}");
    let (events, _) = stream_json(&again.stdout);
    assert!(
        !events
            .iter()
            .any(|event| event["data"]["source"]["form"] == "snapshot"),
        "an unchanged snapshot (instructions or runtime context) was logged again: {events:?}"
    );
}

/// `agent/turn-stopping` keeps a completed turn going: the hook's message enters as the next
/// step's input, the model answers it, and only then does the turn end.
#[test]
fn a_turn_stopping_hook_keeps_the_turn_going_once() {
    dsh_tests::plugin_lib("hooks_probe");
    let server = FakeDeepSeek::start(vec![Reply::text("first"), Reply::text("second")]);
    let dir = TestDir::new("headless-continue");
    dir.write(
        "home/cordis.patch.yml",
        "- insert:\n    - id: hooks\n      name: hooks-probe\n      config:\n        continueWith: now check again\n",
    );
    let out = against(&server, &dir, &["--output", "stream-json", "hello"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(server.requests().len(), 2);
    let (events, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "second");
    let ends: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "turn/end")
        .collect();
    assert_eq!(ends.len(), 1, "{events:?}");
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("now check again"), "{second}");
}

#[test]
fn resuming_an_unknown_session_names_it_and_exits_1() {
    let dir = TestDir::new("headless-resume-unknown");
    let out = headless::run(&dir, &["--resume", "no-such-session", "continue"], &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("no-such-session"), "{}", out.stderr);
}

/// The log-only companions of a request: `session/title` (the fallback from the first human
/// message, right after it, once per session, kept across a resume) and `request/context` (the route, logged
/// after the header and again only when it changes).
#[test]
fn a_session_is_titled_once_and_its_route_logged_once() {
    let server = FakeDeepSeek::start(vec![Reply::text("first"), Reply::text("second")]);
    let dir = TestDir::new("headless-title");
    let out = against(
        &server,
        &dir,
        &[
            "--output",
            "stream-json",
            "Fix the \u{1b}[31mflaky\u{1b}[0m   parser test in src/parse.rs please",
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, result) = stream_json(&out.stdout);
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let title = events
        .iter()
        .find(|event| event["type"] == "session/title")
        .unwrap_or_else(|| panic!("no title: {types:?}"));
    assert_eq!(title["data"]["title"], "Fix the flaky parser test");
    assert_eq!(title["data"]["source"]["kind"], "fallback");
    let task_seq = events
        .iter()
        .find(|event| event["type"] == "user/message")
        .unwrap()["seq"]
        .clone();
    assert_eq!(title["data"]["messageSeqs"], json!([task_seq]));
    let header = types.iter().position(|t| *t == "request/header").unwrap();
    // Right after the step's opening messages (the task and its context snapshot), before its
    // request, as the reference logs it: the title is appended while that batch is announced,
    // never racing the loop's next appends.
    assert_eq!(types[header - 1], "session/title", "{types:?}");
    assert_eq!(types[header - 2], "user/message", "{types:?}");
    assert_eq!(
        events[header - 1]["seq"].as_u64(),
        events[header - 2]["seq"].as_u64().map(|seq| seq + 1)
    );
    assert_eq!(types[header + 1], "request/context", "{types:?}");
    let context = &events[header + 1]["data"];
    assert_eq!(
        *context,
        // The window is the model catalog's, as the reference logs it.
        json!({"provider": "deepseek-official", "model": "deepseek-v4-flash", "contextWindow": 1_000_000})
    );
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let again = against(
        &server,
        &dir,
        &["--output", "stream-json", "--resume", &session, "and more"],
    );
    assert_eq!(again.code, Some(0), "{again:?}");
    let (events, _) = stream_json(&again.stdout);
    for kind in ["session/title", "request/context"] {
        assert!(
            !events.iter().any(|event| event["type"] == kind),
            "`{kind}` logged again on resume: {events:?}"
        );
    }
}

/// The system prompt as the model gets it: identity, the persona with `{{model}}` and `{{cwd}}`
/// replaced, then the guidance of the visible tools in their order (read 100 .. bash 105).
#[test]
fn the_system_prompt_carries_variables_and_tool_guidance() {
    let server = FakeDeepSeek::start(vec![Reply::text("ok")]);
    let dir = TestDir::new("headless-prompt");
    let out = against(&server, &dir, &["hi"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let body = &server.requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    let work = dir.join("work").canonicalize().unwrap();
    let persona = format!(
        "You run on deepseek-v4-flash and work in {}.",
        work.display()
    );
    let at = |needle: &str| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("`{needle}` is not in the prompt: {system}"))
    };
    let order = [
        at("You are a coding agent"),
        at(&persona),
        at("use the read tool rather than cat"),
        at("Use edit for changes"),
        at("Every bash call starts a fresh shell"),
        at("keep a task list with todo_write"),
    ];
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{system}");
    assert!(!system.contains("{{"), "{system}");
    // The runtime context reaches the model as a message, not in the system prompt.
    let messages = body["messages"].to_string();
    assert!(
        messages.contains("Sandbox: workspace-write")
            && messages.contains(&format!("\\\"{}\\\"", work.display()))
            && messages.contains("Approval policy: ask"),
        "{messages}"
    );
    assert!(!system.contains("File policy"), "{system}");
}

/// A section that refers to an unknown variable fails the turn before anything is asked,
/// naming the reference and the section.
#[test]
fn an_unknown_prompt_variable_ends_the_turn_before_the_request() {
    let server = FakeDeepSeek::start(vec![Reply::text("never")]);
    let dir = TestDir::new("headless-prompt-variable");
    dir.write(
        "home/cordis.patch.yml",
        "- id: system-prompt\n  config:\n    persona: Work on {{projct}} now.\n",
    );
    let out = against(&server, &dir, &["hi"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(server.requests().is_empty());
    assert!(
        out.stderr
            .contains("unknown prompt variable \"{{projct}}\" in section \"persona\"")
            && out
                .stderr
                .contains("registered variables: cwd, model, provider"),
        "{}",
        out.stderr
    );
}

/// A result over the inline budget (50,000 bytes) is kept whole in a private file under the
/// home and the model gets a head/tail preview with the path; a `read` is never spilled.
#[test]
fn a_huge_result_is_spilled_to_a_private_file_and_previewed() {
    let command = json!({"command": "printf 'BEGIN-'; head -c 60000 /dev/zero | tr '\\0' a; printf -- '-FINISH'", "description": "print a lot"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &command)]),
        Reply::text("seen"),
    ]);
    let dir = TestDir::new("headless-spill");
    let out = against(&server, &dir, &["--output", "stream-json", "print a lot"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let result = events
        .iter()
        .find(|event| event["type"] == "tool/result")
        .unwrap();
    let text = result["data"]["message"]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.len() <= 50_000, "{}", text.len());
    assert!(text.starts_with("BEGIN-aaa"), "{}", &text[..40]);
    let (preview, notice) = text.split_once("\n\n(Omitted ").unwrap();
    assert!(preview.ends_with("aaa-FINISH"));
    let path = notice
        .split_once("stored at: ")
        .and_then(|(_, rest)| rest.split_once(". Use read"))
        .map(|(path, _)| PathBuf::from(path))
        .unwrap();
    assert!(
        path.starts_with(dir.home().join("spill")),
        "{}",
        path.display()
    );
    let full = std::fs::read_to_string(&path).unwrap();
    assert_eq!(full.len(), 60_000 + "BEGIN-".len() + "-FINISH".len());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // What the model got is the preview, not the whole output.
    let second = server.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("Full formatted result stored at"),
        "{}",
        second.len()
    );
    assert!(second.len() < 60_000, "{}", second.len());
}

/// The file tools reach files only through the `fs` service: the `fs` row disabled and a
/// confined implementation inserted in its place (`fs-probe`, refusing paths with `secret`)
/// confines `read`, `write`, `glob` and `grep` without touching them.
#[test]
fn the_file_tools_go_through_the_fs_row() {
    dsh_tests::plugin_lib("fs_probe");
    let read = |path: &str| json!({"file_path": path}).to_string();
    let write = json!({"file_path": "secret-out.txt", "content": "x"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[
            ("call_1", "read", &read("notes.txt")),
            ("call_2", "read", &read("secret.txt")),
            ("call_3", "write", &write),
            ("call_4", "glob", &json!({"pattern": "*.txt"}).to_string()),
            (
                "call_5",
                "grep",
                &json!({"pattern": "secret|notes"}).to_string(),
            ),
        ]),
        Reply::text("done"),
    ]);
    let dir = TestDir::new("headless-fs-row");
    dir.write("work/notes.txt", "plain notes\n");
    dir.write("work/secret.txt", "the secret\n");
    dir.write(
        "home/cordis.patch.yml",
        "- id: fs\n  disabled: true\n- insert:\n    - id: confined-fs\n      name: fs-probe\n      config:\n        deny: secret\n",
    );
    let out = against(&server, &dir, &["--output", "stream-json", "look around"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let texts: Vec<String> = events
        .iter()
        .filter(|event| event["type"] == "tool/result")
        .map(|event| {
            event["data"]["message"]["content"][0]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(texts.len(), 5, "{events:?}");
    assert!(texts[0].contains("plain notes"), "{}", texts[0]);
    assert!(
        texts[1].starts_with("Error: ") && texts[1].contains("permission denied"),
        "{}",
        texts[1]
    );
    assert!(texts[2].starts_with("Error: "), "{}", texts[2]);
    assert!(!dir.join("work/secret-out.txt").exists());
    // The searches see the confined tree: the refused file is not there at all.
    for text in &texts[3..] {
        assert!(
            text.contains("notes.txt") && !text.contains("secret"),
            "{text}"
        );
    }
}

/// With an explicit permission preset the log starts as the recorded headless run's does:
/// `permission/preset`, `sandbox/mode`, `approval/policy`, then the task's splice; without
/// one nothing is logged for it.
#[test]
fn an_explicit_permission_preset_opens_the_log_as_recorded() {
    dsh_tests::needs_corpus!("an_explicit_permission_preset_opens_the_log_as_recorded");
    let log = round_trip_log();
    let recorded_head: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .skip(1)
        .take(4)
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|event| json!([event["type"], event["data"]]))
        .collect();
    let dir = TestDir::new("headless-preset");
    let out = headless::run(
        &dir,
        &[
            "--replay",
            log.to_str().unwrap(),
            "--output",
            "stream-json",
            "go",
        ],
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    let head: Vec<Value> = events
        .iter()
        .take(3)
        .map(|event| json!([event["type"], event["data"]]))
        .collect();
    assert_eq!(head, recorded_head[..3], "{events:?}");
    assert_eq!(events[3]["type"], recorded_head[3][0]);
    // The model is told the same policies, as the runtime context.
    let runtime = events
        .iter()
        .find(|event| event["data"]["source"]["key"] == "runtime-context")
        .unwrap_or_else(|| panic!("no runtime context: {events:?}"));
    let sections: Vec<&str> = runtime["data"]["source"]["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|section| section["name"].as_str().unwrap())
        .collect();
    assert_eq!(sections, ["sandbox:policy", "approval:policy"]);
    let text = runtime["data"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("danger-full-access") && text.contains("Approval policy: never"),
        "{text}"
    );
    let dir = TestDir::new("headless-no-preset");
    let out = headless::run(
        &dir,
        &[
            "--replay",
            log.to_str().unwrap(),
            "--output",
            "stream-json",
            "go",
        ],
        &[],
    );
    let (events, _) = stream_json(&out.stdout);
    assert_eq!(events[0]["type"], "agent/inbox/spliced", "{events:?}");
}

/// A headless turn hanging in its model request, then `row` disabled by a config edit: the
/// exit code, stderr, and the session events that were printed.
fn unload_mid_turn(name: &str, row: &str) -> (Option<i32>, Vec<String>, Vec<Value>, TestDir) {
    let (mut host, dir) = hanging_headless(name);
    dir.write(
        "home/cordis.patch.yml",
        &format!("- id: {row}\n  disabled: true\n"),
    );
    let code = host.wait_exit(WAIT);
    // Only the session events: a run that ends without an outcome prints no result.
    let events: Vec<Value> = host
        .stdout()
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == "session_event")
        .map(|line| line["event"].clone())
        .collect();
    (code, host.stderr(), events, dir)
}

/// The log of a turn closed by an unload: `step/end`, then `turn/end` `aborted` by `disposed`,
/// and the stored log checks sound.
fn closed_by_disposal(events: &[Value], dir: &TestDir) {
    let tail: Vec<&str> = events
        .iter()
        .rev()
        .take(2)
        .filter_map(|event| event["type"].as_str())
        .collect();
    assert_eq!(tail, ["turn/end", "step/end"], "{events:?}");
    let end = events.last().unwrap();
    assert_eq!(
        end["data"]["reason"],
        json!({"kind": "aborted", "reason": {"kind": "disposed"}})
    );
    let ids = stored_session_ids(&dir.home());
    let check = dsh_tests::run_host(&dir.home(), &["session", "check", &ids[0]]);
    assert_eq!(check.code, Some(0), "{check:?}");
}

/// The agents registry unloaded while a turn streams: the driver goes with it, the dropped
/// turn closes its own log, and the runner is told and exits 1 instead of waiting forever.
#[test]
fn a_turn_dropped_by_an_unload_closes_its_log() {
    dsh_tests::needs_corpus!("a_turn_dropped_by_an_unload_closes_its_log");
    let (code, stderr, events, dir) = unload_mid_turn("headless-unload-agent", "agent");
    assert_eq!(code, Some(1), "{stderr:?}");
    assert!(
        stderr.iter().any(|line| line.contains("went away")),
        "{stderr:?}"
    );
    closed_by_disposal(&events, &dir);
}

/// The loop's row unloaded while its turn streams: the turn is cancelled (`disposed`), closes
/// its log, the agent goes idle with that outcome, and the run exits 1.
#[test]
fn a_turn_of_an_unloaded_loop_ends_aborted() {
    dsh_tests::needs_corpus!("a_turn_of_an_unloaded_loop_ends_aborted");
    let (code, stderr, events, dir) = unload_mid_turn("headless-unload-loop", "agent-loop");
    assert_eq!(code, Some(1), "{stderr:?}");
    closed_by_disposal(&events, &dir);
}

/// A directory below the working directory that the agent worked in brings its own
/// `AGENTS.md` in: after a `read` of `nested/task.txt`, it is queued in the session's inbox
/// (an `agent/inbox/spliced` after the step's end) and enters the next request as a message of
/// its own, once; a file directly in the working directory adds nothing.
#[test]
fn nested_instructions_arrive_when_the_agent_works_in_their_directory() {
    let read = |path: &str| json!({"file_path": path}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "read", &read("top.txt"))]),
        Reply::tool_calls(&[("call_2", "read", &read("nested/task.txt"))]),
        Reply::tool_calls(&[("call_3", "read", &read("nested/task.txt"))]),
        Reply::text("done"),
    ]);
    let dir = TestDir::new("headless-nested-agents-md");
    dir.write("work/top.txt", "top\n");
    dir.write("work/nested/task.txt", "the task\n");
    dir.write("work/nested/AGENTS.md", "Nested rule: tabs, not spaces.\n");
    let out = against(&server, &dir, &["--output", "stream-json", "look"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let seen = |index: usize| requests[index].body["messages"].to_string();
    assert!(
        !seen(1).contains("Nested rule"),
        "after top.txt: {}",
        seen(1)
    );
    assert!(
        seen(2).contains("Nested rule"),
        "after nested/task.txt: {}",
        seen(2)
    );
    let (events, _) = stream_json(&out.stdout);
    let reached: Vec<&Value> = events
        .iter()
        .filter(|event| {
            event["type"] == "user/message"
                && event["data"]["source"]["kind"] == "agent-instructions"
        })
        .collect();
    assert_eq!(
        reached.len(),
        1,
        "logged again although unchanged: {events:?}"
    );
    let text = reached[0]["data"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("<system-reminder>\nAdditional instructions from: nested/AGENTS.md")
            && text.contains("apply to work under `nested`")
            && text.contains("tabs, not spaces"),
        "{text}"
    );
    let changes = &reached[0]["data"]["source"]["changes"];
    assert_eq!(changes[0]["action"], "set", "{changes}");
    assert_eq!(changes[0]["path"], "nested/AGENTS.md", "{changes}");
    // Queued after the step that read the file ended, claimed as the next step opened.
    let queued = events
        .iter()
        .position(|event| {
            event["type"] == "agent/inbox/spliced"
                && event["data"]["inserted"][0]["source"]["kind"] == "agent-instructions"
        })
        .unwrap_or_else(|| panic!("no splice queued the instructions: {events:?}"));
    let kinds: Vec<&str> = events[queued - 1..queued + 4]
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "step/end",
            "agent/inbox/spliced",
            "agent/inbox/spliced",
            "step/start",
            "user/message"
        ],
        "{events:?}"
    );
}

/// The runner's own row unloaded mid-run: the one-shot run is over, so the host exits 1
/// saying so (instead of staying up without a runner), and the turn it left is closed in the
/// stored log.
#[test]
fn an_unloaded_runner_ends_the_host() {
    dsh_tests::needs_corpus!("an_unloaded_runner_ends_the_host");
    let (code, stderr, _, dir) = unload_mid_turn("headless-unload-runner", "headless");
    assert_eq!(code, Some(1), "{stderr:?}");
    assert!(
        stderr
            .iter()
            .any(|line| line.contains("unloaded before its run ended")),
        "{stderr:?}"
    );
    let ids = stored_session_ids(&dir.home());
    let show = dsh_tests::run_host(&dir.home(), &["session", "show", &ids[0]]);
    assert!(
        show.stdout
            .contains(r#"{"kind":"aborted","reason":{"kind":"disposed"}}"#),
        "{show:?}"
    );
    let check = dsh_tests::run_host(&dir.home(), &["session", "check", &ids[0]]);
    assert_eq!(check.code, Some(0), "{check:?}");
}
