//! A fake DeepSeek chat-completions server on loopback, speaking the real wire protocol: HTTP/1.1
//! with SSE bodies (chunked, or delimited by closing the connection), scripted per request, and
//! recording every request for assertions.
//!
//! Each `POST .../chat/completions` takes the next [`Reply`] of the script; other requests get a
//! 404, and requests past the end of the script a 500. Every loop is bounded: the accept loop
//! polls with a timeout and stops at a connection cap, after a quiet spell, or on drop; pauses
//! and stalls sleep in short slices that watch the stop flag; sockets have read and write
//! timeouts. Dropping the server stops and joins every thread.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One step of a scripted SSE body.
#[derive(Debug, Clone, PartialEq)]
pub enum SseEvent {
    /// `data: <payload>\n\n`.
    Data(String),
    /// `: <text>\n\n` (a keep-alive comment).
    Comment(String),
    /// `data: [DONE]\n\n`.
    Done,
    /// Sleep before the next step.
    Pause(Duration),
    /// Bytes written as they are (for framing tests: split events, CRLF, partial lines).
    Raw(String),
}

/// How the server answers one chat-completions request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200 with a chunked SSE body, one chunk per event, then the terminating chunk.
    Sse(Vec<SseEvent>),
    /// 200 with an SSE body ended by closing the connection (no length, no chunking).
    SseUntilClose(Vec<SseEvent>),
    /// A complete non-SSE response (401, 429 with `retry-after`, 500...).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// 200, the first `after_events` steps of `events`, then the socket is closed mid-body.
    DropMidStream {
        events: Vec<SseEvent>,
        after_events: usize,
    },
    /// 200 with a payload that is not JSON, then `[DONE]`.
    Malformed,
    /// 200 headers, then silence for `ms`, then the socket is closed.
    Stall { ms: u64 },
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON, or as a JSON string when it was not JSON.
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The first chunk of a thinking-mode stream: role, null content, empty reasoning.
pub fn first_chunk() -> SseEvent {
    SseEvent::Data(
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "reasoning_content": ""}, "finish_reason": null}]})
            .to_string(),
    )
}

impl SseEvent {
    pub fn json(value: &Value) -> Self {
        Self::Data(value.to_string())
    }

    fn delta(delta: Value) -> Self {
        Self::json(&json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}))
    }

    pub fn content(text: &str) -> Self {
        Self::delta(json!({"content": text}))
    }

    pub fn reasoning(text: &str) -> Self {
        Self::delta(json!({"content": null, "reasoning_content": text}))
    }

    /// One tool-call fragment; `id` and `name` come on a call's first fragment only.
    pub fn tool_call(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> Self {
        let mut call = json!({"index": index, "function": {"arguments": arguments}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        Self::delta(json!({"tool_calls": [call]}))
    }

    /// The finish chunk (`stop`, `tool_calls`, `length`, `content_filter`...).
    pub fn finish(reason: &str) -> Self {
        Self::json(
            &json!({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": reason}]}),
        )
    }

    /// The finish chunk with usage attached.
    pub fn finish_with_usage(reason: &str, usage: &Value) -> Self {
        Self::json(
            &json!({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": reason}], "usage": usage}),
        )
    }

    /// A trailing usage-only chunk.
    pub fn usage(usage: &Value) -> Self {
        Self::json(&json!({"choices": [], "usage": usage}))
    }
}

/// Wire usage as DeepSeek reports it (`prompt_tokens` includes the cached ones).
pub fn usage(prompt: u64, completion: u64, cached: u64, reasoning: Option<u64>) -> Value {
    let mut usage = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_cache_hit_tokens": cached,
        "prompt_cache_miss_tokens": prompt.saturating_sub(cached),
        "prompt_tokens_details": {"cached_tokens": cached},
    });
    if let Some(reasoning) = reasoning {
        usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
    }
    usage
}

/// `text` in pieces of about `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

impl Reply {
    /// A plain answer streamed in small pieces, usage on the finish chunk.
    pub fn text(text: &str) -> Self {
        let mut events = vec![first_chunk()];
        events.extend(pieces(text, 4).iter().map(|piece| SseEvent::content(piece)));
        events.push(SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)));
        events.push(SseEvent::Done);
        Self::Sse(events)
    }

    /// Reasoning, then the answer; usage in a trailing chunk.
    pub fn reasoning_then_text(reasoning: &str, text: &str) -> Self {
        let mut events = vec![first_chunk()];
        events.extend(
            pieces(reasoning, 4)
                .iter()
                .map(|piece| SseEvent::reasoning(piece)),
        );
        events.extend(pieces(text, 4).iter().map(|piece| SseEvent::content(piece)));
        events.push(SseEvent::finish("stop"));
        events.push(SseEvent::usage(&usage(20, 9, 16, Some(4))));
        events.push(SseEvent::Done);
        Self::Sse(events)
    }

    /// Parallel tool calls `(id, name, arguments)`, each call's arguments split in two and the
    /// calls' fragments interleaved, then a `tool_calls` finish and trailing usage.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        let mut events = vec![first_chunk()];
        let halves: Vec<(String, String)> = calls
            .iter()
            .map(|(_, _, args)| {
                let chars: Vec<char> = args.chars().collect();
                let (head, tail) = chars.split_at(chars.len() / 2);
                (head.iter().collect(), tail.iter().collect())
            })
            .collect();
        for (index, ((id, name, _), (head, _))) in calls.iter().zip(&halves).enumerate() {
            let index = u32::try_from(index).unwrap();
            events.push(SseEvent::tool_call(index, Some(id), Some(name), ""));
            events.push(SseEvent::tool_call(index, None, None, head));
        }
        for (index, (_, tail)) in halves.iter().enumerate() {
            let index = u32::try_from(index).unwrap();
            events.push(SseEvent::tool_call(index, None, None, tail));
        }
        events.push(SseEvent::finish("tool_calls"));
        events.push(SseEvent::usage(&usage(30, 12, 0, None)));
        events.push(SseEvent::Done);
        Self::Sse(events)
    }

    /// A JSON error body in the provider's shape.
    pub fn error(status: u16, code: &str, message: &str) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: json!({"error": {"message": message, "type": code, "code": code}}).to_string(),
        }
    }

    /// 429 with `retry-after: <seconds>`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Status {
            status: 429,
            headers: vec![
                ("retry-after".into(), retry_after_secs.to_string()),
                ("x-request-id".into(), "fake-request-429".into()),
            ],
            body: json!({"error": {"message": "fake rate limit", "type": "rate_limit", "code": "rate_limit"}}).to_string(),
        }
    }

    pub fn unauthorized() -> Self {
        Self::error(401, "invalid_api_key", "fake authentication failed")
    }

    pub fn server_error() -> Self {
        Self::error(500, "server_error", "fake server error")
    }
}

/// Longest the accept loop waits for a next connection before it stops on its own.
const QUIET_LIMIT: Duration = Duration::from_secs(300);
/// Most connections one server accepts.
const MAX_CONNECTIONS: usize = 256;
/// Most requests served on one kept-alive connection.
const MAX_REQUESTS_PER_CONNECTION: usize = 64;
const SOCKET_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

struct Shared {
    script: Mutex<std::collections::VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    stop: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// A handle on every accepted socket, so stopping can unblock a worker waiting in a read.
    sockets: Mutex<Vec<TcpStream>>,
}

/// The running server; stops on drop.
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
            stop: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
            sockets: Mutex::new(Vec::new()),
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

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap().clone()
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

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        self.shared.script.lock().unwrap().len()
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
    }
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
                    let _ = serve(stream, &connection);
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
        let is_chat = request.method == "POST" && request.path.ends_with("/chat/completions");
        shared.requests.lock().unwrap().push(request);
        let reply = if is_chat {
            shared.script.lock().unwrap().pop_front()
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

/// Reads one request; `None` when the client closed the connection between requests.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
) -> std::io::Result<Option<RecordedRequest>> {
    let mut head = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .by_ref()
            .take(MAX_HEAD_BYTES as u64)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(ErrorKind::UnexpectedEof.into())
            };
        }
        if line == b"\r\n" || line == b"\n" {
            if head.is_empty() {
                continue; // stray blank line between requests
            }
            break;
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD_BYTES {
            return Err(ErrorKind::InvalidData.into());
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let mut start = lines.next().unwrap_or_default().split_whitespace();
    let method = start.next().unwrap_or_default().to_owned();
    let path = start.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    if find("expect").is_some_and(|value| value.eq_ignore_ascii_case("100-continue")) {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body =
        if find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
            read_chunked(reader)?
        } else {
            let length: usize = find("content-length")
                .and_then(|value| value.parse().ok())
                .unwrap_or(0);
            if length > MAX_BODY_BYTES {
                return Err(ErrorKind::InvalidData.into());
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body)?;
            body
        };
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.by_ref().take(1024).read_line(&mut size_line)?;
        let size_text = size_line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| ErrorKind::InvalidData)?;
        if size == 0 {
            // Trailers, up to the blank line.
            loop {
                let mut trailer = String::new();
                if reader.by_ref().take(1024).read_line(&mut trailer)? == 0
                    || trailer.trim().is_empty()
                {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(ErrorKind::InvalidData.into());
        }
        let at = body.len();
        body.resize(at + size, 0);
        reader.read_exact(&mut body[at..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
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
        SseEvent::Pause(_) => None,
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
    }
}

#[cfg(test)]
mod tests {
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
}
