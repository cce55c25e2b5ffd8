//! `dsh -p "TASK"`: one turn without the screen. The session is created (or resumed), followed,
//! prompted; the tools' cards go to stderr as one line each while the turn runs, the answer
//! to stdout when it ends. The client answers no approvals, so a call that asks is refused,
//! as in any unattended run. Exit codes follow the headless runner: 0 completed, 1 error,
//! 3 blocked, 4 max tokens, 130 cancelled.

use std::io::Write;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

use dsh_client_protocol::{
    ChatItem, ClientInfo, ClientRequest, CreateRequest, Created, HistoryRequest, Initialize,
    NoParams, PROTOCOL_VERSION, PromptMode, SendPrompt, ServerFrame, SessionHistory, SessionList,
    SubscribeRequest,
};
use dsh_protocol::{ToolStatus, TurnEndReason};

use crate::app_event::AppEvent;
use crate::args::Start;
use crate::conn::{Conn, Transport};
use crate::transcript::Transcript;

/// How long the turn may go without a frame before the run gives up.
const SILENCE: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub(crate) enum OneShotError {
    #[error(transparent)]
    Connect(#[from] crate::conn::ConnectError),
    #[error(transparent)]
    Request(#[from] crate::conn::RequestError),
    #[error("{0}")]
    Host(String),
}

fn code_of(reason: &TurnEndReason) -> i32 {
    match reason {
        TurnEndReason::Completed => 0,
        TurnEndReason::Blocked { .. } => 3,
        TurnEndReason::MaxTokens => 4,
        TurnEndReason::Aborted { .. } => 130,
        _ => 1,
    }
}

fn value<T: serde::de::DeserializeOwned>(answer: serde_json::Value) -> Result<T, OneShotError> {
    serde_json::from_value(answer).map_err(|error| OneShotError::Host(error.to_string()))
}

/// The session to run in, and the seq its history reaches.
fn open(
    conn: &Conn,
    start: &Start,
    new_session: CreateRequest,
) -> Result<(String, Option<u64>), OneShotError> {
    let cwd = std::env::current_dir()
        .map(|dir| dir.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = match start {
        Start::Resume(id) => Some(id.clone()),
        Start::Continue => {
            let list: SessionList = value(conn.call(&ClientRequest::SessionList(NoParams {}))?)?;
            list.sessions
                .into_iter()
                .filter(|s| s.subagent_of.is_none() && s.cwd.as_deref() == Some(cwd.as_str()))
                .max_by_key(|s| s.active_at.unwrap_or(s.updated_at))
                .map(|s| s.id)
        }
        Start::New => None,
    };
    match id {
        Some(id) => {
            let request = HistoryRequest {
                session_id: id.clone(),
                limit: Some(1),
            };
            let history: SessionHistory =
                value(conn.call(&ClientRequest::SessionHistory(request))?)?;
            Ok((id, history.last_seq))
        }
        None => {
            let request = CreateRequest {
                cwd: Some(cwd),
                ..new_session
            };
            let created: Created = value(conn.call(&ClientRequest::SessionCreate(request))?)?;
            Ok((created.session_id, None))
        }
    }
}

/// Runs `task`; answers the exit code.
pub(crate) fn run(
    transport: &Transport,
    task: &str,
    start: &Start,
    new_session: CreateRequest,
) -> Result<i32, OneShotError> {
    let (tx, rx) = channel();
    let conn = Conn::open(transport, tx)?;
    let hello = Initialize {
        protocol_version: PROTOCOL_VERSION,
        client_info: ClientInfo {
            name: "dsh -p".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        features: Vec::new(),
    };
    // The SDK runtime owns `initialize` with params of its own; the rest still works.
    let _ = conn.call(&ClientRequest::Initialize(hello));
    let (session, after_seq) = open(&conn, start, new_session)?;
    let subscribe = SubscribeRequest {
        session_id: session.clone(),
        after_seq,
    };
    conn.call(&ClientRequest::SessionSubscribe(subscribe))?;
    let prompt = SendPrompt {
        session_id: session.clone(),
        text: task.to_owned(),
        mode: PromptMode::Queue,
        client_request_id: None,
        images: Vec::new(),
    };
    conn.call(&ClientRequest::SessionPrompt(prompt))?;
    let mut transcript = Transcript::default();
    let mut stderr = std::io::stderr();
    // Our message, once the turn took it; the turn's end after it.
    let mut asked: Option<usize> = None;
    loop {
        let event = match rx.recv_timeout(SILENCE) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => {
                return Err(OneShotError::Host(format!(
                    "nothing from the host in {SILENCE:?}"
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(OneShotError::Host("the connection closed".to_owned()));
            }
        };
        match event {
            AppEvent::Server(frame) => {
                let ServerFrame::Update(update) = *frame else {
                    continue;
                };
                if update.session_id != session {
                    continue;
                }
                for op in update.ops {
                    if let dsh_client_protocol::ItemOp::Upsert {
                        item:
                            ChatItem::Tool {
                                name,
                                arguments,
                                status,
                                view,
                                ..
                            },
                    } = &op
                        && *status != ToolStatus::Running
                    {
                        let lines = crate::cells::tool(name, arguments, *status, view, None, None);
                        if let Some(head) = lines.get(1) {
                            let _ = writeln!(stderr, "{head}");
                        }
                    }
                    transcript.apply(op);
                }
                let items = transcript.items();
                if asked.is_none() {
                    asked = items.iter().position(|item| {
                        matches!(item, ChatItem::User { text, .. } if text.trim() == task.trim())
                    });
                }
                let Some(at) = asked else { continue };
                let end = items[at..].iter().find_map(|item| match item {
                    ChatItem::TurnEnd { reason, .. } => Some(reason.clone()),
                    _ => None,
                });
                if let Some(reason) = end {
                    let answer: Vec<&str> = items[at..]
                        .iter()
                        .filter_map(|item| match item {
                            ChatItem::Assistant { text, .. } if !text.trim().is_empty() => {
                                Some(text.trim())
                            }
                            _ => None,
                        })
                        .collect();
                    if let Some(last) = answer.last() {
                        println!("{last}");
                    }
                    if let TurnEndReason::Error { error } = &reason {
                        let _ = writeln!(stderr, "dsh: {}: {}", error.code.as_str(), error.message);
                    }
                    return Ok(code_of(&reason));
                }
            }
            AppEvent::HostLog(line) => {
                let _ = writeln!(stderr, "{line}");
            }
            AppEvent::HostGone(last) => {
                return Err(OneShotError::Host(format!("the host stopped: {last}")));
            }
            _ => {}
        }
    }
}
