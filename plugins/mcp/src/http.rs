//! The Streamable HTTP transport, through the host's `http` service (plugins own no sockets).
//! Every message is a POST to the endpoint; the answer is JSON or an event stream, read to its
//! end into the inbox. The session id the server gives at `initialize` and the negotiated
//! revision go with every later request. After the handshake a GET stream, when the server
//! offers one, carries what the server says unprompted (list changes). An expired session
//! (404) closes the connection, and the supervisor starts a new one; so do a few transport
//! failures in a row (refused connections, 5xx answers): the server went down, and only a new
//! connection (with the supervisor's backoff) finds it again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::io::http::{HttpHeader, HttpRequest, HttpResponse, HttpService};
use dsh_plugin_api::{Context, Service, lock};

use crate::sse::Events;
use crate::transport::{BoxFuture, Event, Inbox, Transport, TransportError};

/// Time allowed for a response head.
pub(crate) const HEAD_TIMEOUT_MS: u64 = 30_000;

/// A response's body read to its end, keeping at most `cap` bytes of it, and why it broke off
/// when it did (what came before the break is kept: an error's first words still say
/// something).
pub(crate) async fn read_capped(response: &HttpResponse, cap: usize) -> (String, Option<String>) {
    let mut body = Vec::new();
    let broke = loop {
        match response
            .body
            .next_chunk(HEAD_TIMEOUT_MS)
            .await
            .into_result()
        {
            Ok(chunk) => match chunk.into_option() {
                Some(bytes) => {
                    let room = cap.saturating_sub(body.len());
                    body.extend_from_slice(&bytes[..bytes.len().min(room)]);
                }
                None => break None,
            },
            Err(error) => break Some(error.to_string()),
        }
    };
    (String::from_utf8_lossy(&body).into_owned(), broke)
}

/// How many times the GET stream is opened again after it ended.
const STREAM_REOPENS: u32 = 5;

/// Transport failures in a row (no answer, or a 5xx) after which the connection is closed.
const FAILURES_BEFORE_CLOSE: u32 = 3;

pub(crate) struct Http {
    shared: Arc<Shared>,
}

struct Shared {
    ctx: Context,
    client: Service<HttpService>,
    url: String,
    headers: Vec<(String, String)>,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    inbox: Inbox,
    /// Fired when the connection closes: the GET stream stops with it.
    stop: Arc<CancelFlag>,
    failures: Failures,
}

/// Transport failures since the last answer: the last one allowed closes the connection (the
/// server went down, and only a new connection, with the supervisor's backoff, finds it again).
#[derive(Default)]
pub(crate) struct Failures(AtomicU32);

impl Failures {
    /// Counts one, saying `why` to `inbox` when it is the last allowed.
    pub(crate) fn failed(&self, inbox: &Inbox, why: &str) {
        let count = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        if count == FAILURES_BEFORE_CLOSE {
            let _ = inbox.send(Event::Closed(format!(
                "{count} requests in a row failed, the last: {why}"
            )));
        }
    }

    /// The server answered.
    pub(crate) fn answered(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// The headers of a request: the entry's own, then what it accepts and, with a body, its type.
pub(crate) fn headers(entry: &[(String, String)], accept: &str, body: bool) -> Vec<HttpHeader> {
    let mut headers: Vec<HttpHeader> = entry
        .iter()
        .map(|(name, value)| header(name, value))
        .collect();
    headers.push(header("accept", accept));
    if body {
        headers.push(header("content-type", "application/json"));
    }
    headers
}

pub(crate) fn start(
    ctx: &Context,
    client: Service<HttpService>,
    url: &str,
    headers: &[(String, String)],
    inbox: Inbox,
) -> Http {
    Http {
        shared: Arc::new(Shared {
            ctx: ctx.clone(),
            client,
            url: url.to_owned(),
            headers: headers.to_vec(),
            session: Mutex::default(),
            version: Mutex::default(),
            inbox,
            stop: CancelFlag::new(),
            failures: Failures::default(),
        }),
    }
}

fn header(name: &str, value: &str) -> HttpHeader {
    HttpHeader {
        name: RString::from(name),
        value: RString::from(value),
    }
}

impl Shared {
    fn failed(&self, why: &str) {
        self.failures.failed(&self.inbox, why);
    }

    fn request(&self, method: &str, accept: &str, body: Vec<u8>) -> HttpRequest {
        let mut headers = headers(&self.headers, accept, !body.is_empty());
        if let Some(session) = lock(&self.session).as_deref() {
            headers.push(header("mcp-session-id", session));
        }
        if let Some(version) = lock(&self.version).as_deref() {
            headers.push(header("mcp-protocol-version", version));
        }
        HttpRequest {
            method: RString::from(method),
            url: RString::from(self.url.as_str()),
            headers: RVec::from(headers),
            body: RVec::from(body),
            head_timeout_ms: HEAD_TIMEOUT_MS,
        }
    }

    /// Reads an event stream to its end, each event's data into the inbox.
    async fn read_events(&self, response: &HttpResponse) -> Result<(), TransportError> {
        let mut events = Events::default();
        loop {
            let chunk = response
                .body
                .next_chunk(0)
                .await
                .into_result()
                .map_err(|error| TransportError(format!("the event stream broke: {error}")))?;
            let Some(bytes) = chunk.into_option() else {
                return Ok(());
            };
            for data in events.push(&bytes) {
                if self.inbox.send(Event::Message(data)).is_err() {
                    return Ok(());
                }
            }
        }
    }

    async fn read_body(&self, response: &HttpResponse) -> Result<String, TransportError> {
        // Capped as an event is: a longer answer fails to read as JSON and is reported.
        let (body, broke) = read_capped(response, crate::sse::MAX_EVENT).await;
        match broke {
            Some(error) => Err(TransportError(format!("the answer broke off: {error}"))),
            None => Ok(body),
        }
    }

    async fn post(&self, message: String) -> Result<(), TransportError> {
        let request = self.request(
            "POST",
            "application/json, text/event-stream",
            message.into_bytes(),
        );
        let response = match self.client.send(request).await.into_result() {
            Ok(response) => response,
            Err(error) => {
                let why = format!("POST {}: {error}", self.url);
                self.failed(&why);
                return Err(TransportError(why));
            }
        };
        if let Some(session) = response.header("mcp-session-id") {
            lock(&self.session).get_or_insert_with(|| session.to_owned());
        }
        match response.status {
            200..=299 => self.failures.answered(),
            404 if lock(&self.session).is_some() => {
                let why = "the server ended the session (404)".to_owned();
                let _ = self.inbox.send(Event::Closed(why.clone()));
                return Err(TransportError(why));
            }
            status => {
                let body = self.read_body(&response).await.unwrap_or_default();
                let why = format!("POST {} answered {status}: {}", self.url, body.trim());
                if status >= 500 {
                    self.failed(&why);
                }
                return Err(TransportError(why));
            }
        }
        let kind = response
            .header("content-type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if kind.starts_with("text/event-stream") {
            self.read_events(&response).await
        } else if kind.starts_with("application/json") {
            let body = self.read_body(&response).await?;
            if !body.trim().is_empty() {
                let _ = self.inbox.send(Event::Message(body));
            }
            Ok(())
        } else {
            // 202 Accepted for a notification or an answer: nothing to read.
            Ok(())
        }
    }

    /// The server's own stream (GET), reopened a few times when it ends; a server that offers
    /// none answers 405, and that is fine. One that gave a stream and then does not answer the
    /// reopening went down: the connection is closed at once.
    async fn listen(self: Arc<Self>) {
        for attempt in 0..=STREAM_REOPENS {
            let request = self.request("GET", "text/event-stream", Vec::new());
            let response = match self.client.send(request).await.into_result() {
                Ok(response) => response,
                Err(error) => {
                    if attempt > 0 {
                        let _ = self.inbox.send(Event::Closed(format!(
                            "the server's event stream ended and GET {} failed: {error}",
                            self.url
                        )));
                    }
                    return;
                }
            };
            match response.status {
                200..=299 => {}
                404 if lock(&self.session).is_some() => {
                    let _ = self.inbox.send(Event::Closed(
                        "the server ended the session (404)".to_owned(),
                    ));
                    return;
                }
                _ => return,
            }
            // A stream that broke is reopened like one that ended: the reopening tells whether
            // the server is still there.
            let _ = self.read_events(&response).await;
            if self.inbox.is_closed() {
                return;
            }
        }
    }
}

impl Transport for Http {
    fn send(&self, message: String) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(self.shared.post(message))
    }

    fn negotiated(&self, version: &str) {
        *lock(&self.shared.version) = Some(version.to_owned());
    }

    fn ready(&self) {
        let shared = self.shared.clone();
        let stop = self.shared.stop.clone();
        let _ = self.shared.ctx.spawn(async move {
            stop.until(shared.listen()).await;
        });
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.shared.stop.fire();
            if lock(&self.shared.session).is_some() {
                let request = self
                    .shared
                    .request("DELETE", "application/json", Vec::new());
                let _ = self.shared.client.send(request).await;
            }
        })
    }
}
