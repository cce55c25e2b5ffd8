//! Faults of the model server, met by the shipped headless profile through `llm-deepseek` and
//! `llm-retry`: garbage, oversized and endless bodies, servers that stall or drip, dropped
//! streams, error statuses, a refused connection, bad tool calls, and a model that answers the
//! compaction's summary request with a tool call.

use std::time::Duration;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use serde_json::json;

use super::kit::{Run, headless};
use super::{Fault, Seen};

pub(crate) fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "model: garbage SSE payload",
            expected: "error MALFORMED_RESPONSE, not retried",
            run: garbage_payload,
        },
        Fault {
            name: "model: bytes that are not SSE",
            expected: "error named (no crash), log sound",
            run: not_sse,
        },
        Fault {
            name: "model: one 100 MB chunk",
            expected: "cut at maxResponseBytes: RESPONSE_TOO_LARGE",
            run: huge_chunk,
        },
        Fault {
            name: "model: an answer that never ends",
            expected: "cut at maxResponseBytes: RESPONSE_TOO_LARGE",
            run: endless,
        },
        Fault {
            name: "model: slow-loris, keep-alives only",
            expected: "progress timeout: TIMEOUT, not a hang",
            run: keep_alive_only,
        },
        Fault {
            name: "model: headers, then silence",
            expected: "idle timeout: TIMEOUT",
            run: stall,
        },
        Fault {
            name: "model: a trickle past the deadline",
            expected: "maxResponseMs: DEADLINE_EXCEEDED, not retried",
            run: trickle,
        },
        Fault {
            name: "model: stream dropped mid-answer once",
            expected: "retried in the same step, completed",
            run: dropped_once,
        },
        Fault {
            name: "model: stream dropped mid-chunk every time",
            expected: "error TRANSPORT, partial kept interrupted",
            run: dropped_always,
        },
        Fault {
            name: "model: stream closed before [DONE] each time",
            expected: "error STREAM_CLOSED, partial kept interrupted",
            run: closed_always,
        },
        Fault {
            name: "model: HTTP 429 then an answer",
            expected: "Retry-After honoured, completed",
            run: rate_limited_once,
        },
        Fault {
            name: "model: HTTP 429 past the retries",
            expected: "error RATE_LIMIT",
            run: rate_limited_always,
        },
        Fault {
            name: "model: HTTP 500 then an answer",
            expected: "retried, completed",
            run: server_error_once,
        },
        Fault {
            name: "model: HTTP 500 past the retries",
            expected: "error SERVER",
            run: server_error_always,
        },
        Fault {
            name: "model: HTTP 401",
            expected: "error AUTH, not retried",
            run: unauthorized,
        },
        Fault {
            name: "model: HTTP 400",
            expected: "error INVALID_REQUEST, not retried",
            run: bad_request,
        },
        Fault {
            name: "model: connection refused",
            expected: "error TRANSPORT after the retries",
            run: refused,
        },
        Fault {
            name: "model: tool arguments that are not JSON",
            expected: "an error result to the model, turn goes on",
            run: broken_arguments,
        },
        Fault {
            name: "model: a call to a tool that does not exist",
            expected: "an error result naming it, turn goes on",
            run: unknown_tool,
        },
        Fault {
            name: "model: summary request answered by a call",
            expected: "tool_choice none sent; summary lands, completed",
            run: compaction_call,
        },
    ]
}

/// A run that must end `error` with `code` after `requests` requests, its log sound.
fn failed(run: &Run, server: &FakeDeepSeek, code: &str, requests: usize) -> Seen {
    let ended = run.ended(1, "error", Some(code));
    let seen = server.requests().len();
    assert_eq!(seen, requests, "{seen} requests, wanted {requests}");
    Seen::Held(format!("{ended}, {seen} request(s); {}", run.sound()))
}

/// A run that must complete with `answer`, its log sound.
fn completed(run: &Run, answer: &str) -> Seen {
    let ended = run.ended(0, "completed", None);
    let output = run.result.as_ref().map(|result| result["output"].clone());
    assert_eq!(output, Some(json!(answer)), "the answer");
    let retries = run.of_type("llm/retry").len();
    Seen::Held(format!("{ended}, {retries} retry; {}", run.sound()))
}

fn garbage_payload() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::Malformed, Reply::text("never")]);
    let run = headless("garbage", &server, "", "", "hello", &[]);
    failed(&run, &server, "MALFORMED_RESPONSE", 1)
}

fn not_sse() -> Seen {
    let junk = SseEvent::Raw("\u{1}\u{2}<html>502 Bad Gateway</html>\r\n\r\nzz: {\n".to_owned());
    let server = FakeDeepSeek::start(vec![
        Reply::SseUntilClose(vec![junk.clone()]),
        Reply::SseUntilClose(vec![junk]),
    ]);
    let run = headless("not-sse", &server, "", "", "hello", &[]);
    let (kind, code) = run.end();
    assert!(kind == "error" && code != "-", "turn/end {kind} {code}");
    Seen::Held(format!("{}; {}", run.ended(1, "error", None), run.sound()))
}

fn huge_chunk() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::SseUntilClose(vec![
        first_chunk(),
        SseEvent::content(&"a".repeat(100 << 20)),
    ])]);
    // Not retried: the same answer would come again.
    let run = headless("huge-chunk", &server, "", "", "hello", &[]);
    failed(&run, &server, "RESPONSE_TOO_LARGE", 1)
}

fn endless() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::Endless {
        chunk_bytes: 64 << 10,
        every: Duration::ZERO,
    }]);
    let run = headless(
        "endless",
        &server,
        "",
        "    maxResponseBytes: 8388608\n",
        "hello",
        &[],
    );
    failed(&run, &server, "RESPONSE_TOO_LARGE", 1)
}

fn keep_alive_only() -> Seen {
    let replies = (0..2)
        .map(|_| Reply::KeepAliveOnly {
            every: Duration::from_millis(100),
        })
        .collect();
    let server = FakeDeepSeek::start(replies);
    let run = headless(
        "loris",
        &server,
        "",
        "    streamProgressTimeoutMs: 1000\n",
        "hello",
        &[],
    );
    failed(&run, &server, "TIMEOUT", 2)
}

fn stall() -> Seen {
    let server = FakeDeepSeek::start(vec![
        Reply::Stall { ms: 20_000 },
        Reply::Stall { ms: 20_000 },
    ]);
    let run = headless(
        "stall",
        &server,
        "",
        "    streamIdleTimeoutMs: 800\n",
        "hello",
        &[],
    );
    failed(&run, &server, "TIMEOUT", 2)
}

fn trickle() -> Seen {
    let replies = (0..2)
        .map(|_| Reply::Endless {
            chunk_bytes: 8,
            every: Duration::from_millis(50),
        })
        .collect();
    let server = FakeDeepSeek::start(replies);
    let run = headless(
        "trickle",
        &server,
        "",
        "    maxResponseMs: 1500\n",
        "hello",
        &[],
    );
    failed(&run, &server, "DEADLINE_EXCEEDED", 1)
}

fn dropped(after: usize) -> Reply {
    Reply::DropMidStream {
        events: vec![
            first_chunk(),
            SseEvent::content("partial "),
            SseEvent::content("answer"),
        ],
        after_events: after,
    }
}

fn dropped_once() -> Seen {
    let server = FakeDeepSeek::start(vec![dropped(2), Reply::text("WHOLE")]);
    let run = headless("dropped-once", &server, "", "", "hello", &[]);
    completed(&run, "WHOLE")
}

fn dropped_always() -> Seen {
    let server = FakeDeepSeek::start(vec![dropped(2), dropped(2)]);
    let run = headless("dropped-always", &server, "", "", "hello", &[]);
    interrupted(&run);
    failed(&run, &server, "TRANSPORT", 2)
}

fn closed_always() -> Seen {
    let closing = || Reply::SseUntilClose(vec![first_chunk(), SseEvent::content("half ")]);
    let server = FakeDeepSeek::start(vec![closing(), closing()]);
    let run = headless("closed-always", &server, "", "", "hello", &[]);
    interrupted(&run);
    failed(&run, &server, "STREAM_CLOSED", 2)
}

/// The last attempt's partial answer is kept, marked interrupted.
fn interrupted(run: &Run) {
    let messages = run.of_type("assistant/message");
    assert!(
        messages
            .last()
            .is_some_and(|m| m["data"]["interrupted"] == true),
        "the partial answer is not kept interrupted: {messages:?}"
    );
}

fn rate_limited_once() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::rate_limited(1), Reply::text("AFTER")]);
    let run = headless("429-once", &server, "", "", "hello", &[]);
    let retry = run.of_type("llm/retry");
    assert_eq!(
        retry.first().map(|r| r["data"]["delayMs"].clone()),
        Some(json!(1000)),
        "Retry-After not honoured"
    );
    completed(&run, "AFTER")
}

fn rate_limited_always() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::rate_limited(0), Reply::rate_limited(0)]);
    let run = headless("429-always", &server, "", "", "hello", &[]);
    failed(&run, &server, "RATE_LIMIT", 2)
}

fn server_error_once() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::server_error(), Reply::text("AFTER")]);
    let run = headless("500-once", &server, "", "", "hello", &[]);
    completed(&run, "AFTER")
}

fn server_error_always() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::server_error(), Reply::server_error()]);
    let run = headless("500-always", &server, "", "", "hello", &[]);
    failed(&run, &server, "SERVER", 2)
}

fn unauthorized() -> Seen {
    let server = FakeDeepSeek::start(vec![Reply::unauthorized(), Reply::text("never")]);
    let run = headless("401", &server, "", "", "hello", &[]);
    failed(&run, &server, "AUTH", 1)
}

fn bad_request() -> Seen {
    let server = FakeDeepSeek::start(vec![
        Reply::error(400, "invalid_request_error", "fake bad request"),
        Reply::text("never"),
    ]);
    let run = headless("400", &server, "", "", "hello", &[]);
    failed(&run, &server, "INVALID_REQUEST", 1)
}

fn refused() -> Seen {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = super::kit::fault_dir("refused", "");
    let run = super::kit::run_in(dir, &format!("http://127.0.0.1:{port}"), "", "hello", &[]);
    let ended = run.ended(1, "error", Some("TRANSPORT"));
    Seen::Held(format!("{ended}; {}", run.sound()))
}

fn broken_arguments() -> Seen {
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", "{\"command\": \"echo hi")]),
        Reply::text("RECOVERED"),
    ]);
    let run = headless("bad-args", &server, "", "", "hello", &[]);
    let results = run.of_type("tool/result");
    let block = &results.first().expect("a tool result")["data"]["message"]["content"][0];
    assert_eq!(block["isError"], true, "{block}");
    let text = block["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let seen = completed(&run, "RECOVERED");
    Seen::Held(format!(
        "result `{}`; {}",
        super::cell(&text, 60),
        held(seen)
    ))
}

fn unknown_tool() -> Seen {
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_1", "no_such_tool", json!({})),
        Reply::text("RECOVERED"),
    ]);
    let run = headless("unknown-tool", &server, "", "", "hello", &[]);
    let results = run.of_type("tool/result");
    let block = &results.first().expect("a tool result")["data"]["message"]["content"][0];
    let text = block["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        block["isError"] == true && text.contains("no_such_tool"),
        "{block}"
    );
    let seen = completed(&run, "RECOVERED");
    Seen::Held(format!(
        "result `{}`; {}",
        super::cell(&text, 60),
        held(seen)
    ))
}

fn held(seen: Seen) -> String {
    match seen {
        Seen::Held(text) | Seen::Skipped(text) | Seen::Known(text) => text,
    }
}

/// A model that calls a tool whenever it may: the summary request must forbid it
/// (`tool_choice: none`, the tools kept), as the live API then answers with text.
fn compaction_call() -> Seen {
    let long = json!({"command": "head -c 8000 /dev/zero | tr '\\0' a", "description": "long"})
        .to_string();
    let server = FakeDeepSeek::start(Vec::new()).route(move |body| {
        let summary = body["messages"].to_string().contains("checkpoint summary");
        let results = body["messages"].as_array().map_or(0, |messages| {
            messages.iter().filter(|m| m["role"] == "tool").count()
        });
        Some(if summary && body["tool_choice"] == "none" {
            Reply::text("SUMMARY: the user asked for a long line.")
        } else if summary || results == 0 {
            // Tools allowed: the model calls one (as the fault's model always does).
            Reply::tool_calls(&[("call_1", "bash", &long)])
        } else {
            Reply::text("DONE")
        })
    });
    let run = headless(
        "compaction-call",
        &server,
        "",
        "- id: compaction\n  config:\n    contextWindow: 2000\n",
        "print a long line",
        &[],
    );
    let asked = server
        .requests()
        .into_iter()
        .find(|request| {
            request.body["messages"]
                .to_string()
                .contains("checkpoint summary")
        })
        .expect("a summary request");
    assert_eq!(
        asked.body["tool_choice"], "none",
        "tool_choice of the summary request"
    );
    assert!(
        asked.body["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty()),
        "the summary request dropped its tools"
    );
    assert_eq!(
        run.of_type("compaction/summary").len(),
        1,
        "no summary logged"
    );
    let seen = completed(&run, "DONE");
    Seen::Held(format!("tool_choice none, tools kept; {}", held(seen)))
}
