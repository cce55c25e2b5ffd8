//! The client protocol on the SDK runtime's stdio: every method the runtime does not own (the
//! reference's three) goes to a connection of the `clients` service opened for this runtime,
//! so one stdio client lists sessions, follows them, answers approvals and changes settings as
//! the page does. The frames it follows after `session.subscribe` come out as `frame`
//! notifications beside the reference's `session.event` ones, queued to a writer of their own
//! so a slow reader of stdout never holds the service up (its queue full, the service tells it
//! to resynchronize).
//!
//! `initialize` with a `protocolVersion` is the client protocol's handshake too: without
//! `provider` it is only that; with one, the runtime's own answer carries the handshake's
//! fields beside `serverInfo`.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use dsh_clients_seam::{
    CLIENTS_SERVICE, ClientsService, ConnectOptions, ConnectionBox, FrameSink, FrameSink_TO,
};
use dsh_json_rpc::wire::{METHOD_NOT_FOUND, Out, RpcError};
use dsh_plugin_api::{Context, Json, lock};
use serde_json::{Value, json};

/// Frames queued for stdout before the client counts as not reading.
const QUEUE: usize = 4096;

/// The fields of `initialize` that say a client speaks the client protocol.
#[derive(dsh_plugin_api::serde::Deserialize, Default)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase", default)]
pub(crate) struct Handshake {
    pub(crate) protocol_version: Option<u64>,
    pub(crate) provider: Option<Value>,
}

impl Handshake {
    /// Read from params that are an object (serde would read a struct from an array too).
    pub(crate) fn of(params: &Value) -> Self {
        match params {
            Value::Object(_) => serde_json::from_value(params.clone()).unwrap_or_default(),
            _ => Self::default(),
        }
    }
}

/// The runtime's connection to the `clients` service, opened at first use.
#[derive(Default)]
pub(crate) struct Door {
    connection: Mutex<Option<Arc<ConnectionBox>>>,
}

struct Frames(SyncSender<String>);

impl FrameSink for Frames {
    fn send(&self, frame: RString) -> bool {
        self.0
            .try_send(dsh_json_rpc::frame_notification(&frame))
            .is_ok()
    }
}

impl Door {
    /// The connection, opened on first use; `None` without a `clients` row.
    fn connection(&self, ctx: &Context, out: &Arc<Out>) -> Option<Arc<ConnectionBox>> {
        let mut slot = lock(&self.connection);
        if let Some(connection) = slot.as_ref() {
            return Some(connection.clone());
        }
        let clients = ctx.get::<ClientsService>(CLIENTS_SERVICE).ok().flatten()?;
        let (sender, receiver) = sync_channel(QUEUE);
        spawn_writer(ctx, out.clone(), receiver);
        let options = ConnectOptions {
            transport: "sdk".to_owned(),
            profile: "sdk".to_owned(),
            settings_writable: true,
            ..ConnectOptions::default()
        };
        let connection = Arc::new(clients.connect(
            Json::encode(&options),
            FrameSink_TO::from_value(Frames(sender), TD_Opaque),
        ));
        *slot = Some(connection.clone());
        Some(connection)
    }

    /// Runs `method` of the client protocol; `-32601` naming it, in the runtime's own words,
    /// for a method of neither protocol or without a `clients` row.
    pub(crate) async fn call(
        &self,
        ctx: &Context,
        out: &Arc<Out>,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        let known = dsh_client_protocol::METHODS.contains(&method);
        let connection = known.then(|| self.connection(ctx, out)).flatten();
        let Some(connection) = connection else {
            return Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("unknown DeepSeek Harness SDK runtime method: {method}"),
            )
            .with_data(json!({"method": method})));
        };
        dsh_json_rpc::call(&connection, method, params).await
    }
}

/// Writes the queued frames to stdout until the connection is gone.
fn spawn_writer(ctx: &Context, out: Arc<Out>, frames: Receiver<String>) {
    let blocking = ctx.clone();
    let _ = ctx.spawn(async move {
        let _ = blocking
            .blocking(move || {
                while let Ok(frame) = frames.recv() {
                    out.notify_raw(&frame);
                }
            })
            .await;
    });
}

/// The runtime's answer to `initialize` with the handshake's fields beside it.
pub(crate) fn merged(own: Value, handshake: Value) -> Value {
    match (own, handshake) {
        (Value::Object(mut own), Value::Object(handshake)) => {
            for (key, value) in handshake {
                own.entry(key).or_insert(value);
            }
            Value::Object(own)
        }
        (own, _) => own,
    }
}
