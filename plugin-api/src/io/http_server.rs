//! The `http_server` service: the host listens, accepts connections and parses HTTP/1.1 on its
//! own runtime, and hands every request, whole, to a plugin's [`RequestHandler`]. A handler may
//! take a request over as a WebSocket; its frames then flow through a [`WebSocket`] object
//! while the handler's [`WebSocketSession`] runs. Provided by the host
//! (`dsh-host/http-server`, hyper and tungstenite on the host runtime).
//!
//! Everything about what is served (routes, authentication, headers) is the handler's: the
//! host only frames requests, completes the WebSocket handshake and answers ping frames.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;

use crate::SeamError;

pub use crate::io::http::HttpHeader;

/// The service key.
pub const HTTP_SERVER_SERVICE: &str = "http_server";

/// Where to listen.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ListenOptions {
    /// An IP address or `localhost`.
    pub host: RString,
    /// 0: any free port.
    pub port: u16,
    /// How many of the ports after `port` to try, in order, while the one tried is taken.
    pub next_ports: u16,
    /// Largest request body accepted (larger ones are answered 413 without the handler).
    pub max_body_bytes: u64,
}

/// One request, its body read whole.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct ServerRequest {
    pub method: RString,
    /// The request target as sent: path and query (`/api/session.list?x=1`).
    pub target: RString,
    /// Names lower-cased, in arrival order.
    pub headers: RVec<HttpHeader>,
    pub body: RVec<u8>,
    /// The peer's address (`127.0.0.1:53122`).
    pub peer: RString,
    /// The address the connection came in on (`127.0.0.1:3080`).
    pub local: RString,
    /// Whether the request asks for a WebSocket (a GET with `Upgrade: websocket` and a key).
    pub websocket: bool,
}

impl ServerRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|header| header.name.eq_ignore_ascii_case(name))
            .map(|header| header.value.as_str())
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target
            .split_once('?')
            .map_or(self.target.as_str(), |(path, _)| path)
    }

    /// The query, without the `?` (empty when there is none).
    pub fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, query)| query)
    }
}

/// The answer to a request: a whole response, or (for a request with `websocket` set) the
/// session that takes the connection over, in which case the host answers 101 with the
/// handshake and `headers` added.
#[repr(C)]
#[derive(StableAbi)]
pub struct ServerResponse {
    pub status: u16,
    pub headers: RVec<HttpHeader>,
    pub body: RVec<u8>,
    pub websocket: ROption<WebSocketSessionBox>,
}

impl ServerResponse {
    /// A response with a body of `content_type`.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: RVec::from(vec![HttpHeader {
                name: RString::from("content-type"),
                value: RString::from(content_type),
            }]),
            body: RVec::from(body.into()),
            websocket: ROption::RNone,
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push(HttpHeader {
            name: RString::from(name),
            value: RString::from(value),
        });
        self
    }

    /// Takes the connection over as a WebSocket run by `session`.
    pub fn websocket(session: WebSocketSessionBox) -> Self {
        Self {
            status: 101,
            headers: RVec::new(),
            body: RVec::new(),
            websocket: ROption::RSome(session),
        }
    }
}

/// A plugin's request handler. A future dropped (the client went away) is cancelled.
#[sabi_trait]
pub trait RequestHandler: Send + Sync {
    fn handle(&self, request: ServerRequest) -> FfiFuture<ServerResponse>;
}
pub type RequestHandlerBox = RequestHandler_TO<'static, RBox<()>>;

/// One WebSocket frame as the plugin sees it (pings and pongs are the host's).
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub enum WsMessage {
    Text(RString),
    Binary(RVec<u8>),
}

/// An open WebSocket. `send` and `recv` may run at the same time (one sender and one reader
/// at a time each).
#[sabi_trait]
pub trait WebSocket: Send + Sync {
    /// Sends one frame; `false` once the connection is gone.
    fn send(&self, message: WsMessage) -> FfiFuture<bool>;
    /// The client's next frame; `RNone` once the connection closed.
    fn recv(&self) -> FfiFuture<ROption<WsMessage>>;
    /// Closes the connection with a close frame of `code` and `reason`.
    fn close(&self, code: u16, reason: RString) -> FfiFuture<()>;
}
pub type WebSocketBox = WebSocket_TO<'static, RBox<()>>;

/// What runs a taken-over connection. The connection ends when `run`'s future does.
#[sabi_trait]
pub trait WebSocketSession: Send + Sync {
    fn run(&self, socket: WebSocketBox) -> FfiFuture<()>;
}
pub type WebSocketSessionBox = WebSocketSession_TO<'static, RBox<()>>;

/// A listening server. Dropping it stops accepting and ends the open connections.
#[sabi_trait]
pub trait Listening: Send + Sync {
    /// The address it listens on (`127.0.0.1:3080`).
    fn address(&self) -> RString;
}
pub type ListeningBox = Listening_TO<'static, RBox<()>>;

/// The server.
#[sabi_trait]
pub trait HttpServer: Send + Sync {
    /// Binds as `options` say and serves every request with `handler`; the error names the
    /// address and why it could not be bound (`Conflict`: every port tried is taken;
    /// `Failed`: the system refused otherwise).
    fn listen(
        &self,
        options: ListenOptions,
        handler: RequestHandlerBox,
    ) -> FfiFuture<RResult<ListeningBox, SeamError>>;
}

/// The value registered under [`HTTP_SERVER_SERVICE`].
pub type HttpServerService = HttpServer_TO<'static, RBox<()>>;
