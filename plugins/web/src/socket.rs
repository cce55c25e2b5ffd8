//! One event socket (`GET /api/events`): the client subscribes to sessions and gets their
//! updates on this one connection, in seq order, plus the host's frames and a heartbeat every
//! 15 s. A writer task drains the connection's queue; the reader runs the connection and ends
//! it when the client goes.

use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RNone, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_client_protocol::{ClientFrame, ServerFrame};
use dsh_plugin_api::Context;
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::io::http_server::{WebSocketBox, WebSocketSession, WsMessage};

use crate::live::Hub;

const HEARTBEAT: Duration = Duration::from_secs(15);

pub(crate) struct EventSocket {
    pub(crate) ctx: Context,
    pub(crate) hub: Arc<Hub>,
    pub(crate) boot_id: String,
}

impl WebSocketSession for EventSocket {
    fn run(&self, socket: WebSocketBox) -> FfiFuture<()> {
        let (ctx, hub, boot_id) = (self.ctx.clone(), self.hub.clone(), self.boot_id.clone());
        async move {
            let socket = Arc::new(socket);
            let (outbox, mut queue) = hub.connect();
            let writer = socket.clone();
            let lagging = outbox.clone();
            let _ = ctx.spawn(async move {
                while let Some(text) = queue.recv().await {
                    if !writer.send(WsMessage::Text(RString::from(text))).await {
                        return;
                    }
                    for session_id in lagging.take_lagged() {
                        let frame = ServerFrame::Resync {
                            session_id,
                            reason: "this client fell too far behind".to_owned(),
                        };
                        let text = serde_json::to_string(&frame).unwrap_or_default();
                        if !writer.send(WsMessage::Text(RString::from(text))).await {
                            return;
                        }
                    }
                }
            });
            // The heartbeat ends with the connection (its outbox would keep the writer alive).
            let closed = CancelFlag::new();
            let (beat, sleeper, ended) = (outbox.clone(), ctx.clone(), closed.clone());
            let _ = ctx.spawn(async move {
                let frame = ServerFrame::Heartbeat { boot_id };
                loop {
                    let _ = beat.push(&frame);
                    if ended.until(sleeper.sleep(HEARTBEAT)).await.is_none() {
                        return;
                    }
                }
            });
            loop {
                let text = match socket.recv().await {
                    RSome(WsMessage::Text(text)) => text,
                    RSome(WsMessage::Binary(_)) => continue,
                    RNone => break,
                };
                match serde_json::from_str::<ClientFrame>(&text) {
                    Ok(ClientFrame::Subscribe {
                        session_id,
                        after_seq,
                    }) => {
                        if let Err(error) = hub.subscribe(&outbox, &session_id, after_seq).await {
                            let reason = error.to_string();
                            let _ = outbox.push(&ServerFrame::Resync { session_id, reason });
                        }
                    }
                    Ok(ClientFrame::Unsubscribe { session_id }) => {
                        hub.unsubscribe(&outbox, &session_id);
                    }
                    Err(error) => {
                        let _ = outbox.push(&ServerFrame::Error {
                            message: format!("a frame this server cannot read: {error}"),
                        });
                    }
                }
            }
            closed.fire();
            hub.disconnect(outbox.id);
            drop(outbox);
        }
        .into_ffi()
    }
}
