//! What the app's loop hears, from every source on one channel: the terminal's events (read
//! by a thread of their own), the host's frames and answers (from the connection's threads),
//! signals, and the frame requester's wake-ups. [`FrameRequester`] is the one way anything
//! asks for a redraw: requests coalesce into the next frame, so a burst of streamed text is
//! drawn once.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use dsh_client_protocol::ServerFrame;
use serde_json::Value;

/// Which request an answer belongs to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Initialize,
    /// A new session: followed at once (it has no history).
    Created,
    /// A fork: opened with its history.
    Forked,
    History,
    Subscribed,
    Prompt,
    Approval,
    Question,
    Commands,
    Files {
        query: String,
    },
    /// The sessions, for the picker.
    Sessions,
    /// A session deleted from the picker (the list is asked for again once it is).
    Deleted,
    /// The sessions, to open the newest of this directory (`--continue`).
    Continue,
    /// The routes, for the status line.
    Models,
    /// The routes, for the picker.
    ModelPicker,
    Context,
    /// A change whose answer only matters when it failed.
    Action(&'static str),
    /// A queued message edited or removed; `text` comes back to the composer if refused.
    QueueEdit {
        text: String,
    },
}

#[derive(Debug)]
pub(crate) enum AppEvent {
    Term(crossterm::event::Event),
    Server(Box<ServerFrame>),
    Answer(Reply, Result<Value, crate::conn::RequestError>),
    /// The host closed the connection (it exited or the socket closed); what it said last.
    HostGone(String),
    /// A line the child host wrote on stderr.
    HostLog(String),
    Signal(i32),
    /// A redraw asked for, due at the instant.
    Frame(Instant),
}

/// Asks the loop for a frame.
#[derive(Clone)]
pub(crate) struct FrameRequester {
    tx: Sender<AppEvent>,
}

impl FrameRequester {
    pub(crate) fn new(tx: Sender<AppEvent>) -> Self {
        Self { tx }
    }

    /// A frame in `delay` (a blinking spinner, a hint that goes away).
    pub(crate) fn schedule_frame_in(&self, delay: Duration) {
        let _ = self.tx.send(AppEvent::Frame(Instant::now() + delay));
    }
}
