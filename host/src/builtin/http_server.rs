//! `dsh-host/http-server`: the `http_server` service. hyper serves HTTP/1.1 on the host runtime,
//! one task per connection; a request is read whole (up to the listener's body limit) and
//! answered by the plugin's handler; a WebSocket is taken over with hyper's upgrade and framed by
//! tungstenite. Dropping the listening handle stops the accept loop and every connection it
//! made, WebSockets included, so a web plugin that unloads leaves no socket behind.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::io::http_server::{
    HTTP_SERVER_SERVICE, HttpHeader, HttpServer, HttpServer_TO, ListenOptions, Listening,
    Listening_TO, ListeningBox, RequestHandlerBox, ServerRequest, WebSocket, WebSocket_TO,
    WebSocketSessionBox, WsMessage,
};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError, SeamError, SeamErrorKind};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};

pub(crate) struct HttpServerPlugin;

impl Plugin for HttpServerPlugin {
    const NAME: &'static str = "http-server";
    const PROVIDES: &'static [&'static str] = &[HTTP_SERVER_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.provide(
            HTTP_SERVER_SERVICE,
            HttpServer_TO::from_value(Server, TD_Opaque),
        )
    }
}

struct Server;

impl HttpServer for Server {
    fn listen(
        &self,
        options: ListenOptions,
        handler: RequestHandlerBox,
    ) -> FfiFuture<RResult<ListeningBox, SeamError>> {
        async move {
            let (listener, address) = match bind(&options).await {
                Ok(bound) => bound,
                Err(error) => {
                    let kind = match error {
                        BindError::Taken { .. } | BindError::AllTaken { .. } => {
                            SeamErrorKind::Conflict
                        }
                        BindError::Os { .. } | BindError::NoPort { .. } => SeamErrorKind::Failed,
                    };
                    return RErr(SeamError::new(kind, error.to_string()));
                }
            };
            let (stop, stopped) = watch::channel(false);
            let serving = Serving {
                handler: Arc::new(handler),
                max_body: options.max_body_bytes,
                stopped,
            };
            let task = tokio::spawn(serving.accept(listener));
            ROk(Listening_TO::from_value(
                Bound {
                    address: address.to_string(),
                    stop,
                    task,
                },
                TD_Opaque,
            ))
        }
        .into_ffi()
    }
}

/// Why no port could be bound.
#[derive(Debug, thiserror::Error)]
enum BindError {
    #[error("cannot listen on {host}:{port}: the port is taken")]
    Taken { host: String, port: u16 },
    #[error("cannot listen on {host}: ports {first} to {last} are all taken")]
    AllTaken { host: String, first: u16, last: u16 },
    #[error("cannot listen on {host}:{port}: {error}")]
    Os {
        host: String,
        port: u16,
        error: std::io::Error,
    },
    #[error("cannot listen on {host}: no port to try")]
    NoPort { host: String },
}

/// Binds the first free port of `port ..= port + next_ports`.
async fn bind(options: &ListenOptions) -> Result<(TcpListener, SocketAddr), BindError> {
    let host = options.host.as_str();
    let last = options.port.saturating_add(options.next_ports);
    let os = |port: u16, error: std::io::Error| BindError::Os {
        host: host.to_owned(),
        port,
        error,
    };
    for port in options.port..=last {
        match TcpListener::bind((host, port)).await {
            Ok(listener) => {
                let address = listener.local_addr().map_err(|error| os(port, error))?;
                return Ok((listener, address));
            }
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse && port < last => {}
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                return Err(match options.port == last {
                    true => BindError::Taken {
                        host: host.to_owned(),
                        port,
                    },
                    false => BindError::AllTaken {
                        host: host.to_owned(),
                        first: options.port,
                        last,
                    },
                });
            }
            Err(error) => return Err(os(port, error)),
        }
    }
    Err(BindError::NoPort {
        host: host.to_owned(),
    })
}

/// The handle the plugin holds: dropping it stops everything the listener started.
struct Bound {
    address: String,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Bound {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

impl Listening for Bound {
    fn address(&self) -> RString {
        RString::from(self.address.as_str())
    }
}

#[derive(Clone)]
struct Serving {
    handler: Arc<RequestHandlerBox>,
    max_body: u64,
    stopped: watch::Receiver<bool>,
}

impl Serving {
    async fn accept(self, listener: TcpListener) {
        let mut stopped = self.stopped.clone();
        loop {
            let accepted = tokio::select! {
                _ = stopped.changed() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, peer)) = accepted else {
                // A failed accept (the peer left, a descriptor limit) concerns that connection
                // only; the next one is tried after a breath, so a hard limit cannot spin.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            };
            // Each response is written whole: waiting to coalesce it with more (Nagle) only
            // meets the client's delayed ACK, tens of milliseconds per request on loopback.
            let _ = stream.set_nodelay(true);
            let local = stream.local_addr().map(|address| address.to_string());
            let serving = self.clone();
            tokio::spawn(async move {
                let local = local.unwrap_or_default();
                let mut stopped = serving.stopped.clone();
                let service = hyper::service::service_fn(move |request| {
                    let (serving, local) = (serving.clone(), local.clone());
                    async move { Ok::<_, Infallible>(serving.respond(request, peer, local).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades();
                tokio::select! {
                    _ = connection => {}
                    _ = stopped.changed() => {}
                }
            });
        }
    }

    async fn respond(
        &self,
        mut request: Request<Incoming>,
        peer: SocketAddr,
        local: String,
    ) -> Response<Full<Bytes>> {
        let key = websocket_key(&request);
        let upgrade = key.as_ref().map(|_| hyper::upgrade::on(&mut request));
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, usize::try_from(self.max_body).unwrap_or(usize::MAX))
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(_) => return plain(413, "request body too large or cut off"),
        };
        let headers = parts
            .headers
            .iter()
            .map(|(name, value)| HttpHeader {
                name: RString::from(name.as_str()),
                value: RString::from(String::from_utf8_lossy(value.as_bytes()).into_owned()),
            })
            .collect();
        let served = ServerRequest {
            method: RString::from(parts.method.as_str()),
            target: RString::from(
                parts
                    .uri
                    .path_and_query()
                    .map_or("/", |target| target.as_str()),
            ),
            headers,
            body: RVec::from(body.to_vec()),
            peer: RString::from(peer.to_string()),
            local: RString::from(local),
            websocket: key.is_some(),
        };
        let answer = self.handler.handle(served).await;
        match (answer.websocket, key, upgrade) {
            (RSome(session), Some(key), Some(upgrade)) => {
                let mut response = Response::builder()
                    .status(101)
                    .header("upgrade", "websocket")
                    .header("connection", "Upgrade")
                    .header(
                        "sec-websocket-accept",
                        tokio_tungstenite::tungstenite::handshake::derive_accept_key(
                            key.as_bytes(),
                        ),
                    );
                for header in answer.headers.iter() {
                    response = response.header(header.name.as_str(), header.value.as_str());
                }
                let stopped = self.stopped.clone();
                tokio::spawn(run_websocket(upgrade, session, stopped));
                response
                    .body(Full::new(Bytes::new()))
                    .unwrap_or_else(|_| plain(500, "a header the handler set is invalid"))
            }
            (RSome(_), _, _) => plain(500, "the handler took a plain request as a WebSocket"),
            (RNone, _, _) => {
                let mut response = Response::builder().status(answer.status);
                for header in answer.headers.iter() {
                    response = response.header(header.name.as_str(), header.value.as_str());
                }
                response
                    .body(Full::new(Bytes::from(answer.body.into_vec())))
                    .unwrap_or_else(|_| plain(500, "a status or header the handler set is invalid"))
            }
        }
    }
}

/// The `Sec-WebSocket-Key` of a request that asks for a WebSocket.
fn websocket_key(request: &Request<Incoming>) -> Option<String> {
    let headers = request.headers();
    let has = |name: &str, token: &str| {
        headers.get_all(name).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value
                    .split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    let asks = request.method() == hyper::Method::GET
        && has("upgrade", "websocket")
        && has("connection", "upgrade")
        && has("sec-websocket-version", "13");
    asks.then(|| {
        headers
            .get("sec-websocket-key")?
            .to_str()
            .ok()
            .map(str::to_owned)
    })
    .flatten()
}

fn plain(status: u16, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response
}

type Stream = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// What a socket starts its read buffer with. The library's default (128 KiB, allocated at
/// once) is sized for sockets that read a lot; a page's socket reads a few small frames (a
/// subscription, an answer) and is written to, so every open tab paid some 130 KiB of host
/// memory for a buffer it barely used. The buffer still grows to whatever a frame needs.
const READ_BUFFER: usize = 4 * 1024;

async fn run_websocket(
    upgrade: hyper::upgrade::OnUpgrade,
    session: WebSocketSessionBox,
    mut stopped: watch::Receiver<bool>,
) {
    let Ok(upgraded) = upgrade.await else {
        return;
    };
    let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER);
    let stream =
        WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
    let (sink, frames) = stream.split();
    let socket = Socket {
        sink: Arc::new(Mutex::new(sink)),
        frames: Arc::new(Mutex::new(frames)),
    };
    let sink = socket.sink.clone();
    tokio::select! {
        () = session.run(WebSocket_TO::from_value(socket, TD_Opaque)) => {}
        _ = stopped.changed() => {
            let close = CloseFrame { code: 1001u16.into(), reason: "server stopping".into() };
            let _ = sink.lock().await.send(Message::Close(Some(close))).await;
        }
    }
}

struct Socket {
    sink: Arc<Mutex<SplitSink<Stream, Message>>>,
    frames: Arc<Mutex<SplitStream<Stream>>>,
}

impl WebSocket for Socket {
    fn send(&self, message: WsMessage) -> FfiFuture<bool> {
        let sink = self.sink.clone();
        async move {
            let message = match message {
                WsMessage::Text(text) => Message::text(text.into_string()),
                WsMessage::Binary(bytes) => Message::binary(bytes.into_vec()),
            };
            sink.lock().await.send(message).await.is_ok()
        }
        .into_ffi()
    }

    fn recv(&self) -> FfiFuture<ROption<WsMessage>> {
        let frames = self.frames.clone();
        async move {
            let mut frames = frames.lock().await;
            loop {
                // Pings are answered by tungstenite itself; pongs and raw frames are not the
                // plugin's business.
                match frames.next().await {
                    Some(Ok(Message::Text(text))) => {
                        return RSome(WsMessage::Text(RString::from(text.as_str())));
                    }
                    Some(Ok(Message::Binary(bytes))) => {
                        return RSome(WsMessage::Binary(RVec::from(bytes.to_vec())));
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return RNone,
                }
            }
        }
        .into_ffi()
    }

    fn close(&self, code: u16, reason: RString) -> FfiFuture<()> {
        let sink = self.sink.clone();
        async move {
            let frame = CloseFrame {
                code: code.into(),
                reason: reason.as_str().to_owned().into(),
            };
            let mut sink = sink.lock().await;
            let _ = sink.send(Message::Close(Some(frame))).await;
            let _ = sink.close().await;
        }
        .into_ffi()
    }
}
