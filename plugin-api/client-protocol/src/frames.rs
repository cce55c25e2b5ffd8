//! What a client follows: the frames a host pushes on a connection (a session's updates after a
//! subscribe, its queue, jobs and projections, sessions added, removed and running, approvals
//! and questions asked and resolved, the heartbeat) and the frames a client sends to choose
//! what it follows.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::chat::SessionUpdate;
use dsh_protocol::SessionSummary;

/// What a client sends on the event socket (`GET /api/events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum ClientFrame {
    /// Send this session's updates after `after_seq` (all of them without it), then live.
    Subscribe {
        session_id: String,
        #[serde(default)]
        after_seq: Option<u64>,
    },
    Unsubscribe {
        session_id: String,
    },
}

/// What the server sends on the event socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum ServerFrame {
    /// What one log event changed.
    #[serde(rename = "session/update")]
    Update(SessionUpdate),
    /// The replay after a subscribe is complete up to `last_seq`; live updates follow.
    #[serde(rename = "session/subscribed")]
    Subscribed {
        session_id: String,
        last_seq: Option<u64>,
    },
    /// This client fell too far behind (or the session could not be followed): refetch the
    /// history and subscribe again.
    #[serde(rename = "session/resync")]
    Resync { session_id: String, reason: String },
    /// A session appeared (created here, headless, or in another tab).
    #[serde(rename = "host/session-added")]
    SessionAdded { session: SessionSummary },
    /// What a session's inbox holds, unclaimed: queued turns and steering for the running one
    /// (sent when it changes, and on subscribe).
    #[serde(rename = "session/queue")]
    Queue {
        session_id: String,
        queue: dsh_protocol::InboxListing,
    },
    /// A session was deleted (moved to the trash).
    /// A per-session value the page shows beside the conversation (`key: "context"`: the
    /// token meter), pushed when it changes.
    #[serde(rename = "session/projection")]
    Projection {
        session_id: String,
        key: String,
        value: serde_json::Value,
    },
    #[serde(rename = "host/session-removed")]
    SessionRemoved { session_id: String },
    /// A session started or stopped running a turn.
    #[serde(rename = "host/session-status")]
    SessionStatus { session_id: String, running: bool },
    /// A session started or stopped waiting for a person (an approval, a question).
    #[serde(rename = "host/session-waiting")]
    SessionWaiting { session_id: String, waiting: bool },
    /// Every 15 s; a new `boot_id` means the host restarted.
    #[serde(rename = "heartbeat")]
    Heartbeat { boot_id: String },
    /// A frame the client sent could not be read.
    #[serde(rename = "stream/error")]
    Error { message: String },
}
