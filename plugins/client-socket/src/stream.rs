//! One attached client: its stream read line by line off the runtime's threads, each request
//! run on the connection as a task of its own (a slow one holds no other back), answers and
//! frames queued to one writer thread. A client that stops reading fills its queue: its frames
//! are then refused (the service tells it to resynchronize) and, when an answer cannot be
//! queued either, the client is dropped. The end of the stream ends the connection.

use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use dsh_clients_seam::{ConnectOptions, FrameSink, FrameSink_TO};
use dsh_json_rpc::wire::{self, Incoming, Line, MAX_LINE, RpcError};
use dsh_plugin_api::{Json, LogLevel, lock};
use serde_json::{Value, json};

use crate::Server;

/// Lines queued per client before it counts as not reading.
const QUEUE: usize = 4096;

/// The queue of the writer thread.
#[derive(Clone)]
struct Outgoing(SyncSender<String>);

impl Outgoing {
    fn push(&self, line: String) -> bool {
        !matches!(
            self.0.try_send(line),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_))
        )
    }

    fn answer(&self, id: &Value, outcome: Result<Value, RpcError>) -> bool {
        self.push(answer_line(id, outcome))
    }
}

impl FrameSink for Outgoing {
    fn send(&self, frame: RString) -> bool {
        self.push(dsh_json_rpc::frame_notification(&frame))
    }
}

/// An answer as a line.
fn answer_line(id: &Value, outcome: Result<Value, RpcError>) -> String {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        Err(error) => {
            let mut body = json!({"code": error.code, "message": error.message});
            if let (Some(data), Value::Object(body)) = (error.data, &mut body) {
                body.insert("data".to_owned(), data);
            }
            json!({"jsonrpc": "2.0", "id": id, "error": body}).to_string()
        }
    }
}

/// Tells a client over the limit so, and closes.
pub(crate) fn refuse_busy(mut stream: UnixStream) {
    let line = answer_line(
        &Value::Null,
        Err(RpcError::new(
            -32003,
            "too many clients are attached to this host",
        )),
    );
    let _ = writeln!(stream, "{line}");
}

/// Serves one client until its stream ends.
pub(crate) async fn serve(server: Server, stream: UnixStream) {
    let Ok(writing) = stream.try_clone() else {
        release(&server);
        return;
    };
    let (sender, receiver) = sync_channel::<String>(QUEUE);
    let outgoing = Outgoing(sender);
    // The writer ends when every sender is gone (the connection and the tasks dropped).
    let blocking = server.ctx.clone();
    let writer = async move {
        blocking
            .blocking(move || {
                let mut writing = std::io::BufWriter::new(writing);
                while let Ok(line) = receiver.recv() {
                    if writeln!(writing, "{line}").is_err() {
                        return;
                    }
                    // What queued meanwhile goes out in the same write: a burst of frames, one flush.
                    while let Ok(line) = receiver.try_recv() {
                        if writeln!(writing, "{line}").is_err() {
                            return;
                        }
                    }
                    if writing.flush().is_err() {
                        return;
                    }
                }
            })
            .await
    };
    let _ = server.ctx.spawn(async move {
        let _ = writer.await;
    });
    let options = ConnectOptions {
        transport: "socket".to_owned(),
        settings_writable: true,
        heartbeat: true,
        ..ConnectOptions::default()
    };
    let connection = Arc::new(server.clients.connect(
        Json::encode(&options),
        FrameSink_TO::from_value(outgoing.clone(), TD_Opaque),
    ));
    let reader = Arc::new(std::sync::Mutex::new(BufReader::new(stream)));
    loop {
        let reading = reader.clone();
        let line = server
            .ctx
            .blocking(move || wire::read_line(&mut *lock(&reading), MAX_LINE))
            .await;
        let line = match line {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) | Ok(Err(_)) | Err(_) => break,
        };
        let text = match line {
            Line::Text(text) if text.trim().is_empty() => continue,
            Line::Text(text) => text,
            Line::TooLong => {
                let error = RpcError::new(wire::PARSE_ERROR, "Parse error: the line is too long");
                outgoing.answer(&Value::Null, Err(error));
                continue;
            }
            Line::NotUtf8 => {
                let error = RpcError::new(wire::PARSE_ERROR, "Parse error: the line is not UTF-8");
                outgoing.answer(&Value::Null, Err(error));
                continue;
            }
        };
        match wire::classify(&text) {
            Ok(Incoming::Request { id, method, params }) => {
                let (connection, outgoing, ctx) =
                    (connection.clone(), outgoing.clone(), server.ctx.clone());
                let _ = server.ctx.spawn(async move {
                    let outcome = dsh_json_rpc::call(&connection, &method, params).await;
                    if !outgoing.answer(&id, outcome) {
                        ctx.log(
                            LogLevel::Warn,
                            "client socket: a client that does not read its answers was dropped",
                        );
                    }
                });
            }
            Ok(Incoming::Notification { method, params }) => {
                let connection = connection.clone();
                let _ = server.ctx.spawn(async move {
                    let _ = dsh_json_rpc::call(&connection, &method, params).await;
                });
            }
            Ok(Incoming::Response) => {}
            Err(refusal) => {
                let (id, error) = *refusal;
                outgoing.answer(&id, Err(error));
            }
        }
    }
    drop(connection);
    release(&server);
}

fn release(server: &Server) {
    *lock(&server.slots) += 1;
}
