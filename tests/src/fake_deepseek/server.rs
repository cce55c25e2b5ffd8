//! The fake server itself: a bounded accept loop, SSE framing, recording, and the request
//! invariants of `invariants.rs` checked on every chat request (a request is read by
//! `request.rs`).

use std::io::{BufReader, ErrorKind, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::invariants::{self, StreamedTurn, Violation};
use super::models::ModelList;
use super::request::read_request;
use super::script::{GATE_LIMIT, RecordedRequest, Reply, SseEvent};

/// Longest the accept loop waits for a next connection before it stops on its own: as long as
/// the longest wait of a test for its host (a cold `plugin_build` compiles abi_stable and serde
/// between two requests, over 5 minutes when other tests share the two cores). A server stops
/// on drop, so the bound only matters for one that is never dropped.
const QUIET_LIMIT: Duration = Duration::from_secs(900);
/// Most connections one server accepts.
const MAX_CONNECTIONS: usize = 256;
/// Most requests served on one kept-alive connection.
const MAX_REQUESTS_PER_CONNECTION: usize = 64;
const SOCKET_TIMEOUT: Duration = Duration::from_secs(30);
/// Safety bounds of the replies that never end on their own.
const ENDLESS_BYTES: usize = 1 << 30;
const ENDLESS_FOR: Duration = Duration::from_secs(120);

struct Shared {
    script: Mutex<std::collections::VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Every tool-call turn streamed so far, to check that its reasoning comes back.
    streamed: Mutex<Vec<StreamedTurn>>,
    /// Every broken request invariant, in arrival order.
    violations: Mutex<Vec<Violation>>,
    stop: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// A handle on every accepted socket, so stopping can unblock a worker waiting in a read.
    sockets: Mutex<Vec<TcpStream>>,
    /// What `GET .../models` answers (`models.rs`).
    models: ModelList,
    /// How session-title requests are met (see [`FakeDeepSeek::answer_titles`]).
    titles: Mutex<Titles>,
    /// The session-title requests, kept apart from the conversation's.
    title_requests: Mutex<Vec<RecordedRequest>>,
    /// Answers chosen from the request itself, ahead of the script (see [`FakeDeepSeek::route`]).
    router: Mutex<Option<Arc<Router>>>,
}

/// Picks the reply of one chat request from its body; `None` falls back to the script.
type Router = dyn Fn(&serde_json::Value) -> Option<Reply> + Send + Sync;

/// How the server meets a session-title request (recognized by the title instruction).
#[derive(Clone)]
enum Titles {
    /// Refused with a 400 that consumes nothing: the host keeps its fallback title.
    Refused,
    /// Answered with this title, outside the script.
    Answered(String),
    /// Served from the script like any other request.
    Scripted,
}

/// The running server; stops on drop.
///
/// A chat request that breaks a wire invariant (see `invariants.rs`) is answered with the 400 the
/// live API would send, without consuming the script, and recorded: [`Self::requests`],
/// [`Self::wait_requests`] and dropping the server then panic with every violation, each naming
/// the request and the rule. A test that breaks a rule on purpose takes the violations with
/// [`Self::take_violations`].
pub struct FakeDeepSeek {
    url: String,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl FakeDeepSeek {
    /// Listens on `127.0.0.1:0` and serves `script`, one reply per chat-completions request.
    pub fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
            streamed: Mutex::new(Vec::new()),
            violations: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
            sockets: Mutex::new(Vec::new()),
            models: ModelList::default(),
            titles: Mutex::new(Titles::Refused),
            title_requests: Mutex::new(Vec::new()),
            router: Mutex::new(None),
        });
        let accepting = shared.clone();
        let acceptor = std::thread::spawn(move || accept_loop(&listener, &accepting));
        Self {
            url,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// The base URL (`http://127.0.0.1:<port>`), to use as the adapter's `baseURL`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Every request received so far, in arrival order; panics if one broke a wire invariant.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.assert_no_violations();
        self.shared.requests.lock().unwrap().clone()
    }

    /// The wire invariants broken so far (they stay recorded).
    pub fn violations(&self) -> Vec<Violation> {
        self.shared.violations.lock().unwrap().clone()
    }

    /// The wire invariants broken so far, forgotten: for tests that break them on purpose.
    pub fn take_violations(&self) -> Vec<Violation> {
        std::mem::take(&mut *self.shared.violations.lock().unwrap())
    }

    /// Panics, listing them, when requests broke wire invariants.
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        assert!(violations.is_empty(), "{}", report(&violations));
    }

    /// Waits until at least `count` requests arrived; panics after `timeout`.
    pub fn wait_requests(&self, count: usize, timeout: Duration) -> Vec<RecordedRequest> {
        let deadline = Instant::now() + timeout;
        loop {
            let requests = self.requests();
            if requests.len() >= count {
                return requests;
            }
            assert!(
                Instant::now() < deadline,
                "fake DeepSeek saw {} of {count} requests within {timeout:?}",
                requests.len()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Answers every session-title request with `title`, outside the script. By default the
    /// server refuses them (a 400, nothing consumed, kept apart from [`Self::requests`]), so a
    /// profile with model titles on keeps its fallback titles and its scripts' order.
    pub fn answer_titles(self, title: &str) -> Self {
        *self.shared.titles.lock().unwrap() = Titles::Answered(title.to_owned());
        self
    }

    /// Serves session-title requests from the script like any other (a title server of its
    /// own, whose script is the titles).
    pub fn script_titles(self) -> Self {
        *self.shared.titles.lock().unwrap() = Titles::Scripted;
        self
    }

    /// The session-title requests met outside the script, in arrival order.
    pub fn title_requests(&self) -> Vec<RecordedRequest> {
        self.shared.title_requests.lock().unwrap().clone()
    }

    /// Answers each chat request by `router` (given the request's body) before the script: for
    /// many sessions at once, whose requests arrive in no fixed order, each answered by what it
    /// carries (its prompt, how many tool results it holds). `None` takes the script's next.
    pub fn route(
        self,
        router: impl Fn(&serde_json::Value) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        *self.shared.router.lock().unwrap() = Some(Arc::new(router));
        self
    }

    /// Adds replies at the end of the script, for a test that learns what to answer as it
    /// goes (an id the host made up).
    pub fn push(&self, replies: Vec<Reply>) {
        self.shared.script.lock().unwrap().extend(replies);
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }

    pub(super) fn model_list(&self) -> &ModelList {
        &self.shared.models
    }
}

impl Drop for FakeDeepSeek {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for socket in self.shared.sockets.lock().unwrap().drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
        let workers = std::mem::take(&mut *self.shared.workers.lock().unwrap());
        for worker in workers {
            let _ = worker.join();
        }
        let violations = std::mem::take(&mut *self.shared.violations.lock().unwrap());
        if violations.is_empty() {
            return;
        }
        if std::thread::panicking() {
            // A second panic would abort the test binary; say it instead.
            eprintln!("{}", report(&violations));
        } else {
            panic!("{}", report(&violations));
        }
    }
}

fn report(violations: &[Violation]) -> String {
    let mut text = format!(
        "fake DeepSeek: {} request invariant(s) broken (the live API would answer 400):",
        violations.len()
    );
    for violation in violations {
        text.push_str(&format!("\n  {violation}"));
    }
    text
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut accepted = 0;
    let mut last = Instant::now();
    while !shared.stop.load(Ordering::SeqCst)
        && accepted < MAX_CONNECTIONS
        && last.elapsed() < QUIET_LIMIT
    {
        match listener.accept() {
            Ok((stream, _)) => {
                accepted += 1;
                last = Instant::now();
                if let Ok(handle) = stream.try_clone() {
                    shared.sockets.lock().unwrap().push(handle);
                }
                let connection = shared.clone();
                let worker = std::thread::spawn(move || {
                    let closer = stream.try_clone();
                    let _ = serve(stream, &connection);
                    // The handle kept for the server's stop would hold the socket open after
                    // its worker gave up on it (the socket timeout, between two requests a
                    // long tool call apart): a real server closes a connection it stops
                    // reading, so the client sends its next request on a new one instead of
                    // waiting for an answer from nobody.
                    if let Ok(closer) = closer {
                        let _ = closer.shutdown(std::net::Shutdown::Both);
                    }
                });
                shared.workers.lock().unwrap().push(worker);
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Sleeps `total` in short slices; false when the server is stopping.
fn pause(shared: &Shared, total: Duration) -> bool {
    let deadline = Instant::now() + total;
    while Instant::now() < deadline {
        if shared.stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5).min(deadline - Instant::now()));
    }
    !shared.stop.load(Ordering::SeqCst)
}

/// Whether the connection may serve another request after this one.
enum After {
    KeepAlive,
    Close,
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(SOCKET_TIMEOUT))?;
    stream.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    for _ in 0..MAX_REQUESTS_PER_CONNECTION {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Some(request) = read_request(&mut reader, &mut writer)? else {
            break;
        };
        let client_closes = request
            .header("connection")
            .is_some_and(|value| value.eq_ignore_ascii_case("close"));
        if ModelList::asks(&request) {
            // Neither a chat request nor recorded with them: see `models.rs`.
            match respond(&mut writer, shared, shared.models.answer(request))? {
                After::KeepAlive if !client_closes => continue,
                _ => break,
            }
        }
        let is_chat = request.method == "POST" && request.path.ends_with("/chat/completions");
        let titles = shared.titles.lock().unwrap().clone();
        if is_chat && is_title(&request.body) && !matches!(titles, Titles::Scripted) {
            shared.title_requests.lock().unwrap().push(request);
            let reply = match titles {
                Titles::Answered(title) => Reply::text(&title),
                _ => Reply::error(
                    400,
                    "invalid_request_error",
                    "fake DeepSeek answers no title request unless the test asks it to",
                ),
            };
            match respond(&mut writer, shared, reply)? {
                After::KeepAlive if !client_closes => continue,
                _ => break,
            }
        }
        let broken = if is_chat {
            invariants::check(&request.body, &shared.streamed.lock().unwrap())
        } else {
            Vec::new()
        };
        let index = {
            let mut requests = shared.requests.lock().unwrap();
            requests.push(request);
            requests.len() - 1
        };
        let reply = if !broken.is_empty() {
            let violations: Vec<Violation> = broken
                .into_iter()
                .map(|(rule, detail)| Violation {
                    request: index,
                    rule,
                    detail,
                })
                .collect();
            let refusal = invariants::refusal(&violations);
            shared.violations.lock().unwrap().extend(violations);
            Some(refusal)
        } else if is_chat {
            let router = shared.router.lock().unwrap().clone();
            let routed = router.and_then(|router| {
                let requests = shared.requests.lock().unwrap();
                router(&requests[index].body)
            });
            let reply = routed.or_else(|| shared.script.lock().unwrap().pop_front());
            if let Some(turn) = reply.as_ref().and_then(invariants::streamed_turn) {
                shared.streamed.lock().unwrap().push(turn);
            }
            reply
        } else {
            Some(Reply::error(
                404,
                "not_found",
                "fake DeepSeek serves only POST /chat/completions",
            ))
        };
        let reply = reply.unwrap_or_else(|| {
            Reply::error(500, "script_exhausted", "fake DeepSeek script exhausted")
        });
        match respond(&mut writer, shared, reply)? {
            After::KeepAlive if !client_closes => {}
            _ => break,
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
    Ok(())
}

/// Whether a chat request is a session title's: its system message is the title instruction.
fn is_title(body: &serde_json::Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|system| {
            system.starts_with("Create a concise title for an AI coding-assistant session")
        })
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn event_bytes(event: &SseEvent) -> Option<String> {
    match event {
        SseEvent::Data(payload) => Some(format!("data: {payload}\n\n")),
        SseEvent::Comment(text) => Some(format!(": {text}\n\n")),
        SseEvent::Done => Some("data: [DONE]\n\n".to_owned()),
        SseEvent::Raw(bytes) => Some(bytes.clone()),
        SseEvent::Pause(_) | SseEvent::Gate(_) => None,
    }
}

/// How an SSE body is delimited.
#[derive(Clone, Copy, PartialEq)]
enum Framing {
    Chunked,
    UntilClose,
}

fn sse_head(writer: &mut TcpStream, framing: Framing) -> std::io::Result<()> {
    let delimiting = match framing {
        Framing::Chunked => "transfer-encoding: chunked\r\n",
        Framing::UntilClose => "connection: close\r\n",
    };
    write!(
        writer,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nx-request-id: fake-request\r\n{delimiting}\r\n"
    )?;
    writer.flush()
}

/// Writes `events` (pausing where told); false when the server began stopping.
fn write_events(
    writer: &mut TcpStream,
    shared: &Shared,
    events: &[SseEvent],
    framing: Framing,
) -> std::io::Result<bool> {
    for event in events {
        if let SseEvent::Pause(duration) = event {
            if !pause(shared, *duration) {
                return Ok(false);
            }
            continue;
        }
        if let SseEvent::Gate(file) = event {
            let deadline = Instant::now() + GATE_LIMIT;
            while !file.exists() && Instant::now() < deadline {
                if !pause(shared, Duration::from_millis(10)) {
                    return Ok(false);
                }
            }
            continue;
        }
        let Some(bytes) = event_bytes(event) else {
            continue;
        };
        if bytes.is_empty() {
            continue; // an empty chunk would end a chunked body
        }
        match framing {
            Framing::Chunked => write!(writer, "{:x}\r\n{bytes}\r\n", bytes.len())?,
            Framing::UntilClose => writer.write_all(bytes.as_bytes())?,
        }
        writer.flush()?;
    }
    Ok(true)
}

fn respond(writer: &mut TcpStream, shared: &Shared, reply: Reply) -> std::io::Result<After> {
    match reply {
        Reply::Sse(events) => {
            sse_head(writer, Framing::Chunked)?;
            if !write_events(writer, shared, &events, Framing::Chunked)? {
                return Ok(After::Close);
            }
            writer.write_all(b"0\r\n\r\n")?;
            writer.flush()?;
            Ok(After::KeepAlive)
        }
        Reply::SseUntilClose(events) => {
            sse_head(writer, Framing::UntilClose)?;
            write_events(writer, shared, &events, Framing::UntilClose)?;
            Ok(After::Close)
        }
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let has_type = headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
            if !has_type {
                head.push_str("content-type: application/json\r\n");
            }
            for (name, value) in &headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            writer.write_all(head.as_bytes())?;
            writer.write_all(body.as_bytes())?;
            writer.flush()?;
            Ok(After::KeepAlive)
        }
        Reply::DropMidStream {
            events,
            after_events,
        } => {
            sse_head(writer, Framing::Chunked)?;
            let sent = &events[..after_events.min(events.len())];
            write_events(writer, shared, sent, Framing::Chunked)?;
            // Abrupt end: no terminating chunk, the body is cut.
            let _ = writer.shutdown(Shutdown::Both);
            Ok(After::Close)
        }
        Reply::Malformed => {
            sse_head(writer, Framing::Chunked)?;
            let events = [SseEvent::Data("{not-json".into()), SseEvent::Done];
            write_events(writer, shared, &events, Framing::Chunked)?;
            writer.write_all(b"0\r\n\r\n")?;
            writer.flush()?;
            Ok(After::KeepAlive)
        }
        Reply::Stall { ms } => {
            sse_head(writer, Framing::Chunked)?;
            pause(shared, Duration::from_millis(ms));
            let _ = writer.shutdown(Shutdown::Both);
            Ok(After::Close)
        }
        Reply::Endless { chunk_bytes, every } => {
            let event = SseEvent::content(&"x".repeat(chunk_bytes.max(1)));
            endless(writer, shared, &event, every)
        }
        Reply::KeepAliveOnly { every } => {
            endless(writer, shared, &SseEvent::Comment("ping".into()), every)
        }
    }
}

/// 200, then `event` again and again (`every` apart) until the client goes away, the server
/// stops, or a safety bound passes; the socket is closed after.
fn endless(
    writer: &mut TcpStream,
    shared: &Shared,
    event: &SseEvent,
    every: Duration,
) -> std::io::Result<After> {
    sse_head(writer, Framing::Chunked)?;
    let started = Instant::now();
    let mut sent = 0usize;
    let step = [event.clone(), SseEvent::Pause(every)];
    while sent < ENDLESS_BYTES && started.elapsed() < ENDLESS_FOR {
        // A write that fails is the client closing the connection: the end of this reply.
        match write_events(writer, shared, &step, Framing::Chunked) {
            Ok(true) => sent += event_bytes(event).map_or(0, |bytes| bytes.len()),
            Ok(false) | Err(_) => break,
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
    Ok(After::Close)
}
