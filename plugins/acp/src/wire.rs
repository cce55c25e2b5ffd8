//! JSON-RPC 2.0 over newline-delimited stdio, as ACP speaks it: reading one line into a frame
//! (a request, a notification or a response to one of ours), the protocol's error values, and
//! the one writer of stdout, through which every frame leaves whole on a line of its own. The
//! agent's own requests (a permission question) are numbered from 0, as the reference's SDK
//! numbers them, and their answers are matched back here.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use dsh_plugin_api::lock;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::oneshot;

/// A request id as the client chose it: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Id {
    Number(i64),
    Text(String),
}

/// A JSON-RPC error: its code, its message and, for some codes, data naming what failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) data: Option<ErrorData>,
}

/// What an error's `data` names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorData {
    pub(crate) method: String,
}

impl RpcError {
    /// -32700: a line that is not JSON.
    pub(crate) fn parse(detail: &str) -> Self {
        Self::new(-32700, format!("Parse error: {detail}"))
    }

    /// -32600: JSON that is no request, notification or response.
    pub(crate) fn invalid_request(detail: &str) -> Self {
        Self::new(-32600, format!("Invalid request: {detail}"))
    }

    /// -32601, worded as the reference's SDK words it, with the method in `data`.
    pub(crate) fn method_not_found(method: &str) -> Self {
        Self {
            data: Some(ErrorData {
                method: method.to_owned(),
            }),
            ..Self::new(-32601, format!("\"Method not found\": {method}"))
        }
    }

    /// -32602, with what is wrong.
    pub(crate) fn invalid_params(detail: impl std::fmt::Display) -> Self {
        Self::new(-32602, format!("Invalid params: {detail}"))
    }

    /// -32603, with what failed.
    pub(crate) fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(-32603, format!("Internal error: {detail}"))
    }

    fn new(code: i64, message: String) -> Self {
        Self {
            code,
            message,
            data: None,
        }
    }
}

/// One line read from the client.
#[derive(Debug)]
pub(crate) enum Frame {
    Request {
        id: Id,
        method: String,
        params: Option<Box<RawValue>>,
    },
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// The client's answer to a request of ours.
    Response {
        id: Id,
        outcome: Result<Box<RawValue>, RpcError>,
    },
}

/// The members a frame may have; which are present says what it is.
#[derive(Deserialize)]
struct RawFrame {
    #[serde(default)]
    id: Option<Id>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Reads one line: the frame, or the error to answer it with (and the id to answer, if one
/// could be read).
pub(crate) fn read_frame(line: &str) -> Result<Frame, (Option<Id>, RpcError)> {
    let raw: &RawValue = serde_json::from_str(line)
        .map_err(|error| (None, RpcError::parse(&without_position(&error.to_string()))))?;
    let frame: RawFrame = serde_json::from_str(raw.get()).map_err(|error| {
        (
            None,
            RpcError::invalid_request(&without_position(&error.to_string())),
        )
    })?;
    match (frame.id, frame.method) {
        (Some(id), Some(method)) => Ok(Frame::Request {
            id,
            method,
            params: frame.params,
        }),
        (None, Some(method)) => Ok(Frame::Notification {
            method,
            params: frame.params,
        }),
        (Some(id), None) => match (frame.result, frame.error) {
            (Some(result), None) => Ok(Frame::Response {
                id,
                outcome: Ok(result),
            }),
            (None, Some(error)) => Ok(Frame::Response {
                id,
                outcome: Err(error),
            }),
            // `"result": null` reads as no result: an answer that carries nothing.
            (None, None) => Ok(Frame::Response {
                id,
                outcome: serde_json::value::to_raw_value(&()).map_err(RpcError::internal),
            }),
            (Some(_), Some(_)) => Err((
                Some(id),
                RpcError::invalid_request("a response has a result or an error, not both"),
            )),
        },
        (None, None) => Err((None, RpcError::invalid_request("no `method` and no `id`"))),
    }
}

/// Parses a request's params as `T`; the error names the member that is wrong.
pub(crate) fn params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, RpcError> {
    let text = params.map_or("{}", RawValue::get);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let message = without_position(&error.inner().to_string());
        match path.as_str() {
            "." => RpcError::invalid_params(message),
            _ => RpcError::invalid_params(format!("{path}: {message}")),
        }
    })
}

/// serde_json's position in the line means nothing to a client that sent a frame.
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

#[derive(Serialize)]
struct Success<'a, T> {
    jsonrpc: &'static str,
    id: &'a Id,
    result: T,
}

#[derive(Serialize)]
struct Failure<'a> {
    jsonrpc: &'static str,
    /// `null` where the id could not be read.
    id: Option<&'a Id>,
    error: &'a RpcError,
}

#[derive(Serialize)]
struct Notice<'a, T> {
    jsonrpc: &'static str,
    method: &'a str,
    params: T,
}

#[derive(Serialize)]
struct Call<'a, T> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: T,
}

type Answer = Result<Box<RawValue>, RpcError>;

/// Why a request of the agent's got no usable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The client answered with an error, or with something that does not read.
    #[error(transparent)]
    Answered(#[from] RpcError),
    /// The agent stopped waiting (its subject was cancelled).
    #[error("withdrawn")]
    Withdrawn,
    /// Stdin closed: no answer will come.
    #[error("the client closed the connection")]
    Closed,
    /// The client answered, but not with what the method returns: what it did is unknown.
    #[error(transparent)]
    Unreadable(RpcError),
    /// No answer within the bound a blocking caller set.
    #[error("no answer within {} ms", .0.as_millis())]
    TimedOut(Duration),
}

/// Where an answer goes: to a task, or to a thread of the blocking pool.
enum Reply {
    Async(oneshot::Sender<Answer>),
    Blocking(mpsc::SyncSender<Answer>),
}

impl Reply {
    fn send(self, answer: Answer) {
        match self {
            Self::Async(sender) => {
                let _ = sender.send(answer);
            }
            Self::Blocking(sender) => {
                let _ = sender.try_send(answer);
            }
        }
    }
}

/// The ACP notification that withdraws a request the peer has not answered yet.
const CANCEL_REQUEST: &str = "$/cancel_request";

/// A request whose wait was dropped before it ended (or ran out of time): still pending, it is
/// forgotten and the client told.
struct Unanswered<'a> {
    wire: &'a Wire,
    id: Option<u64>,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id else {
            return;
        };
        // Answered, withdrawn or closed meanwhile: nothing is left to cancel.
        if lock(&self.wire.pending).remove(&id).is_some() {
            self.wire
                .notify(CANCEL_REQUEST, serde_json::json!({ "requestId": id }));
        }
    }
}

/// A request waiting for its answer, and what it is about (a session).
struct Waiting {
    subject: String,
    answer: Reply,
}

/// The agent's side of the connection: stdout, and the requests it waits on.
#[derive(Default)]
pub(crate) struct Wire {
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, Waiting>>,
    /// No more answers will come (stdin closed): requests fail at once.
    closed: std::sync::atomic::AtomicBool,
}

impl Wire {
    /// One frame, whole, on a line of its own.
    fn write(&self, frame: &impl Serialize) {
        let Ok(text) = serde_json::to_string(frame) else {
            return;
        };
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
        let _ = stdout.flush();
    }

    pub(crate) fn respond<T: Serialize>(&self, id: &Id, result: Result<T, RpcError>) {
        match result {
            Ok(result) => self.write(&Success {
                jsonrpc: "2.0",
                id,
                result,
            }),
            Err(error) => self.fail(Some(id), &error),
        }
    }

    pub(crate) fn fail(&self, id: Option<&Id>, error: &RpcError) {
        self.write(&Failure {
            jsonrpc: "2.0",
            id,
            error,
        });
    }

    pub(crate) fn notify<T: Serialize>(&self, method: &str, params: T) {
        self.write(&Notice {
            jsonrpc: "2.0",
            method,
            params,
        });
    }

    /// Sends a request about `subject` (a session) to the client and waits for its answer.
    /// After stdin closed it fails at once; [`withdraw`](Self::withdraw) ends the wait. Dropped
    /// before its answer came (another client answered the same ask first), the request is
    /// withdrawn from the client too, with `$/cancel_request`, so an editor closes the
    /// question it shows; its late answer is then dropped.
    pub(crate) async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        subject: &str,
        method: &str,
        params: P,
    ) -> Result<R, CallError> {
        let (sender, receiver) = oneshot::channel();
        let id = self.send(subject, method, params, Reply::Async(sender))?;
        let mut unanswered = Unanswered {
            wire: self,
            id: Some(id),
        };
        let answer = receiver.await.ok();
        unanswered.id = None;
        self.decode(method, answer)
    }

    /// [`request`](Self::request) for a thread of the host's blocking pool, which may wait,
    /// but not past `bound` (an answer too long to read never comes, and the thread must not
    /// be held by it); a request that times out is withdrawn from the client as a dropped one
    /// is.
    pub(crate) fn request_blocking<P: Serialize, R: DeserializeOwned>(
        &self,
        subject: &str,
        method: &str,
        params: P,
        bound: Duration,
    ) -> Result<R, CallError> {
        let (sender, receiver) = mpsc::sync_channel(1);
        let id = self.send(subject, method, params, Reply::Blocking(sender))?;
        let mut unanswered = Unanswered {
            wire: self,
            id: Some(id),
        };
        let answer = match receiver.recv_timeout(bound) {
            Ok(answer) => Some(answer),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            // Still pending: forgotten, and withdrawn from the client as the guard drops.
            Err(mpsc::RecvTimeoutError::Timeout) => return Err(CallError::TimedOut(bound)),
        };
        unanswered.id = None;
        self.decode(method, answer)
    }

    /// Writes the request, its waiter registered first; fails at once after stdin closed.
    fn send<P: Serialize>(
        &self,
        subject: &str,
        method: &str,
        params: P,
        answer: Reply,
    ) -> Result<u64, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            // Checked under the lock `close` clears under, so no waiter is left behind.
            let mut pending = lock(&self.pending);
            if self.closed.load(Ordering::Acquire) {
                return Err(CallError::Closed);
            }
            let waiting = Waiting {
                subject: subject.to_owned(),
                answer,
            };
            pending.insert(id, waiting);
        }
        self.write(&Call {
            jsonrpc: "2.0",
            id,
            method,
            params,
        });
        Ok(id)
    }

    /// The answer read as `R`; `None` when the wait ended without one.
    fn decode<R: DeserializeOwned>(
        &self,
        method: &str,
        answer: Option<Answer>,
    ) -> Result<R, CallError> {
        let Some(answer) = answer else {
            return Err(match self.closed.load(Ordering::Acquire) {
                true => CallError::Closed,
                false => CallError::Withdrawn,
            });
        };
        serde_json::from_str(answer?.get()).map_err(|error| {
            CallError::Unreadable(RpcError::invalid_params(format!(
                "the client's answer to {method}: {error}"
            )))
        })
    }

    /// The client's answer to request `id`; an answer to nothing asked is dropped.
    pub(crate) fn resolve(&self, id: &Id, outcome: Answer) {
        let Id::Number(number) = id else {
            return;
        };
        let Ok(number) = u64::try_from(*number) else {
            return;
        };
        if let Some(waiting) = lock(&self.pending).remove(&number) {
            waiting.answer.send(outcome);
        }
    }

    /// Stops waiting for the answers to requests about `subject` (its turn was cancelled: a
    /// client that does not answer them must not hold it).
    pub(crate) fn withdraw(&self, subject: &str) {
        lock(&self.pending).retain(|_, waiting| waiting.subject != subject);
    }

    /// Stdin closed: every request still waiting fails, and later ones fail at once.
    pub(crate) fn close(&self) {
        let mut pending = lock(&self.pending);
        self.closed.store(true, Ordering::Release);
        pending.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn frames_are_told_apart_by_their_members() {
        assert!(matches!(
            read_frame(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}"#),
            Ok(Frame::Request {
                id: Id::Number(3),
                ..
            })
        ));
        assert!(matches!(
            read_frame(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
            Ok(Frame::Notification { .. })
        ));
        assert!(matches!(
            read_frame(r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#),
            Ok(Frame::Response { outcome: Ok(_), .. })
        ));
        assert!(matches!(
            read_frame(r#"{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no"}}"#),
            Ok(Frame::Response {
                outcome: Err(_),
                ..
            })
        ));
    }

    #[test]
    fn bad_lines_get_the_codes_json_rpc_gives_them() {
        let (_, error) = read_frame("not json").unwrap_err();
        assert_eq!(error.code, -32700);
        let (_, error) = read_frame("[1,2]").unwrap_err();
        assert_eq!(error.code, -32600);
        let (_, error) = read_frame(r#"{"jsonrpc":"2.0"}"#).unwrap_err();
        assert_eq!(error.code, -32600);
    }

    #[test]
    fn params_errors_name_the_member() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code, reason = "only parsed")]
        struct P {
            cwd: String,
            list: Vec<u8>,
        }
        let raw = RawValue::from_string(r#"{"cwd":"/x","list":[1,"a"]}"#.to_owned()).unwrap();
        let error = params::<P>(Some(&raw)).unwrap_err();
        assert_eq!(error.code, -32602);
        assert!(error.message.contains("list[1]"), "{}", error.message);
        let raw = RawValue::from_string(r#"{"list":[]}"#.to_owned()).unwrap();
        let error = params::<P>(Some(&raw)).unwrap_err();
        assert!(error.message.contains("`cwd`"), "{}", error.message);
    }

    #[test]
    fn method_not_found_is_worded_as_the_reference_words_it() {
        let error = RpcError::method_not_found("nope");
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"code":-32601,"message":"\"Method not found\": nope","data":{"method":"nope"}}"#
        );
    }
}
