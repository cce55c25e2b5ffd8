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
