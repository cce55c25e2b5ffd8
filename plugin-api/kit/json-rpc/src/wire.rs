//! The framing: one compact JSON frame per `\n`-terminated line. Reading a line (bounded, so a
//! peer cannot make the host hold an endless line), telling a request from a notification or a
//! response, the error codes, and the one writer of a stream, which carries frames only (a frame
//! is written whole, under one lock, so concurrent sessions never interleave bytes).

use std::io::{BufRead, Write};
use std::sync::Mutex;

use dsh_plugin_api::lock;
use serde_json::{Map, Value, json};

/// The longest line read (16 MiB): longer ones are answered -32700 and skipped.
pub const MAX_LINE: usize = 16 << 20;

/// `-32700`: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// `-32600`: JSON, but not a JSON-RPC 2.0 frame.
pub const INVALID_REQUEST: i64 = -32600;
/// `-32601`: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// `-32602`: the params do not have the method's shape (the message names the field).
pub const INVALID_PARAMS: i64 = -32602;
/// `-32603`: the host failed to do what was asked.
pub const INTERNAL_ERROR: i64 = -32603;
/// `-32001`: the session is running a turn (`data.code`: `agent-busy`).
pub const AGENT_BUSY: i64 = -32001;
/// `-32002`: `initialize` has not been called (`data.code`: `not-initialized`).
pub const NOT_INITIALIZED: i64 = -32002;
/// `-32003`: the runtime is shutting down (`data.code`: `shutting-down`).
pub const SHUTTING_DOWN: i64 = -32003;

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` naming the field and what is wrong with it.
    pub fn invalid_params(field: &str, why: impl std::fmt::Display) -> Self {
        Self::new(INVALID_PARAMS, format!("Invalid params: {field}: {why}"))
            .with_data(json!({"field": field}))
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(INTERNAL_ERROR, message.to_string())
    }

    /// A refusal with one of the coded reasons (`agent-busy`, ...), the code in `data`.
    pub fn coded(code: i64, name: &str, message: impl Into<String>) -> Self {
        Self::new(code, message).with_data(json!({"code": name}))
    }
}

/// One line read from the peer.
#[derive(Debug, PartialEq)]
pub enum Line {
    Text(String),
    /// Longer than [`MAX_LINE`]: its bytes were skipped up to the next newline.
    TooLong,
    NotUtf8,
}

/// Reads one line of at most `limit` bytes; `None` at the end of input.
pub fn read_line(input: &mut impl BufRead, limit: usize) -> std::io::Result<Option<Line>> {
    let mut bytes = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf()?;
        if buffer.is_empty() {
            // The end of input: a last line without its newline still counts.
            return Ok(match (bytes.is_empty(), too_long) {
                (true, false) => None,
                (_, true) => Some(Line::TooLong),
                (false, false) => Some(text(bytes)),
            });
        }
        let (taken, ended) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        if !too_long {
            bytes.extend_from_slice(&buffer[..taken]);
            if bytes.len() > limit + 1 {
                too_long = true;
                bytes = Vec::new();
            }
        }
        input.consume(taken);
        if ended {
            return Ok(Some(if too_long { Line::TooLong } else { text(bytes) }));
        }
    }
}

fn text(mut bytes: Vec<u8>) -> Line {
    while bytes
        .last()
        .is_some_and(|byte| *byte == b'\n' || *byte == b'\r')
    {
        bytes.pop();
    }
    String::from_utf8(bytes).map_or(Line::NotUtf8, Line::Text)
}

/// What a frame from the peer is.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// An answer to a request of ours (this runtime sends none: it is dropped).
    Response,
}

/// A frame's members, read as they are (each checked below).
#[derive(serde::Deserialize)]
struct Members {
    #[serde(default)]
    jsonrpc: Option<Value>,
    /// `Some(Null)` for an explicit `"id": null`.
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    params: Option<Value>,
}

/// Keeps an explicit `null` apart from an absent member.
fn present<'de, D: serde::Deserializer<'de>>(reader: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(reader).map(Some)
}

/// Reads a frame; the error answer (with the id to answer, `null` when there is none) when the
/// line is not one.
pub fn classify(line: &str) -> Result<Incoming, Box<(Value, RpcError)>> {
    let value: Value = serde_json::from_str(line).map_err(|error| {
        Box::new((
            Value::Null,
            RpcError::new(PARSE_ERROR, format!("Parse error: {error}")),
        ))
    })?;
    if !value.is_object() {
        return Err(Box::new((
            Value::Null,
            RpcError::new(INVALID_REQUEST, "Invalid Request: a frame is a JSON object"),
        )));
    }
    let frame: Members = serde_json::from_value(value).map_err(|error| {
        Box::new((
            Value::Null,
            RpcError::new(INVALID_REQUEST, format!("Invalid Request: {error}")),
        ))
    })?;
    let id = frame.id;
    let answer_to = match &id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let invalid = |why: &str| {
        Box::new((
            answer_to.clone(),
            RpcError::new(INVALID_REQUEST, format!("Invalid Request: {why}")),
        ))
    };
    if frame.jsonrpc != Some(Value::from("2.0")) {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    if matches!(&id, Some(id) if !id.is_string() && !id.is_number() && !id.is_null()) {
        return Err(invalid("`id` must be a string or a number"));
    }
    let method = match frame.method {
        None => None,
        Some(Value::String(method)) => Some(method),
        Some(_) => return Err(invalid("`method` must be a string")),
    };
    let params = frame.params.unwrap_or(Value::Null);
    match (id, method) {
        (Some(id), Some(method)) if !id.is_null() => Ok(Incoming::Request { id, method, params }),
        (_, Some(method)) => Ok(Incoming::Notification { method, params }),
        (Some(_), None) => Ok(Incoming::Response),
        (None, None) => Err(invalid(
            "a frame needs a `method` (or an `id` with a result)",
        )),
    }
}

/// The params of a method as an object (absent: empty); `-32602` for anything else.
pub fn params_object(params: Value) -> Result<Map<String, Value>, RpcError> {
    match params {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        _ => Err(RpcError::invalid_params("params", "must be an object")),
    }
}

/// The writer of a stream (stdout, a socket): every frame a transport sends goes through it.
pub struct Out {
    state: Mutex<OutState>,
}

struct OutState {
    sink: Box<dyn Write + Send>,
    /// After `shutdown` began, notifications are no longer sent (answers still are).
    quiet: bool,
}

impl Out {
    pub fn new(sink: Box<dyn Write + Send>) -> Self {
        Self {
            state: Mutex::new(OutState { sink, quiet: false }),
        }
    }

    /// Writes one frame and flushes it; a peer that went away is not an error of ours.
    fn write(&self, frame: &str, notification: bool) {
        let mut state = lock(&self.state);
        if notification && state.quiet {
            return;
        }
        let _ = writeln!(state.sink, "{frame}");
        let _ = state.sink.flush();
    }

    /// A notification already serialized (`{"jsonrpc":"2.0","method":..,"params":..}`).
    pub fn notify_raw(&self, frame: &str) {
        self.write(frame, true);
    }

    pub fn notify(&self, method: &str, params: Value) {
        let frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.write(&frame.to_string(), true);
    }

    pub fn answer(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let frame = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => {
                let mut body = json!({"code": error.code, "message": error.message});
                if let (Some(data), Value::Object(body)) = (error.data, &mut body) {
                    body.insert("data".to_owned(), data);
                }
                json!({"jsonrpc": "2.0", "id": id, "error": body})
            }
        };
        self.write(&frame.to_string(), false);
    }

    /// Stops notifications for good (the reference detaches its listeners when it shuts down).
    pub fn quiet(&self) {
        lock(&self.state).quiet = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &str, limit: usize) -> Vec<Line> {
        let mut reader = std::io::BufReader::with_capacity(4, input.as_bytes());
        std::iter::from_fn(|| read_line(&mut reader, limit).unwrap()).collect()
    }

    #[test]
    fn lines_are_read_bounded_and_the_rest_survives() {
        assert_eq!(
            lines("ab\r\n0123456789\nlast", 5),
            vec![
                Line::Text("ab".into()),
                Line::TooLong,
                Line::Text("last".into())
            ]
        );
        assert_eq!(lines("", 5), Vec::<Line>::new());
    }

    #[test]
    fn frames_are_told_apart_and_mistakes_named() {
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#),
            Ok(Incoming::Request { method, .. }) if method == "m"
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"m"}"#),
            Ok(Incoming::Notification { .. })
        ));
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#),
            Ok(Incoming::Response)
        );
        let (id, error) = *classify("not json").unwrap_err();
        assert_eq!((id, error.code), (Value::Null, PARSE_ERROR));
        let (id, error) = *classify(r#"{"id":7,"method":"m"}"#).unwrap_err();
        assert_eq!((id, error.code), (Value::from(7), INVALID_REQUEST));
        assert!(error.message.contains("jsonrpc"));
        let (_, error) = *classify(r#"{"jsonrpc":"2.0","id":1,"method":3}"#).unwrap_err();
        assert!(error.message.contains("`method`"));
        assert_eq!(classify("[1]").unwrap_err().1.code, INVALID_REQUEST);
    }

    #[test]
    fn params_must_be_an_object() {
        assert!(params_object(Value::Null).unwrap().is_empty());
        assert_eq!(params_object(json!([1])).unwrap_err().code, INVALID_PARAMS);
    }
}
