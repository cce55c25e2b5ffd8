//! The legacy HTTP+SSE transport (MCP 2024-11-05), through the host's `http` service, for the
//! servers that still speak only it (`type: sse` in a file, an ACP client's `sse` entry).
//!
//! The connection is one GET event stream: its first event, `endpoint`, names the URL messages
//! are POSTed to (usually a relative path carrying the server's session id); everything the
//! server says (answers, notifications, its own requests) comes as `message` events on that
//! stream. A send waits for the endpoint (bounded); an endpoint on another origin than the
//! stream's is refused, since the entry's headers (its credentials) would follow the POSTs
//! there. The stream ending ends the connection: the transport has no way to resume a session,
//! so the supervisor starts a new one, as it does for a dead process.

use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::cancel::{CancelFlag, Either, first_of};
use dsh_plugin_api::io::http::{HttpRequest, HttpResponse, HttpService};
use dsh_plugin_api::{Context, Service};
use tokio::sync::watch;

use crate::http::{Failures, HEAD_TIMEOUT_MS, headers, read_capped};
use crate::sse::Events;
use crate::transport::{BoxFuture, Event, Inbox, Transport, TransportError};

/// The POST endpoint as the stream named it: not yet, the URL, or why there is none.
type Endpoint = Option<Result<String, TransportError>>;

pub(crate) struct LegacySse {
    shared: Arc<Shared>,
}

struct Shared {
    ctx: Context,
    client: Service<HttpService>,
    url: String,
    headers: Vec<(String, String)>,
    inbox: Inbox,
    endpoint: watch::Sender<Endpoint>,
    /// Fired when the connection closes: the stream stops with it.
    stop: Arc<CancelFlag>,
    failures: Failures,
}

/// Opens the event stream of the server at `url` at once (the handshake's first POST waits
/// for its endpoint).
pub(crate) fn start(
    ctx: &Context,
    client: Service<HttpService>,
    url: &str,
    headers: &[(String, String)],
    inbox: Inbox,
) -> LegacySse {
    let shared = Arc::new(Shared {
        ctx: ctx.clone(),
        client,
        url: url.to_owned(),
        headers: headers.to_vec(),
        inbox,
        endpoint: watch::Sender::new(None),
        stop: CancelFlag::new(),
        failures: Failures::default(),
    });
    let listener = shared.clone();
    let stop = shared.stop.clone();
    if let Err(error) = ctx.spawn(async move {
        stop.until(listener.listen()).await;
    }) {
        shared.ended(format!("the event stream could not be started: {error}"));
    }
    LegacySse { shared }
}

/// `scheme://authority` of an http(s) URL.
fn origin(url: &str) -> Option<&str> {
    let rest_at = url.find("://")? + 3;
    let end = url[rest_at..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |at| rest_at + at);
    Some(&url[..end])
}

/// The POST URL the stream at `base` named as `endpoint`: absolute, or resolved against
/// `base` (a path from the root, or relative to its directory); another origin is refused.
fn resolve(base: &str, endpoint: &str) -> Result<String, TransportError> {
    let endpoint = endpoint.trim();
    let base_origin =
        origin(base).ok_or_else(|| TransportError(format!("`{base}` is no http(s) URL")))?;
    let resolved = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else if endpoint.starts_with("//") {
        format!(
            "{}:{endpoint}",
            &base_origin[..base_origin.find("://").unwrap_or(0)]
        )
    } else if endpoint.starts_with('/') {
        format!("{base_origin}{endpoint}")
    } else {
        let path = &base[base_origin.len()..];
        let path = path.split(['?', '#']).next().unwrap_or("");
        let directory = &path[..path.rfind('/').map_or(0, |at| at + 1)];
        let directory = if directory.is_empty() { "/" } else { directory };
        format!("{base_origin}{directory}{endpoint}")
    };
    match origin(&resolved) {
        Some(named) if named.eq_ignore_ascii_case(base_origin) => Ok(resolved),
        _ => Err(TransportError(format!(
            "the server named an endpoint on another origin (`{endpoint}`), where the entry's \
             headers would follow; refused"
        ))),
    }
}

impl Shared {
    fn request(&self, method: &str, url: &str, accept: &str, body: Vec<u8>) -> HttpRequest {
        HttpRequest {
            method: RString::from(method),
            url: RString::from(url),
            headers: RVec::from(headers(&self.headers, accept, !body.is_empty())),
            body: RVec::from(body),
            head_timeout_ms: HEAD_TIMEOUT_MS,
        }
    }

    /// The connection is over, saying `why` once; a send still waiting for the endpoint is
    /// told too.
    fn ended(&self, why: String) {
        self.endpoint.send_if_modified(|endpoint| {
            if endpoint.is_some() {
                return false;
            }
            *endpoint = Some(Err(TransportError(why.clone())));
            true
        });
        let _ = self.inbox.send(Event::Closed(why));
    }

    async fn listen(self: Arc<Self>) {
        let request = self.request("GET", &self.url, "text/event-stream", Vec::new());
        let response = match self.client.send(request).await.into_result() {
            Ok(response) => response,
            Err(error) => return self.ended(format!("GET {}: {error}", self.url)),
        };
        if !(200..300).contains(&response.status) {
            let body = read_some(&response).await;
            return self.ended(format!(
                "GET {} answered {}: {}",
                self.url,
                response.status,
                body.trim()
            ));
        }
        let mut events = Events::default();
        loop {
            let chunk = match response.body.next_chunk(0).await.into_result() {
                Ok(chunk) => chunk,
                Err(error) => return self.ended(format!("the event stream broke: {error}")),
            };
            let Some(bytes) = chunk.into_option() else {
                return self.ended("the server ended its event stream".to_owned());
            };
            for event in events.push_named(&bytes) {
                match event.name.as_deref() {
                    Some("endpoint") => match resolve(&self.url, &event.data) {
                        Ok(url) => {
                            self.endpoint.send_replace(Some(Ok(url)));
                        }
                        Err(why) => return self.ended(why.0),
                    },
                    None | Some("message") => {
                        if self.inbox.send(Event::Message(event.data)).is_err() {
                            return;
                        }
                    }
                    // Other events are not MCP's.
                    Some(_) => {}
                }
            }
        }
    }

    /// The endpoint, once the stream named it (or why it never will).
    async fn endpoint(&self) -> Result<String, TransportError> {
        let mut named = self.endpoint.subscribe();
        let waited = first_of(
            named.wait_for(Option::is_some),
            self.ctx.sleep(Duration::from_millis(HEAD_TIMEOUT_MS)),
        )
        .await;
        match waited {
            Either::Left(Ok(endpoint)) => match endpoint.as_ref() {
                Some(Ok(url)) => Ok(url.clone()),
                Some(Err(why)) => Err(why.clone()),
                None => Err(TransportError("no endpoint".to_owned())),
            },
            Either::Left(Err(_)) => Err(TransportError("the connection closed".to_owned())),
            Either::Right(()) => Err(TransportError(format!(
                "the event stream at {} named no endpoint within {} s",
                self.url,
                HEAD_TIMEOUT_MS / 1000
            ))),
        }
    }

    fn failed(&self, why: &str) {
        self.failures.failed(&self.inbox, why);
    }

    async fn post(&self, message: String) -> Result<(), TransportError> {
        let endpoint = self.endpoint().await?;
        let request = self.request(
            "POST",
            &endpoint,
            "application/json, text/event-stream",
            message.into_bytes(),
        );
        let response = match self.client.send(request).await.into_result() {
            Ok(response) => response,
            Err(error) => {
                let why = format!("POST {endpoint}: {error}");
                self.failed(&why);
                return Err(TransportError(why));
            }
        };
        let status = response.status;
        // The answer comes on the stream; the POST's own body is an acknowledgement, read to
        // its end so the connection can be reused.
        let body = read_some(&response).await;
        if (200..300).contains(&status) {
            self.failures.answered();
            return Ok(());
        }
        let why = format!("POST {endpoint} answered {status}: {}", body.trim());
        if status >= 500 {
            self.failed(&why);
        }
        Err(TransportError(why))
    }
}

/// The first bytes of a response's body (at most 4 KiB kept), read to its end or its break.
async fn read_some(response: &HttpResponse) -> String {
    read_capped(response, 4096).await.0
}

impl Transport for LegacySse {
    fn send(&self, message: String) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(self.shared.post(message))
    }

    /// The legacy transport sends no protocol version header.
    fn negotiated(&self, _version: &str) {}

    /// The stream is open from the start.
    fn ready(&self) {}

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.shared.stop.fire();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn endpoints_resolve_against_the_stream_and_stay_on_its_origin() {
        let base = "http://127.0.0.1:3001/sse";
        assert_eq!(
            resolve(base, "/message?sessionId=a1").as_deref(),
            Ok("http://127.0.0.1:3001/message?sessionId=a1")
        );
        assert_eq!(
            resolve("http://h:1/mcp/sse?x=1", "messages?s=2").as_deref(),
            Ok("http://h:1/mcp/messages?s=2")
        );
        assert_eq!(
            resolve(base, "http://127.0.0.1:3001/m").as_deref(),
            Ok("http://127.0.0.1:3001/m")
        );
        assert_eq!(resolve("http://h:1", "m").as_deref(), Ok("http://h:1/m"));
        assert!(resolve(base, "http://elsewhere:80/steal").is_err());
        assert!(resolve(base, "//elsewhere/steal").is_err());
        assert!(resolve(base, "https://127.0.0.1:3001/m").is_err());
    }
}
