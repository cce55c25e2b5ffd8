//! One event socket (`GET /api/events`): a connection of the `clients` service whose frames
//! this socket writes, and whose client frames (subscribe, unsubscribe) it reads. A writer
//! task drains the connection's queue; a heartbeat every 15 s carries this server's boot id
//! (a page that sees a new one reloads, for the new CSRF token); the reader runs the
//! connection and ends it when the page goes.

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RNone, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_client_protocol::ServerFrame;
use dsh_clients_seam::{ClientsService, ConnectOptions, FrameSink, FrameSink_TO};
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::io::http_server::{WebSocketBox, WebSocketSession, WsMessage};
use dsh_plugin_api::{Context, Json};
use tokio::sync::mpsc;

const HEARTBEAT: Duration = Duration::from_secs(15);

/// Frames queued per page before it counts as too slow (and is told to resynchronize).
const QUEUE: usize = 4096;

pub(crate) struct EventSocket {
    pub(crate) ctx: Context,
    pub(crate) clients: Arc<dsh_plugin_api::Service<ClientsService>>,
    pub(crate) options: ConnectOptions,
    pub(crate) boot_id: String,
}

/// The connection's frames, queued for the writer.
struct Queue(mpsc::Sender<String>);

impl FrameSink for Queue {
    fn send(&self, frame: RString) -> bool {
        self.0.try_send(frame.into_string()).is_ok()
    }
}

impl WebSocketSession for EventSocket {
    fn run(&self, socket: WebSocketBox) -> FfiFuture<()> {
        let (ctx, clients, boot_id) =
            (self.ctx.clone(), self.clients.clone(), self.boot_id.clone());
        let options = self.options.clone();
        async move {
            let socket = Arc::new(socket);
            let (sender, mut queue) = mpsc::channel(QUEUE);
            let beat = sender.clone();
            let connection = clients.connect(
                Json::encode(&options),
                FrameSink_TO::from_value(Queue(sender), TD_Opaque),
            );
            let writer = socket.clone();
            let _ = ctx.spawn(async move {
                while let Some(text) = queue.recv().await {
                    if !writer.send(WsMessage::Text(RString::from(text))).await {
                        return;
                    }
                }
            });
            // The heartbeat ends with the socket (its sender would keep the writer alive).
            let closed = CancelFlag::new();
            let (sleeper, ended) = (ctx.clone(), closed.clone());
            let _ = ctx.spawn(async move {
                let frame =
                    serde_json::to_string(&ServerFrame::Heartbeat { boot_id }).unwrap_or_default();
                loop {
                    let _ = beat.try_send(frame.clone());
                    if ended.until(sleeper.sleep(HEARTBEAT)).await.is_none() {
                        return;
                    }
                }
            });
            loop {
                match socket.recv().await {
                    RSome(WsMessage::Text(text)) => connection.frame(text).await,
                    RSome(WsMessage::Binary(_)) => continue,
                    RNone => break,
                }
            }
            closed.fire();
            drop(connection);
        }
        .into_ffi()
    }
}
