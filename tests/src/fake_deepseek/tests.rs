//! The fake server's own tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

/// A response as a minimal client saw it.
struct Seen {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// The body ended as its framing says (terminating chunk, length, or close).
    complete: bool,
}

fn connect(server: &FakeDeepSeek) -> TcpStream {
    let address = server.url().trim_start_matches("http://").to_owned();
    let stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

fn send(stream: &mut TcpStream, path: &str, body: &str, extra: &str) {
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nhost: fake\r\nAuthorization: Bearer sk-1\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
}

fn receive(reader: &mut BufReader<TcpStream>) -> Seen {
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    let complete = if let Some(length) = header("content-length") {
        body.resize(length.parse().unwrap(), 0);
        reader.read_exact(&mut body).is_ok()
    } else if header("transfer-encoding").as_deref() == Some("chunked") {
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                break false;
            }
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            if size == 0 {
                let mut end = String::new();
                reader.read_line(&mut end).unwrap();
                break true;
            }
            let at = body.len();
            body.resize(at + size + 2, 0);
            if reader.read_exact(&mut body[at..]).is_err() {
                break false;
            }
            body.truncate(at + size);
        }
    } else {
        reader.read_to_end(&mut body).is_ok()
    };
    Seen {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
        complete,
    }
}

fn post(server: &FakeDeepSeek, path: &str, body: &str) -> Seen {
    let mut stream = connect(server);
    send(&mut stream, path, body, "connection: close\r\n");
    receive(&mut BufReader::new(stream))
}

#[test]
fn scripted_sse_is_chunked_and_requests_are_recorded() {
    let server = FakeDeepSeek::start(vec![Reply::text("hello world")]);
    let seen = post(
        &server,
        "/chat/completions",
        r#"{"model":"deepseek-v4-flash","stream":true}"#,
    );
    assert_eq!(seen.status, 200);
    assert!(seen.complete);
    assert!(
        seen.headers
            .contains(&("transfer-encoding".into(), "chunked".into()))
    );
    assert!(seen.body.starts_with("data: {"));
    assert!(seen.body.contains(r#""content":"hell""#));
    assert!(seen.body.ends_with("data: [DONE]\n\n"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/chat/completions");
    assert_eq!(requests[0].header("Authorization"), Some("Bearer sk-1"));
    assert_eq!(requests[0].body["model"], "deepseek-v4-flash");
    assert_eq!(server.remaining(), 0);
}

#[test]
fn a_kept_alive_connection_serves_the_script_in_order() {
    let server = FakeDeepSeek::start(vec![
        Reply::rate_limited(2),
        Reply::reasoning_then_text("hmm", "ok"),
        Reply::unauthorized(),
    ]);
    let mut stream = connect(&server);
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    send(&mut stream, "/v1/chat/completions", "{}", "");
    let limited = receive(&mut reader);
    assert_eq!(limited.status, 429);
    assert!(
        limited
            .headers
            .contains(&("retry-after".into(), "2".into()))
    );
    assert!(limited.body.contains("fake rate limit"));
    send(&mut stream, "/v1/chat/completions", "{}", "");
    let streamed = receive(&mut reader);
    assert!(streamed.complete && streamed.body.contains("reasoning_content"));
    assert!(streamed.body.contains("prompt_cache_hit_tokens"));
    send(&mut stream, "/v1/chat/completions", "not json", "");
    assert_eq!(receive(&mut reader).status, 401);
    send(&mut stream, "/v1/chat/completions", "{}", "");
    let exhausted = receive(&mut reader);
    assert_eq!(exhausted.status, 500);
    assert!(exhausted.body.contains("script exhausted"));
    assert_eq!(
        server.wait_requests(4, Duration::from_secs(5))[2].body,
        json!("not json")
    );
}

#[test]
fn other_paths_get_404_without_consuming_the_script() {
    let server = FakeDeepSeek::start(vec![Reply::Malformed]);
    assert_eq!(post(&server, "/models", "").status, 404);
    let malformed = post(&server, "/chat/completions", "{}");
    assert!(
        malformed
            .body
            .starts_with("data: {not-json\n\ndata: [DONE]")
    );
}

#[test]
fn tool_calls_split_arguments_across_chunks() {
    let Reply::Sse(events) = Reply::tool_calls(&[
        ("call_0", "read", r#"{"path":"a"}"#),
        ("call_1", "bash", r#"{"cmd":"ls"}"#),
    ]) else {
        panic!("tool calls stream");
    };
    let fragments: Vec<Value> = events
        .iter()
        .filter_map(|event| match event {
            SseEvent::Data(data) => serde_json::from_str::<Value>(data).ok(),
            _ => None,
        })
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["tool_calls"][0]
                .as_object()
                .cloned()
                .map(Value::Object)
        })
        .collect();
    let joined = |index: u64| -> String {
        fragments
            .iter()
            .filter(|call| call["index"] == index)
            .map(|call| call["function"]["arguments"].as_str().unwrap())
            .collect()
    };
    assert_eq!(joined(0), r#"{"path":"a"}"#);
    assert_eq!(joined(1), r#"{"cmd":"ls"}"#);
    assert_eq!(
        fragments
            .iter()
            .filter(|call| call.get("id").is_some())
            .count(),
        2
    );
    assert_eq!(fragments.len(), 6);
}

#[test]
fn close_delimited_dropped_and_stalled_bodies() {
    let server = FakeDeepSeek::start(vec![
        Reply::SseUntilClose(vec![
            SseEvent::Comment("hi".into()),
            SseEvent::content("x"),
            SseEvent::Done,
        ]),
        Reply::DropMidStream {
            events: vec![
                SseEvent::content("a"),
                SseEvent::content("b"),
                SseEvent::Done,
            ],
            after_events: 1,
        },
        Reply::Stall { ms: 200 },
    ]);
    let closed = post(&server, "/chat/completions", "{}");
    assert!(closed.complete);
    assert!(closed.body.starts_with(": hi\n\ndata: "));
    assert!(closed.body.ends_with("data: [DONE]\n\n"));

    let dropped = post(&server, "/chat/completions", "{}");
    assert!(!dropped.complete);
    assert!(
        dropped.body.contains(r#""content":"a""#) && !dropped.body.contains(r#""content":"b""#)
    );

    let started = Instant::now();
    let stalled = post(&server, "/chat/completions", "{}");
    assert_eq!(stalled.status, 200);
    assert!(!stalled.complete && stalled.body.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[test]
fn pauses_delay_events_and_drop_stops_an_idle_connection_promptly() {
    let server = FakeDeepSeek::start(vec![Reply::Sse(vec![
        SseEvent::content("a"),
        SseEvent::Pause(Duration::from_millis(100)),
        SseEvent::Raw("data: [DO".into()),
        SseEvent::Raw("NE]\r\n\r\n".into()),
    ])]);
    let mut stream = connect(&server);
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let started = Instant::now();
    send(&mut stream, "/chat/completions", "{}", "");
    let seen = receive(&mut reader);
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert!(seen.body.ends_with("data: [DONE]\r\n\r\n"));
    // The connection is kept alive and idle; dropping must not wait for its read timeout.
    let dropping = Instant::now();
    drop(server);
    assert!(dropping.elapsed() < Duration::from_secs(5));
}

// Request invariants.

use super::invariants::{StreamedTurn, check, streamed_turn};

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn calls(ids: &[&str]) -> Value {
    ids.iter()
        .map(|id| json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}))
        .collect()
}

fn assistant_calls(ids: &[&str], reasoning: Option<&str>) -> Value {
    let mut message = json!({"role": "assistant", "content": "", "tool_calls": calls(ids)});
    if let Some(reasoning) = reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    message
}

fn tool(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok"})
}

fn body(messages: &[Value]) -> Value {
    json!({"model": "deepseek-v4-flash", "messages": messages, "stream": true})
}

fn turn(ids: &[&str], reasoning: &str) -> StreamedTurn {
    StreamedTurn {
        ids: ids.iter().map(|id| (*id).to_owned()).collect(),
        reasoning: reasoning.to_owned(),
    }
}

/// The rules `messages` breaks, given what the server streamed.
fn rules(messages: &[Value], streamed: &[StreamedTurn]) -> Vec<Rule> {
    check(&body(messages), streamed)
        .into_iter()
        .map(|(rule, _)| rule)
        .collect()
}

#[test]
fn a_well_formed_session_breaks_no_rule() {
    let messages = [
        json!({"role": "system", "content": "You are dsh."}),
        user("task"),
        // A context snapshot appended as its own user message: legitimate.
        user("<context>AGENTS.md</context>"),
        assistant_calls(&["call_1", "call_2"], Some("think")),
        tool("call_2"),
        tool("call_1"),
        // Images of tool results follow their tool messages in one user message.
        json!({"role": "user", "content": [{"type": "text", "text": "Attached image(s) from tool result:"}]}),
        json!({"role": "assistant", "content": "", "reasoning_content": "only thought"}),
        user("again"),
        json!({"role": "assistant", "content": "done"}),
        user("more"),
    ];
    assert_eq!(
        check(&body(&messages), &[turn(&["call_1", "call_2"], "think")]),
        vec![]
    );
    // Bodies the transport tests post are not judged.
    assert_eq!(check(&json!({}), &[]), vec![]);
    assert_eq!(check(&json!("not json"), &[]), vec![]);
}

#[test]
fn a_call_left_unanswered_is_reported() {
    let before_user = [
        user("task"),
        assistant_calls(&["call_1", "call_2"], None),
        tool("call_1"),
        user("next"),
    ];
    let broken = check(&body(&before_user), &[]);
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert_eq!(broken[0].0, Rule::ToolCallAnswered);
    assert!(
        broken[0].1.contains("call_2") && broken[0].1.contains("messages[1]"),
        "{broken:?}"
    );
    let at_end = [user("task"), assistant_calls(&["call_1"], None)];
    assert_eq!(rules(&at_end, &[]), vec![Rule::ToolCallAnswered]);
    let before_assistant = [
        user("task"),
        assistant_calls(&["call_1"], None),
        json!({"role": "assistant", "content": "x"}),
    ];
    assert_eq!(rules(&before_assistant, &[]), vec![Rule::ToolCallAnswered]);
    // User text between the call and its answer: the answer comes too late.
    let text_first = [
        user("task"),
        assistant_calls(&["call_1"], None),
        user("steer"),
        tool("call_1"),
    ];
    assert_eq!(
        rules(&text_first, &[]),
        vec![Rule::ToolCallAnswered, Rule::ToolAnswersACall]
    );
}

#[test]
fn a_tool_message_must_answer_a_call_of_the_assistant_before_it_once() {
    let orphan = [user("task"), tool("call_1")];
    assert_eq!(rules(&orphan, &[]), vec![Rule::ToolAnswersACall]);
    let twice = [
        user("task"),
        assistant_calls(&["call_1"], None),
        tool("call_1"),
        tool("call_1"),
    ];
    let broken = check(&body(&twice), &[]);
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert_eq!(broken[0].0, Rule::ToolAnswersACall);
    assert!(broken[0].1.contains("second time"), "{broken:?}");
    let wrong_id = [
        user("task"),
        assistant_calls(&["call_1"], None),
        tool("call_9"),
    ];
    assert_eq!(
        rules(&wrong_id, &[]),
        vec![Rule::ToolAnswersACall, Rule::ToolCallAnswered]
    );
    // An earlier turn's call does not license an answer after a later message.
    let stale = [
        user("task"),
        assistant_calls(&["call_1"], None),
        tool("call_1"),
        json!({"role": "assistant", "content": "done"}),
        tool("call_1"),
    ];
    assert_eq!(rules(&stale, &[]), vec![Rule::ToolAnswersACall]);
    let no_id = [user("task"), json!({"role": "tool", "content": "ok"})];
    assert_eq!(rules(&no_id, &[]), vec![Rule::ToolAnswersACall]);
}

#[test]
fn streamed_reasoning_must_come_back_on_its_tool_call_turn() {
    let streamed = [turn(&["call_1"], "I should look.")];
    let missing = [
        user("task"),
        assistant_calls(&["call_1"], None),
        tool("call_1"),
    ];
    let broken = check(&body(&missing), &streamed);
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert_eq!(broken[0].0, Rule::ReasoningPassedBack);
    assert!(broken[0].1.contains("I should look."), "{broken:?}");
    let altered = [
        user("task"),
        assistant_calls(&["call_1"], Some("I should")),
        tool("call_1"),
    ];
    assert_eq!(rules(&altered, &streamed), vec![Rule::ReasoningPassedBack]);
    let passed = [
        user("task"),
        assistant_calls(&["call_1"], Some("I should look.")),
        tool("call_1"),
    ];
    assert_eq!(rules(&passed, &streamed), vec![]);
    // Explicitly enabled is thinking mode too.
    let mut enabled = body(&missing);
    enabled["thinking"] = json!({"type": "enabled"});
    assert_eq!(check(&enabled, &streamed).len(), 1);
    // Outside thinking mode the reasoning is not needed.
    let mut disabled = body(&missing);
    disabled["thinking"] = json!({"type": "disabled"});
    assert_eq!(check(&disabled, &streamed), vec![]);
    // Nothing to pass back when the turn streamed no reasoning, or was not streamed here.
    assert_eq!(rules(&missing, &[turn(&["call_1"], "")]), vec![]);
    assert_eq!(rules(&missing, &[]), vec![]);
    // Turns that reuse ids: either streamed reasoning will do.
    let reused = [turn(&["call_1"], "first"), turn(&["call_1"], "second")];
    let second = [
        user("task"),
        assistant_calls(&["call_1"], Some("second")),
        tool("call_1"),
    ];
    assert_eq!(rules(&second, &reused), vec![]);
}

#[test]
fn message_shapes_the_live_api_refuses_are_reported() {
    assert_eq!(rules(&[], &[]), vec![Rule::MessageShape]);
    assert_eq!(
        check(&json!({"messages": "hi"}), &[]),
        vec![(Rule::MessageShape, "`messages` is not an array".to_owned())]
    );
    assert_eq!(
        rules(&[json!({"role": "developer", "content": "x"})], &[]),
        vec![Rule::MessageShape]
    );
    assert_eq!(
        rules(&[json!({"content": "x"})], &[]),
        vec![Rule::MessageShape]
    );
    let null_content = [user("task"), json!({"role": "assistant", "content": null})];
    assert_eq!(rules(&null_content, &[]), vec![Rule::AssistantContent]);
    let no_content = [user("task"), json!({"role": "assistant"})];
    assert_eq!(rules(&no_content, &[]), vec![Rule::AssistantContent]);
    // With tool calls a null content is allowed.
    let mut null_with_calls = assistant_calls(&["call_1"], None);
    null_with_calls["content"] = Value::Null;
    assert_eq!(
        rules(&[user("task"), null_with_calls, tool("call_1")], &[]),
        vec![]
    );
}

#[test]
fn tool_calls_need_distinct_ids() {
    let mut no_id = assistant_calls(&["call_1"], None);
    no_id["tool_calls"][0].as_object_mut().unwrap().remove("id");
    assert_eq!(rules(&[user("task"), no_id], &[]), vec![Rule::ToolCallId]);
    let repeated = [
        user("task"),
        assistant_calls(&["call_1", "call_1"], None),
        tool("call_1"),
    ];
    assert_eq!(rules(&repeated, &[]), vec![Rule::ToolCallId]);
    let not_array = [
        user("task"),
        json!({"role": "assistant", "content": "", "tool_calls": {}}),
    ];
    assert_eq!(rules(&not_array, &[]), vec![Rule::ToolCallId]);
}

#[test]
fn the_streamed_turn_of_a_reply_is_its_call_ids_and_reasoning() {
    let plain = Reply::tool_calls(&[("call_0", "read", "{}"), ("call_1", "bash", "{}")]);
    assert_eq!(streamed_turn(&plain), Some(turn(&["call_0", "call_1"], "")));
    let Reply::Sse(mut events) = Reply::tool_calls(&[("call_2", "bash", "{}")]) else {
        panic!("tool calls stream");
    };
    events.insert(1, SseEvent::reasoning("look "));
    events.insert(2, SseEvent::reasoning("first"));
    assert_eq!(
        streamed_turn(&Reply::Sse(events.clone())),
        Some(turn(&["call_2"], "look first"))
    );
    assert_eq!(
        streamed_turn(&Reply::SseUntilClose(events.clone())),
        Some(turn(&["call_2"], "look first"))
    );
    // A cut stream leaves no turn the adapter could log.
    assert_eq!(
        streamed_turn(&Reply::DropMidStream {
            events,
            after_events: 3
        }),
        None
    );
    assert_eq!(streamed_turn(&Reply::text("hi")), None);
}

/// A reasoning tool-call turn, then a request that drops its reasoning, then a good one.
fn reasoning_dropped(server: &FakeDeepSeek) -> Seen {
    let first = body(&[user("task")]).to_string();
    assert_eq!(post(server, "/chat/completions", &first).status, 200);
    let dropped = body(&[
        user("task"),
        assistant_calls(&["call_r"], None),
        tool("call_r"),
    ])
    .to_string();
    post(server, "/chat/completions", &dropped)
}

fn reasoning_turn() -> Reply {
    let Reply::Sse(mut events) = Reply::tool_calls(&[("call_r", "bash", "{}")]) else {
        panic!("tool calls stream");
    };
    events.insert(1, SseEvent::reasoning("run it"));
    Reply::Sse(events)
}

#[test]
fn a_broken_request_gets_the_live_400_and_fails_the_test_by_name() {
    let server = FakeDeepSeek::start(vec![reasoning_turn(), Reply::text("done")]);
    let refused = reasoning_dropped(&server);
    assert_eq!(refused.status, 400);
    assert!(
        refused.body.contains("invalid_request_error"),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("reasoning-passed-back"),
        "{}",
        refused.body
    );
    // The refusal does not consume the script.
    assert_eq!(server.remaining(), 1);
    let violations = server.violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(
        (violations[0].request, violations[0].rule),
        (1, Rule::ReasoningPassedBack)
    );
    let shown = violations[0].to_string();
    assert!(
        shown.starts_with("request #2 (requests()[1]) broke `reasoning-passed-back`"),
        "{shown}"
    );
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.requests())).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("request #2") && message.contains("reasoning-passed-back"),
        "{message}"
    );

    // Passed back whole, the same history is served the next reply.
    let good = body(&[
        user("task"),
        assistant_calls(&["call_r"], Some("run it")),
        tool("call_r"),
    ]);
    let served = post(&server, "/chat/completions", &good.to_string());
    assert!(
        served.body.contains(r#""content":"done""#),
        "{}",
        served.body
    );
    assert_eq!(server.take_violations().len(), 1);
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn dropping_a_server_that_saw_a_broken_request_panics() {
    let server = FakeDeepSeek::start(vec![reasoning_turn()]);
    assert_eq!(reasoning_dropped(&server).status, 400);
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(server))).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("request #2 (requests()[1]) broke `reasoning-passed-back`"),
        "{message}"
    );
}

/// Reads the head of a response, then at least `bytes` of its body.
fn read_past_head(reader: &mut BufReader<TcpStream>, bytes: usize) -> String {
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(
            !line.is_empty(),
            "the connection closed in the head: {head}"
        );
        head.push_str(&line);
    }
    let mut body = vec![0u8; bytes];
    reader.read_exact(&mut body).unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

#[test]
fn endless_and_keep_alive_only_replies_go_on_until_the_client_leaves() {
    let server = FakeDeepSeek::start(vec![
        Reply::Endless {
            chunk_bytes: 1024,
            every: Duration::ZERO,
        },
        Reply::KeepAliveOnly {
            every: Duration::from_millis(10),
        },
    ]);
    let mut stream = connect(&server);
    send(&mut stream, "/chat/completions", "{}", "");
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let body = read_past_head(&mut reader, 1 << 20);
    assert!(body.contains(r#""content":"xxxx"#), "{}", &body[..200]);
    assert!(!body.contains("[DONE]"));
    drop((reader, stream));

    let mut stream = connect(&server);
    send(&mut stream, "/chat/completions", "{}", "");
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let body = read_past_head(&mut reader, 200);
    assert!(
        body.contains(": ping\n\n") && !body.contains("data:"),
        "{body}"
    );
    // Dropping the server ends a reply that never would (its threads are joined).
    drop(server);
}
