//! The first exchange of a connection: `initialize` with the client's protocol version, name and
//! features, answered with the host's version, its description and the features both speak.
//! A host serves any client whose version is not newer than its own; frames and fields a
//! client did not ask for (by feature) are not sent to it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::payloads::HostDescription;

/// The protocol version this crate describes. It grows when a method, a frame or a field
/// changes meaning; additions that old clients can ignore are features instead.
pub const PROTOCOL_VERSION: u32 = 1;

/// What a host of this version offers; a client lists the ones it uses.
/// - `approvals`: the client answers approvals (`approval.respond`); asks wait for it.
/// - `questions`: the client answers questions (`question.respond`).
/// - `markdown-blocks`: answers carry their Markdown rendered as blocks (`ItemOp::Blocks`).
/// - `jobs`, `queue`, `projections`: the frames of background jobs, of a session's waiting
///   messages and of its meter and controls.
pub const HOST_FEATURES: &[&str] = &[
    "approvals",
    "questions",
    "markdown-blocks",
    "jobs",
    "queue",
    "projections",
];

/// Who the client is, for the host's log and `dsh-host status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

/// `initialize`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Initialize {
    /// The newest version the client speaks.
    pub protocol_version: u32,
    #[serde(default)]
    pub client_info: ClientInfo,
    /// The features of [`HOST_FEATURES`] the client uses; unknown names are ignored.
    #[serde(default)]
    pub features: Vec<String>,
}

/// `initialize`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Initialized {
    /// The version this connection speaks: the older of the two.
    pub protocol_version: u32,
    pub host: HostDescription,
    /// The features both sides use on this connection.
    pub features: Vec<String>,
    /// This connection's id, as other clients and `dsh-host status` see it.
    pub connection_id: u64,
}

/// `session.subscribe`'s params: the session's updates after `after_seq` (all of them
/// without it), then `session/subscribed`, then the live ones. (The page's WebSocket sends
/// the same as a `subscribe` frame.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeRequest {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
}
