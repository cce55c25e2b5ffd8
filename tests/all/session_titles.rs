//! Model-written session titles end to end: the web profile (real host, real plugin libraries,
//! real YAML), whose bundle turns the `session-title` row's model title on (patch rows route it
//! elsewhere or bound it), against the fake DeepSeek server over loopback. A session's first prompt gets its fallback title, then
//! the logged `session/title-llm-request` (the reference's recorded shape and instruction), then
//! the model's cleaned title as the provider's `session/title`; a title model that fails or
//! does not answer in time leaves the fallback, says why on stderr, and the turn completes.
//!
//! Titles go to a second adapter row (route `title-fake/title-model`) on a server of their own,
//! so each server's script is answered in a known order: the title request runs beside the
//! turn's own, and on one server the two would race for the replies.

use std::path::Path;
use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, RecordedRequest, Reply, SseEvent};
use dsh_tests::sessions::{PLAIN_STORE, read_log, session_logs};
use dsh_tests::web::{Web, WebHost};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

/// The title instruction, as the reference's recorded `session-title-after-turn` session logs it.
const SYSTEM: &str = "Create a concise title for an AI coding-assistant session from the supplied human messages.\nReturn only the title on one line, **in plain text of natural language**, with no quotes, prefix, explanation, Markdown, XML, or terminal control codes. No code is allowed.\nUse the language of the messages.\nAim for about 5 words in non-CJK languages or 10 CJK characters.";

const PROVIDER: &str = "session-title-first-prompt-llm";

/// The `session-title` row with the model title on, `llm_rows` (lines at six spaces) added.
fn title_row(llm_rows: &str) -> String {
    format!("- id: session-title\n  config:\n    llm:\n      enabled: true\n{llm_rows}")
}

/// Route the titles to `title-fake/title-model`, an adapter row on `titles`.
fn title_route(titles: &FakeDeepSeek) -> (String, String) {
    let llm = "      route:\n        provider: title-fake\n        model: title-model\n";
    let adapter = format!(
        "- insert:\n    - id: llm-titles\n      name: llm-deepseek\n      config:\n        provider: title-fake\n        baseURL: {}\n",
        titles.url()
    );
    (llm.to_owned(), adapter)
}

/// The web profile against `main`, its store plain JSONL, with `layers` after.
fn web(main: &FakeDeepSeek, dir: &TestDir, layers: &str) -> Web {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n{PLAIN_STORE}{layers}",
        main.url()
    );
    Web::from(WebHost::start(
        dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ))
}

/// A new session in `dir/work`, prompted with `text`.
fn prompted(web: &Web, dir: &TestDir, text: &str) -> String {
    let created = web.call(
        "session.create",
        &json!({"cwd": dir.join("work").to_str().unwrap()}),
    );
    let session = created["sessionId"].as_str().unwrap().to_owned();
    web.prompt(&session, text);
    session
}

/// The stored events of `session`, once `done` holds for them (polled; the store writes in
/// batches).
fn events_when(home: &Path, session: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let events = session_logs(&home.join("sessions"))
            .iter()
            .map(|path| read_log(path))
            .find(|(header, _)| header["id"] == session)
            .map(|(_, events)| events)
            .unwrap_or_default();
        if done(&events) {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "session {session} did not get there within {WAIT:?}: {events:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

fn title_events(events: &[Value]) -> Vec<&Value> {
    of_type(events, "session/title")
}

fn turn_completed(events: &[Value]) -> bool {
    of_type(events, "turn/end")
        .iter()
        .any(|end| end["data"]["reason"]["kind"] == "completed")
}

fn has_provider_title(events: &[Value]) -> bool {
    title_events(events)
        .iter()
        .any(|title| title["data"]["source"]["kind"] == "provider")
}

/// The seq of the one human message.
fn prompt_seq(events: &[Value]) -> u64 {
    let prompts: Vec<&Value> = of_type(events, "user/message")
        .into_iter()
        .filter(|message| message["data"]["source"]["kind"] == "user")
        .collect();
    assert_eq!(prompts.len(), 1, "{prompts:#?}");
    prompts[0]["seq"].as_u64().unwrap()
}

/// The fallback title of the human message: the first event of its kind, before the request.
fn assert_fallback_first(events: &[Value], seq: u64, fallback: &str) {
    let first = title_events(events)[0];
    assert_eq!(
        first["data"],
        json!({"title": fallback, "messageSeqs": [seq], "source": {"kind": "fallback"}})
    );
    let request = of_type(events, "session/title-llm-request")[0];
    assert!(first["seq"].as_u64() < request["seq"].as_u64());
}

/// The logged request: the reference's shape, the prompt framed as JSON, on `route`.
fn assert_logged_request(events: &[Value], seq: u64, prompt: &str, route: &Value) {
    let requests = of_type(events, "session/title-llm-request");
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let data = &requests[0]["data"];
    let framed = format!(
        "Generate the session title from this JSON array of human messages:\n{}",
        json!([{"seq": seq, "text": prompt}])
    );
    let message = &data["messages"][0];
    assert_eq!(
        json!({
            "titleProvider": data["titleProvider"],
            "messageSeqs": data["messageSeqs"],
            "route": data["route"],
            "system": data["system"],
            "messages": [{"role": message["role"], "content": message["content"], "source": message["source"]}],
            "maxTokens": data["maxTokens"],
        }),
        json!({
            "titleProvider": PROVIDER,
            "messageSeqs": [seq],
            "route": route,
            "system": SYSTEM,
            "messages": [{
                "role": "user",
                "content": [{"type": "text", "text": framed}],
                "source": {"kind": "plugin", "plugin": "dsh-session-title-llm"},
            }],
            "maxTokens": 64,
        })
    );
    assert_eq!(data["messages"].as_array().unwrap().len(), 1);
    assert_eq!(message["id"].as_str().unwrap().len(), 36, "{message}");
}

/// What the title model was sent: the logged request, thinking off, capped, no tools.
fn assert_title_wire(request: &RecordedRequest, prompt: &str) {
    let body = &request.body;
    assert_eq!(body["thinking"], json!({"type": "disabled"}), "{body}");
    assert!(body.get("reasoning_effort").is_none(), "{body}");
    assert_eq!(body["max_tokens"], 64, "{body}");
    assert!(
        body.get("tools")
            .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty)),
        "{body}"
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{body}");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[0]["content"], SYSTEM);
    assert_eq!(messages[1]["role"], "user");
    assert!(
        messages[1]["content"]
            .as_str()
            .is_some_and(|text| text.contains(&json!(prompt).to_string())),
        "{body}"
    );
}

#[test]
fn the_recorded_instruction_is_the_one_asserted() {
    let corpus = dsh_tests::needs_corpus!("the_recorded_instruction_is_the_one_asserted");
    let log = corpus.join("acp/snapshots/session-title-after-turn/session.jsonl");
    let (_, events) = read_log(&log);
    let request = of_type(&events, "session/title-llm-request")[0];
    assert_eq!(request["data"]["system"], SYSTEM);
    assert_eq!(request["data"]["titleProvider"], PROVIDER);
}

#[test]
fn a_model_titles_a_new_session_after_its_fallback() {
    let prompt = "Fix the flaky login test in auth.rs, it fails one run in ten.";
    let main = FakeDeepSeek::start(vec![Reply::text("Fixed: the clock is mocked now.")]);
    // The model wraps its title and explains it anyway: what it wraps it in is taken off.
    let titles = FakeDeepSeek::start(vec![Reply::text(
        "**\"Deflake  the login test\"**\nThis names the task in four words.",
    )])
    .script_titles();
    let dir = TestDir::new("titles-by-model");
    let (llm, adapter) = title_route(&titles);
    let web = web(&main, &dir, &format!("{}{adapter}", title_row(&llm)));
    let session = prompted(&web, &dir, prompt);
    let events = events_when(&dir.home(), &session, |events| {
        turn_completed(events) && has_provider_title(events)
    });
    let seq = prompt_seq(&events);
    assert_fallback_first(&events, seq, "Fix the flaky login test");
    let route = json!({"provider": "title-fake", "model": "title-model"});
    assert_logged_request(&events, seq, prompt, &route);
    let titled = title_events(&events);
    assert_eq!(titled.len(), 2, "{titled:#?}");
    assert_eq!(
        titled[1]["data"],
        json!({
            "title": "Deflake the login test",
            "messageSeqs": [seq],
            "source": {"kind": "provider", "provider": PROVIDER, "model": route},
        })
    );
    // The title model got exactly what was logged; the conversation's model only the turn.
    let sent = titles.requests();
    assert_eq!(sent.len(), 1);
    assert_title_wire(&sent[0], prompt);
    let turn = main.requests();
    assert_eq!(turn.len(), 1);
    assert!(turn[0].user_texts().iter().any(|text| text == prompt));
    // The list shows the model's title, with no ellipsis (it is no cut message).
    let listed = web.call("session.list", &json!({}));
    let row = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == session.as_str())
        .cloned()
        .unwrap();
    assert_eq!(row["title"], "Deflake the login test", "{row}");
}

/// The web bundle asks the session's own model for one title after the first prompt, with no
/// row of the test's: the model's title replaces the fallback, and the conversation's script
/// answered only the turn.
#[test]
fn the_web_profile_titles_new_sessions_by_model_by_default() {
    let prompt = "Fix the flaky login test in auth.rs, it fails one run in ten.";
    let main =
        FakeDeepSeek::start(vec![Reply::text("Fixed.")]).answer_titles("Deflake the login test");
    let dir = TestDir::new("titles-by-default");
    let web = web(&main, &dir, "");
    let session = prompted(&web, &dir, prompt);
    let events = events_when(&dir.home(), &session, |events| {
        turn_completed(events) && has_provider_title(events)
    });
    let seq = prompt_seq(&events);
    assert_fallback_first(&events, seq, "Fix the flaky login test");
    let last = title_events(&events).last().copied().unwrap();
    assert_eq!(last["data"]["title"], "Deflake the login test", "{last}");
    assert_eq!(last["data"]["source"]["provider"], PROVIDER, "{last}");
    let titles = main.title_requests();
    assert_eq!(titles.len(), 1, "one title a session");
    assert_title_wire(&titles[0], prompt);
    assert_eq!(main.requests().len(), 1, "the turn's own request only");
    // A second prompt asks for no second title.
    main.push(vec![Reply::text("That one too.")]);
    web.prompt(&session, "And the logout test?");
    events_when(&dir.home(), &session, |events| {
        of_type(events, "turn/end").len() == 2
    });
    assert_eq!(main.title_requests().len(), 1);
}

#[test]
fn without_a_route_the_title_asks_the_sessions_own_model() {
    let prompt = "Rename the build step to compile everything";
    // The title request and the turn's own go to this one server at about the same time and
    // take its replies in either order, so both replies are the same.
    let main = FakeDeepSeek::start(vec![
        Reply::text("Build step renamed"),
        Reply::text("Build step renamed"),
    ])
    .script_titles();
    let dir = TestDir::new("titles-own-route");
    let web = web(&main, &dir, &title_row(""));
    let session = prompted(&web, &dir, prompt);
    let events = events_when(&dir.home(), &session, |events| {
        turn_completed(events) && has_provider_title(events)
    });
    let header = &of_type(&events, "request/header")[0]["data"]["header"]["config"];
    let route = json!({"provider": header["provider"], "model": header["model"]});
    assert!(route["provider"].is_string() && route["model"].is_string());
    let seq = prompt_seq(&events);
    assert_logged_request(&events, seq, prompt, &route);
    let last = title_events(&events).last().copied().unwrap();
    assert_eq!(last["data"]["title"], "Build step renamed");
    assert_fallback_first(&events, seq, "Rename the build step to");
    assert_eq!(last["data"]["source"]["model"], route);
    let sent = main.requests();
    assert_eq!(sent.len(), 2);
    let title_requests: Vec<&RecordedRequest> = sent
        .iter()
        .filter(|request| request.body["messages"][0]["content"] == SYSTEM)
        .collect();
    assert_eq!(title_requests.len(), 1, "{sent:#?}");
    assert_title_wire(title_requests[0], prompt);
}

#[test]
fn a_failing_or_silent_title_model_leaves_the_fallback_and_the_turn_completes() {
    let main = FakeDeepSeek::start(vec![Reply::text("first done"), Reply::text("second done")]);
    // The first title request fails; the second gets no answer within the row's 3 s.
    let titles = FakeDeepSeek::start(vec![Reply::server_error(), Reply::Stall { ms: 10_000 }])
        .script_titles();
    let dir = TestDir::new("titles-failing");
    let (mut llm, adapter) = title_route(&titles);
    llm.push_str("      timeoutMs: 3000\n");
    let web = web(&main, &dir, &format!("{}{adapter}", title_row(&llm)));

    let failed = prompted(&web, &dir, "Explain the retry policy");
    web.host
        .wait_stderr("no model title for session", Duration::from_secs(20));
    let events = events_when(&dir.home(), &failed, |events| {
        turn_completed(events) && !of_type(events, "session/title-llm-request").is_empty()
    });
    let seq = prompt_seq(&events);
    assert_fallback_first(&events, seq, "Explain the retry policy");
    assert_eq!(
        title_events(&events).len(),
        1,
        "only the fallback: {events:#?}"
    );
    let answer = of_type(&events, "assistant/message");
    assert_eq!(
        answer[0]["data"]["message"]["content"][0]["text"],
        "first done"
    );
    let warning = web
        .host
        .stderr()
        .into_iter()
        .find(|line| line.contains("no model title for session"))
        .unwrap();
    assert!(
        warning.contains(&failed) && warning.contains("fallback title stays"),
        "{warning}"
    );

    let silent = prompted(&web, &dir, "Summarize the open issues");
    let events = events_when(&dir.home(), &silent, |events| {
        turn_completed(events) && !of_type(events, "session/title-llm-request").is_empty()
    });
    assert_eq!(
        of_type(&events, "assistant/message")[0]["data"]["message"]["content"][0]["text"],
        "second done"
    );
    // The turn ended while the title request still waited for its answer: it did not wait.
    let asked = of_type(&events, "session/title-llm-request")[0]["time"]
        .as_i64()
        .unwrap();
    let ended = of_type(&events, "turn/end")[0]["time"].as_i64().unwrap();
    assert!(ended - asked < 3000, "asked at {asked}, ended at {ended}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let timed_out = loop {
        let lines = web.host.stderr();
        if let Some(line) = lines
            .iter()
            .find(|line| line.contains(&silent) && line.contains("no answer within"))
        {
            break line.clone();
        }
        assert!(Instant::now() < deadline, "no timeout warning: {lines:#?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(timed_out.contains("title-fake/title-model"), "{timed_out}");
    let events = events_when(&dir.home(), &silent, |events| {
        !of_type(events, "session/title-llm-request").is_empty()
    });
    assert_eq!(
        title_events(&events).len(),
        1,
        "only the fallback: {events:#?}"
    );
    assert_eq!(
        title_events(&events)[0]["data"]["source"]["kind"],
        "fallback"
    );
    assert_eq!(titles.requests().len(), 2);
}

#[test]
fn a_rename_pins_the_title_and_a_fork_keeps_what_it_inherited() {
    let main = FakeDeepSeek::start(vec![Reply::text("the answer")]);
    // The title model answers two seconds after it is asked: the person renames first.
    let Reply::Sse(mut late) = Reply::text("Model made title") else {
        panic!("a streamed reply");
    };
    late.insert(0, SseEvent::Pause(Duration::from_secs(2)));
    let titles = FakeDeepSeek::start(vec![Reply::Sse(late)]).script_titles();
    let dir = TestDir::new("titles-pinned");
    let (llm, adapter) = title_route(&titles);
    let web = web(&main, &dir, &format!("{}{adapter}", title_row(&llm)));
    let session = prompted(&web, &dir, "Add a changelog entry for the release");
    events_when(&dir.home(), &session, |events| {
        !of_type(events, "session/title-llm-request").is_empty()
    });
    web.call(
        "session.rename",
        &json!({"sessionId": session, "title": "Named by hand"}),
    );
    titles.wait_requests(1, WAIT);
    let events = events_when(&dir.home(), &session, turn_completed);
    // Past the model's answer: it came, and was not taken over the person's title.
    std::thread::sleep(Duration::from_secs(3));
    let events = events_when(&dir.home(), &session, |later| later.len() >= events.len());
    let last = title_events(&events).last().copied().unwrap();
    assert_eq!(
        last["data"],
        json!({"title": "Named by hand", "messageSeqs": [], "source": {"kind": "user"}})
    );
    assert!(!has_provider_title(&events), "{events:#?}");

    // A fork of it inherits its titles and makes none of its own.
    let history = web.call("session.history", &json!({"sessionId": session}));
    let answer = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["kind"] == "assistant")
        .cloned()
        .unwrap();
    let forked = web.call(
        "session.fork",
        &json!({"sessionId": session, "itemId": answer["id"]}),
    );
    let child = forked["sessionId"].as_str().unwrap().to_owned();
    let inherited = |events: &[Value]| {
        title_events(events)
            .iter()
            .map(|title| title["data"].clone())
            .collect::<Vec<_>>()
    };
    let seeded = events_when(&dir.home(), &child, |events| {
        !of_type(events, "session/end-seed").is_empty()
    });
    // Time for a title of its own, were one coming.
    std::thread::sleep(Duration::from_millis(500));
    let child_events = events_when(&dir.home(), &child, |later| later.len() >= seeded.len());
    let end = of_type(&child_events, "session/end-seed")[0]["seq"]
        .as_u64()
        .unwrap();
    let before = |events: &[Value], end: u64| -> Vec<Value> {
        events
            .iter()
            .filter(|event| event["seq"].as_u64().is_some_and(|seq| seq < end))
            .cloned()
            .collect()
    };
    // Its seed holds the parent's fallback and request (the rename came after the forked
    // turn), and nothing titles it after the seed: no fresh fallback, no model request.
    assert_eq!(
        inherited(&child_events),
        inherited(&before(&events, end)),
        "{child_events:#?}"
    );
    assert_eq!(
        inherited(&child_events),
        inherited(&before(&child_events, end)),
        "{child_events:#?}"
    );
    assert_eq!(
        of_type(&child_events, "session/title-llm-request").len(),
        of_type(&before(&child_events, end), "session/title-llm-request").len(),
        "the fork asked for a title of its own: {child_events:#?}"
    );
    assert_eq!(titles.requests().len(), 1);
}
