//! One JSON-RPC connection over a transport: requests matched to their answers by id, the
//! server's own requests answered (`ping`, `roots/list`; anything else is "method not found"),
//! and its notifications handed to whoever supervises the server. When the transport closes,
//! every request still waiting fails with the reason, and the notification stream ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::cancel::{CancelFlag, Either, first_of};
use dsh_plugin_api::serde::de::DeserializeOwned;
use dsh_plugin_api::{Context, Serialize, lock};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{
    Cancelled, Empty, Id, Incoming, METHOD_NOT_FOUND, Outgoing, Reply, Root, Roots, RpcError,
};
use crate::transport::{Event, Transport};

/// Why a request got no result.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CallError {
    /// The server answered with an error.
    #[error("the server answered an error: {0}")]
    Rpc(RpcError),
    /// The connection is gone (or never worked).
    #[error("{0}")]
    Closed(String),
    /// The answer did not read as the expected result.
    #[error("the server's answer does not read: {0}")]
    Malformed(String),
    #[error("cancelled")]
    Cancelled,
}

type Waiter = oneshot::Sender<Result<Value, CallError>>;

/// A list the server says changed (its `notifications/*/list_changed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Changed {
    Tools,
    Resources,
    Prompts,
}

pub(crate) struct Connection {
    transport: Box<dyn Transport>,
    pending: Mutex<HashMap<i64, Waiter>>,
    next: AtomicI64,
    /// Why it closed, once it did.
    closed: Mutex<Option<String>>,
    closing: Arc<CancelFlag>,
}

impl Connection {
    /// A connection over `transport`; `run` must be spawned on the events for it to work.
    pub(crate) fn new(transport: Box<dyn Transport>) -> Arc<Self> {
        Arc::new(Self {
            transport,
            pending: Mutex::default(),
            next: AtomicI64::new(1),
            closed: Mutex::default(),
            closing: CancelFlag::new(),
        })
    }

    pub(crate) fn transport(&self) -> &dyn Transport {
        self.transport.as_ref()
    }

    /// Why the connection closed, if it did.
    pub(crate) fn closed(&self) -> Option<String> {
        lock(&self.closed).clone()
    }

    /// Sends `method` and waits for its result, or until `cancel` fires (the server is then
    /// told, with `notifications/cancelled`).
    pub(crate) async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
        cancel: impl Future<Output = ()> + Send,
    ) -> Result<R, CallError> {
        if let Some(why) = self.closed() {
            return Err(CallError::Closed(why));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        lock(&self.pending).insert(id, sender);
        let message = encode(&Outgoing {
            jsonrpc: "2.0",
            id: Some(Id::Number(id)),
            method,
            params: Some(params),
        })?;
        let exchange = async {
            self.transport
                .send(message)
                .await
                .map_err(|error| CallError::Closed(error.0))?;
            receiver
                .await
                .unwrap_or_else(|_| Err(CallError::Closed("the connection ended".to_owned())))
        };
        let value = match first_of(exchange, cancel).await {
            Either::Left(result) => result,
            Either::Right(()) => {
                lock(&self.pending).remove(&id);
                let notice = Cancelled {
                    request_id: Id::Number(id),
                    reason: "the caller cancelled the tool call",
                };
                let _ = self.notify("notifications/cancelled", notice).await;
                return Err(CallError::Cancelled);
            }
        };
        lock(&self.pending).remove(&id);
        serde_json::from_value(value?).map_err(|error| CallError::Malformed(error.to_string()))
    }

    /// Sends a notification.
    pub(crate) async fn notify<P: Serialize>(
        &self,
        method: &str,
        params: P,
    ) -> Result<(), CallError> {
        let message = encode(&Outgoing {
            jsonrpc: "2.0",
            id: None,
            method,
            params: Some(params),
        })?;
        self.transport
            .send(message)
            .await
            .map_err(|error| CallError::Closed(error.0))
    }

    /// Ends the connection (the transport is closed; `run` then sees its end).
    pub(crate) async fn close(&self) {
        self.closing.fire();
        self.transport.close().await;
        self.shut("the connection was closed".to_owned());
    }

    fn shut(&self, why: String) {
        lock(&self.closed).get_or_insert(why.clone());
        let waiters: Vec<Waiter> = lock(&self.pending)
            .drain()
            .map(|(_, waiter)| waiter)
            .collect();
        for waiter in waiters {
            let _ = waiter.send(Err(CallError::Closed(why.clone())));
        }
    }

    fn settle(&self, id: &Id, result: Result<Value, CallError>) {
        let Id::Number(number) = id else { return };
        if let Some(waiter) = lock(&self.pending).remove(number) {
            let _ = waiter.send(result);
        }
    }
}

fn encode<T: Serialize>(message: &T) -> Result<String, CallError> {
    serde_json::to_string(message).map_err(|error| CallError::Malformed(error.to_string()))
}

/// What the server may ask of this client.
pub(crate) struct Answers {
    /// The workspace, as the one root (`None`: roots were not offered).
    pub(crate) root: Option<Root>,
}

/// Reads the inbox until the transport closes: answers settle their requests, the server's
/// requests are answered, notifications go to `notes`. Ends (dropping `notes`) when the
/// connection closed.
pub(crate) async fn run(
    ctx: Context,
    connection: Arc<Connection>,
    mut events: mpsc::UnboundedReceiver<Event>,
    notes: mpsc::UnboundedSender<Changed>,
    answers: Answers,
) {
    let why = loop {
        let event = match first_of(events.recv(), connection.closing.wait()).await {
            Either::Left(Some(event)) => event,
            Either::Left(None) => break "the transport ended".to_owned(),
            Either::Right(()) => break "the connection was closed".to_owned(),
        };
        let text = match event {
            Event::Message(text) => text,
            Event::Closed(why) => break why,
        };
        let messages = messages(&text);
        if messages.is_empty() {
            ctx.log(
                dsh_plugin_api::LogLevel::Debug,
                &format!("mcp: a message that does not read was ignored: {text}"),
            );
        }
        for message in messages {
            handle(&connection, message, &notes, &answers).await;
        }
    };
    connection.shut(why);
}

/// The messages of one transport message: a batch is a JSON array of them; none when it does
/// not read.
pub(crate) fn messages(text: &str) -> Vec<Incoming> {
    match text.trim_start().starts_with('[') {
        true => serde_json::from_str(text).unwrap_or_default(),
        false => serde_json::from_str(text)
            .map(|one| vec![one])
            .unwrap_or_default(),
    }
}

async fn handle(
    connection: &Connection,
    message: Incoming,
    notes: &mpsc::UnboundedSender<Changed>,
    answers: &Answers,
) {
    match (message.id, message.method) {
        (Some(id), None) => {
            let result = match (message.result, message.error) {
                (_, Some(error)) => Err(CallError::Rpc(error)),
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            connection.settle(&id, result);
        }
        (Some(id), Some(method)) => {
            let reply = match method.as_str() {
                "ping" => encode(&Reply {
                    jsonrpc: "2.0",
                    id,
                    result: Some(Empty {}),
                    error: None,
                }),
                "roots/list" if answers.root.is_some() => encode(&Reply {
                    jsonrpc: "2.0",
                    id,
                    result: Some(Roots {
                        roots: answers.root.iter().map(Root::clone_of).collect(),
                    }),
                    error: None,
                }),
                other => encode(&Reply::<Empty> {
                    jsonrpc: "2.0",
                    id,
                    result: None,
                    error: Some(RpcError {
                        code: METHOD_NOT_FOUND,
                        message: format!("this client does not offer `{other}`"),
                        data: None,
                    }),
                }),
            };
            if let Ok(reply) = reply {
                let _ = connection.transport.send(reply).await;
            }
        }
        (None, Some(method)) => {
            let note = match method.as_str() {
                "notifications/tools/list_changed" => Some(Changed::Tools),
                "notifications/resources/list_changed" => Some(Changed::Resources),
                "notifications/prompts/list_changed" => Some(Changed::Prompts),
                _ => None,
            };
            if let Some(note) = note {
                let _ = notes.send(note);
            }
        }
        (None, None) => {}
    }
}

impl Root {
    fn clone_of(&self) -> Self {
        Self {
            uri: self.uri.clone(),
            name: self.name.clone(),
        }
    }
}
