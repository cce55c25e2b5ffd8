//! What a connection needs of a transport: send one message, close. Whatever a server sends
//! (answers, notifications, its own requests) arrives in the connection's inbox as raw JSON
//! text, in order, and a closed transport says why, once.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What arrives from a server.
#[derive(Debug)]
pub(crate) enum Event {
    /// One JSON-RPC message (or batch), as text.
    Message(String),
    /// The transport ended, and why (the process exited, the session expired).
    Closed(String),
}

pub(crate) type Inbox = mpsc::UnboundedSender<Event>;

/// Why a message could not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TransportError(pub(crate) String);

pub(crate) trait Transport: Send + Sync {
    /// Sends one message. Over HTTP the answer comes in the reply, which goes to the inbox
    /// before this resolves.
    fn send(&self, message: String) -> BoxFuture<'_, Result<(), TransportError>>;
    /// The revision the handshake settled on (HTTP sends it with every later request).
    fn negotiated(&self, version: &str);
    /// The handshake is over: the server may now speak unprompted (HTTP opens its stream).
    fn ready(&self);
    /// Ends the connection: stdin closed and the process terminated, or the session deleted.
    fn close(&self) -> BoxFuture<'_, ()>;
}
