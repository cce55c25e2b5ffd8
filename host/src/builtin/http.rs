//! `dsh-host/http`: the `http` service, reqwest on the host runtime. Redirects are not followed:
//! a 3xx comes back to the caller as it is. A pinned request (`send_pinned`) goes through a
//! client of its own whose only answer for the URL's host is the caller's addresses, so it
//! never asks DNS.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::http::{
    HTTP_SERVICE, HttpBody, HttpBody_TO, HttpClient, HttpClient_TO, HttpError, HttpErrorKind,
    HttpHeader, HttpRequest, HttpResponse,
};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError};

pub(crate) struct HttpPlugin;

impl Plugin for HttpPlugin {
    const NAME: &'static str = "http";
    const PROVIDES: &'static [&'static str] = &[HTTP_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let client = Client {
            client: prewarm().clone(),
        };
        ctx.provide(HTTP_SERVICE, HttpClient_TO::from_value(client, TD_Opaque))
    }
}

/// The client as its builder thread left it: `None` while it is being built.
type Built = tokio::sync::watch::Receiver<Option<Result<reqwest::Client, reqwest::Error>>>;

/// Starts building the one HTTP client on a thread of its own, once; the host calls it when a
/// tree it mounts names the `http` row, before the rows start, so the build overlaps the
/// loading of the plugin libraries. (It shares the two cores with the loading thread and the
/// rows starting; a second client for plain `http://` URLs that skips the trust store was
/// tried and moved the first request by nothing measurable.)
/// Building reads and parses the system trust store (some 150 PEM files, twice on Debian: the
/// bundle and the directory).
pub fn prewarm() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let (ready, built) = tokio::sync::watch::channel(None);
        let builder = std::thread::Builder::new().name("http-client".into());
        let spawned = builder.spawn(move || {
            let _ = ready.send(Some(build_client()));
        });
        if let Err(problem) = spawned {
            // No thread: the receiver's sender is gone, and every request says so.
            tracing::error!("cannot start building the HTTP client: {problem}");
        }
        built
    })
}

/// The one client every request goes through.
fn build_client() -> Result<reqwest::Client, reqwest::Error> {
    client_builder().build()
}

fn client_builder() -> reqwest::ClientBuilder {
    // Redirects go back to the caller, which follows them if it wants: `web_fetch` judges
    // every hop's destination, which a client following them on its own would skip.
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none())
}

/// A client that reaches `url`'s host at `addresses` only. Built per request (it reads the
/// trust store again, some milliseconds): pinned requests are a page fetch, not a hot path.
fn pinned_client(url: &str, addresses: &[RString]) -> Result<reqwest::Client, HttpError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|problem| error(HttpErrorKind::InvalidRequest, format!("`{url}`: {problem}")))?;
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Err(error(
            HttpErrorKind::InvalidRequest,
            format!("`{url}` names no host to pin"),
        ));
    };
    let targets = addresses
        .iter()
        .map(|address| {
            address
                .parse::<std::net::IpAddr>()
                .map(|ip| std::net::SocketAddr::new(ip, port))
                .map_err(|_| {
                    error(
                        HttpErrorKind::InvalidRequest,
                        format!("pinned address `{address}` is not an IP address"),
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if targets.is_empty() {
        return Err(error(
            HttpErrorKind::InvalidRequest,
            format!("no address to pin `{host}` to"),
        ));
    }
    client_builder()
        .resolve_to_addrs(host, &targets)
        .build()
        .map_err(|problem| transport(&problem))
}

struct Client {
    client: Built,
}

impl Client {
    /// The client, once built.
    async fn ready(mut built: Built) -> Result<reqwest::Client, HttpError> {
        let built = built.wait_for(Option::is_some).await;
        match built.as_deref() {
            Ok(Some(Ok(client))) => Ok(client.clone()),
            Ok(Some(Err(problem))) => Err(error(
                HttpErrorKind::Transport,
                format!("cannot build the HTTP client: {problem}"),
            )),
            Ok(None) | Err(_) => Err(error(
                HttpErrorKind::Transport,
                "the HTTP client was not built (its builder thread stopped)",
            )),
        }
    }
}

fn error(kind: HttpErrorKind, message: impl std::fmt::Display) -> HttpError {
    HttpError {
        kind,
        message: RString::from(message.to_string()),
    }
}

fn transport(source: &reqwest::Error) -> HttpError {
    let kind = if source.is_timeout() {
        HttpErrorKind::Timeout
    } else {
        HttpErrorKind::Transport
    };
    // reqwest's Display hides the cause (connection refused, reset...): include the chain.
    let mut message = source.to_string();
    let mut cause = std::error::Error::source(source);
    while let Some(inner) = cause {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        cause = inner.source();
    }
    error(kind, message)
}

impl HttpClient for Client {
    fn send(&self, request: HttpRequest) -> FfiFuture<RResult<HttpResponse, HttpError>> {
        let client = self.client.clone();
        async move {
            match Client::ready(client).await {
                Ok(client) => exchange(client, request).await,
                Err(problem) => RErr(problem),
            }
        }
        .into_ffi()
    }

    fn send_pinned(
        &self,
        request: HttpRequest,
        addresses: RVec<RString>,
    ) -> FfiFuture<RResult<HttpResponse, HttpError>> {
        async move {
            match pinned_client(request.url.as_str(), &addresses) {
                Ok(client) => exchange(client, request).await,
                Err(problem) => RErr(problem),
            }
        }
        .into_ffi()
    }
}

/// One request through `client`, up to the response head.
async fn exchange(
    client: reqwest::Client,
    request: HttpRequest,
) -> RResult<HttpResponse, HttpError> {
    let method = match reqwest::Method::from_bytes(request.method.as_bytes()) {
        Ok(method) => method,
        Err(problem) => return RErr(error(HttpErrorKind::InvalidRequest, problem)),
    };
    let mut builder = client
        .request(method, request.url.as_str())
        .body(request.body.into_vec());
    for header in request.headers.iter() {
        builder = builder.header(header.name.as_str(), header.value.as_str());
    }
    let sending = builder.send();
    let response = if request.head_timeout_ms > 0 {
        match tokio::time::timeout(Duration::from_millis(request.head_timeout_ms), sending).await {
            Ok(result) => result,
            Err(_) => {
                return RErr(error(
                    HttpErrorKind::Timeout,
                    "no response head within the timeout",
                ));
            }
        }
    } else {
        sending.await
    };
    let response = match response {
        Ok(response) => response,
        Err(problem) if problem.is_builder() => {
            return RErr(error(HttpErrorKind::InvalidRequest, problem));
        }
        Err(problem) => return RErr(transport(&problem)),
    };
    let headers: RVec<HttpHeader> = response
        .headers()
        .iter()
        .map(|(name, value)| HttpHeader {
            name: RString::from(name.as_str()),
            value: RString::from(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        })
        .collect();
    ROk(HttpResponse {
        status: response.status().as_u16(),
        headers,
        body: HttpBody_TO::from_value(
            Body {
                response: Arc::new(tokio::sync::Mutex::new(response)),
            },
            TD_Opaque,
        ),
    })
}

struct Body {
    response: Arc<tokio::sync::Mutex<reqwest::Response>>,
}

impl HttpBody for Body {
    fn next_chunk(&self, idle_timeout_ms: u64) -> FfiFuture<RResult<ROption<RVec<u8>>, HttpError>> {
        let response = self.response.clone();
        async move {
            let mut response = response.lock().await;
            let reading = response.chunk();
            let chunk = if idle_timeout_ms > 0 {
                match tokio::time::timeout(Duration::from_millis(idle_timeout_ms), reading).await {
                    Ok(result) => result,
                    Err(_) => {
                        return RErr(error(
                            HttpErrorKind::Timeout,
                            format!("no data for {idle_timeout_ms} ms"),
                        ));
                    }
                }
            } else {
                reading.await
            };
            match chunk {
                Ok(Some(bytes)) => ROk(RSome(RVec::from(bytes.to_vec()))),
                Ok(None) => ROk(RNone),
                Err(problem) => RErr(transport(&problem)),
            }
        }
        .into_ffi()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::io::{Read, Write};

    use super::*;

    fn get(url: &str) -> HttpRequest {
        HttpRequest {
            method: "GET".into(),
            url: url.into(),
            headers: RVec::new(),
            body: RVec::new(),
            head_timeout_ms: 10_000,
        }
    }

    /// One exchange on loopback: answers `ok`, and hands back the request head it read.
    fn one_answer() -> (u16, std::thread::JoinHandle<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut head = [0u8; 4096];
            let read = stream.read(&mut head).unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                .unwrap();
            String::from_utf8_lossy(&head[..read]).into_owned()
        });
        (port, served)
    }

    #[test]
    fn a_pinned_request_reaches_the_given_address_and_never_asks_dns() {
        crate::builtin::init_tls();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = Client {
            client: prewarm().clone(),
        };
        // `.invalid` names resolve nowhere: only the pin can lead this request anywhere.
        let (port, served) = one_answer();
        let url = format!("http://pinned.invalid:{port}/page");
        let pinned = RVec::from(vec![RString::from("127.0.0.1")]);
        let response = runtime
            .block_on(client.send_pinned(get(&url), pinned))
            .unwrap();
        assert_eq!(response.status, 200);
        let head = served.join().unwrap().to_ascii_lowercase();
        assert!(
            head.contains(&format!("host: pinned.invalid:{port}")),
            "{head}"
        );
        // An address that does not read is refused before anything is sent.
        let bad = RVec::from(vec![RString::from("not-an-ip")]);
        match runtime.block_on(client.send_pinned(get(&url), bad)) {
            RErr(problem) => {
                assert_eq!(problem.kind, HttpErrorKind::InvalidRequest);
                assert!(
                    problem.message.contains("`not-an-ip`"),
                    "{}",
                    problem.message
                );
            }
            ROk(response) => panic!("sent anyway: {}", response.status),
        }
    }
}
