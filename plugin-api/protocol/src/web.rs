//! The web API's values: the envelope of a unary call (`POST /api/<method>`), its closed set of
//! error codes, and the payloads of the methods. Method and field names follow the reference's
//! web API where it has them, so its clients read ours.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::chat::SessionUpdate;

/// The `type` of a call's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ClientRequestTag {
    #[serde(rename = "client-request")]
    ClientRequest,
}

/// The `type` of a call's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ServerResponseTag {
    #[serde(rename = "server-response")]
    ServerResponse,
}

/// The body of `POST /api/<method>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RpcRequest {
    #[serde(rename = "type")]
    pub kind: ClientRequestTag,
    /// The client's id for the call, echoed in the response.
    pub rpc_id: String,
    /// The method; must equal the one in the path.
    pub method: String,
    #[serde(default)]
    pub payload: serde_json::Value,
}

/// The body of every answer to a unary call; the HTTP status only says the carrier worked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RpcResponse {
    #[serde(rename = "type")]
    pub kind: ServerResponseTag,
    pub rpc_id: String,
    pub result: RpcResult,
}

impl RpcResponse {
    /// The answer to call `rpc_id`.
    pub fn new(rpc_id: impl Into<String>, result: RpcResult) -> Self {
        Self {
            kind: ServerResponseTag::ServerResponse,
            rpc_id: rpc_id.into(),
            result,
        }
    }
}

/// A call's result: `{ok: true, value}` or `{ok: false, error}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RpcResult {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl RpcResult {
    pub fn value(value: serde_json::Value) -> Self {
        Self {
            ok: true,
            value: Some(value),
            error: None,
        }
    }

    pub fn error(code: RpcErrorCode, message: impl Into<String>) -> Self {
        Self {
            ok: false,
            value: None,
            error: Some(RpcError {
                code,
                message: message.into(),
                details: None,
            }),
        }
    }
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RpcError {
    pub code: RpcErrorCode,
    /// For a person: what went wrong and, where it helps, what to do.
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

/// The closed set of failure codes a method answers (the reference's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RpcErrorCode {
    /// The envelope or the payload does not have the method's shape, or the method is unknown.
    BadRequest,
    Cancelled,
    SessionNotFound,
    /// No model route is usable (no key, no endpoint).
    ModelUnavailable,
    SessionConflict,
    /// The session is running a turn and the method needs it idle.
    AgentBusy,
    QueueItemNotFound,
    SteerUnavailable,
    SettingsRejected,
    SettingsConflict,
    CredentialRejected,
    TitleInvalid,
    ForkUnavailable,
    /// The server failed; the message says where.
    Internal,
}

/// `host.describe`: what the page needs before anything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostDescription {
    /// The harness version.
    pub version: String,
    /// Changes with every launch: a client that sees a new one resynchronizes everything.
    pub boot_id: String,
    /// The profile this host runs (`web`).
    pub profile: String,
    /// The working directory new sessions start in.
    pub cwd: String,
    /// The model providers with an adapter, and the default route (`provider/model`) if one
    /// is usable.
    pub providers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Whether the server listens beyond loopback (settings and credentials are then read-only
    /// unless the launch allowed them).
    pub remote: bool,
    /// Whether `session.demo` (the offline demo, a recorded session replayed) is available.
    #[serde(default)]
    pub demo: bool,
}

/// One row of `session.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// The working directory the session runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    /// When its log last changed (milliseconds since the epoch).
    pub updated_at: i64,
    /// When its conversation last had a message, a person's or the model's; absent while it
    /// has none. A list orders by it: opening, renaming or configuring a session is no activity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whether it is open in this host.
    pub live: bool,
    /// Whether its running turn waits for a person's answer (an approval, a question).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
    /// Put away by a person: kept, searchable, listed apart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
    /// The parent session of a subagent's session (a child shown under its parent's card,
    /// not in the list of conversations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_of: Option<String>,
    /// The session a fork was seeded from (its conversation up to a point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_of: Option<String>,
    /// Why the stored session cannot be opened (its file does not read as a session): listed
    /// beside the others so one bad file hides nothing. Its `id` is then its folder's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broken: Option<String>,
}

/// The value of `session.list`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    pub sessions: Vec<SessionSummary>,
}

/// `session.search`'s payload: text to find in the conversations' messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchRequest {
    pub query: String,
    /// At most this many sessions (20 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// A session whose conversation holds the text searched for: its latest message that does,
/// around the match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub session_id: String,
    /// The message's seq in the session's log.
    pub seq: u64,
    /// Up to a line of the message around the match.
    pub snippet: String,
}

/// The value of `session.search`: sessions with the latest activity first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
}

/// One row of the running tree, as `host.plugins` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginRow {
    pub row: String,
    pub plugin: String,
    /// PENDING, LOADING, ACTIVE, FAILED, UNLOADING or DISPOSED.
    pub state: String,
    /// For a pending row: the services it waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The value of `host.plugins`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginList {
    pub plugins: Vec<PluginRow>,
}

/// `session.archive`'s payload: put a session away (or back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveRequest {
    pub session_id: String,
    pub archived: bool,
}

/// `files.complete`'s payload: the start of a path a person is typing after `@`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteFiles {
    pub session_id: String,
    pub query: String,
}

/// The value of `files.complete`: paths relative to the session's folder, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileCompletions {
    pub files: Vec<String>,
    /// The folder held more files than were looked at.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// `session.history`'s payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRequest {
    pub session_id: String,
    /// How many items of the tail (default 200).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// `session.create`'s payload: where the agent works and which model it uses (the host's
/// directory and default model when absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateRequest {
    pub cwd: Option<String>,
    /// `PROVIDER/MODEL`.
    pub model: Option<String>,
}

/// `session.create`'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    pub session_id: String,
}

/// How a prompt joins a session: after the running turn (`queue`, a turn of its own) or into
/// it, at the next step boundary (`steer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PromptMode {
    #[default]
    Queue,
    Steer,
}

/// `session.prompt`'s payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendPrompt {
    pub session_id: String,
    pub text: String,
    #[serde(default)]
    pub mode: PromptMode,
    /// A retried call with the same id is sent once.
    #[serde(default)]
    pub client_request_id: Option<String>,
}

/// `session.prompt`'s value: the queued message's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptAccepted {
    /// The queued message's id (empty for a command, which queues nothing).
    pub message_id: String,
    /// A prompt that was a command line ran as a command: its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<crate::CommandOutcome>,
}

/// `approval.respond`'s payload: a person's answer to a pending approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAnswer {
    pub approval_id: String,
    /// `allowed-once` or `rejected`.
    pub outcome: crate::tools::ApprovalOutcome,
    /// How far an `allowed-once` reaches (default: this call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::ApprovalScope>,
}

/// `approval.respond`'s value: whether this answer decided it (the first answer wins; a later
/// one, or one for an approval no longer pending, is not accepted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerReceipt {
    pub accepted: bool,
    /// The allow rule an `always` answer wrote to the user's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// One secret the settings know of, never its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialState {
    /// Named as the environment variable it stands in for (`DEEPSEEK_API_KEY`).
    pub name: String,
    /// Stored through the settings (it wins over the environment).
    pub stored: bool,
    /// Set in the environment the host was started in.
    pub in_environment: bool,
}

/// `credentials.describe`'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsDescription {
    pub credentials: Vec<CredentialState>,
    /// Whether they may be changed from this client (not over the network unless the launch
    /// allowed it).
    pub writable: bool,
}

/// `credentials.set`'s payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetCredential {
    pub name: String,
    pub value: String,
}

/// `credentials.unset`'s payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialName {
    pub name: String,
}

/// `session.item`'s payload: one item, whole (its texts uncut).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemRequest {
    pub session_id: String,
    pub item_id: String,
}

/// `settings.describe`'s value: the settings the page may change, as they are now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsDescription {
    /// The DeepSeek (or OpenAI-compatible) endpoint the default adapter calls; absent: the
    /// adapter's own default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Whether they may be changed from this client.
    pub writable: bool,
}

/// `settings.update`'s payload: the values to change; `null` (or absent) goes back to the
/// default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SettingsUpdate {
    pub base_url: Option<String>,
}

/// `session.models`'s payload: the routes, and the route of `session_id` when given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelsRequest {
    pub session_id: Option<String>,
}

/// One model route a session can use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelRoute {
    /// `PROVIDER/MODEL`, as `session.selectModel` takes it.
    pub route: String,
    /// For a person: the catalog's name, or the id.
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// `session.models`'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelList {
    pub models: Vec<ModelRoute>,
    /// The session's route (or the default one for new sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
}

/// `session.selectModel`'s payload: the route of the session's next turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectModel {
    pub session_id: String,
    pub model: String,
}

/// `session.rename`'s payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenameRequest {
    pub session_id: String,
    pub title: String,
}

/// `session.fork`'s payload: a new session with the history up to and including `item_id`
/// (the whole history without it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkRequest {
    pub session_id: String,
    #[serde(default)]
    pub item_id: Option<String>,
}

/// `session.updateQueue`'s payload: what to do with one waiting message of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateQueue {
    pub session_id: String,
    /// The waiting message's id, as the `session/queue` frame lists it.
    pub item_id: String,
    #[serde(flatten)]
    pub action: crate::QueueAction,
}

/// `session.setPermission`'s payload: the permission preset of a session's next calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetPermission {
    pub session_id: String,
    /// `read-only`, `workspace-write` or `danger-full-access`.
    pub preset: String,
}

/// The payload of the methods that name only a session (`session.cancel`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    pub session_id: String,
}

/// The payload of `session.killJob`: a person's stop button on one background job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobRef {
    pub session_id: String,
    pub job_id: String,
}

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
        queue: crate::agent::InboxListing,
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

#[cfg(test)]
#[path = "web_tests.rs"]
mod tests;
