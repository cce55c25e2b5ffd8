//! The params and results of the methods: sessions, prompts, queue, models, permissions,
//! approvals, settings and credentials, the host's description.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use dsh_protocol::McpServerSpec;
use dsh_protocol::{PluginRow, SearchHit, SessionSummary};

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

/// The value of `session.search`: sessions with the latest activity first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
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
    /// The agent preset it runs (default: the configured default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_preset: Option<String>,
    /// Directories its calls may write besides its working directory (absolute paths; the
    /// host's `sandbox` row must provide writable roots per session).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    /// MCP servers of this session alone: their tools are offered to it and to no other
    /// session, and they stop with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerSpec>,
}

/// `session.open`'s payload: a stored session opened again as a live one, working in `cwd`
/// (its recorded directory when absent), with what a new one may have besides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenRequest {
    pub session_id: String,
    #[serde(default)]
    pub cwd: Option<String>,
    /// `PROVIDER/MODEL` of its next turns (its own when absent).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerSpec>,
}

/// `session.create`'s and `session.open`'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    pub session_id: String,
    /// What the person should be told of it: the MCP servers it asked for that did not start,
    /// and why (the session works without them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    /// Images uploaded with `session.attachment`, after the text (the session's model must
    /// take images).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<dsh_protocol::ImageAttachment>,
}

/// `session.prompt`'s value: the queued message's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptAccepted {
    /// The queued message's id (empty for a command, which queues nothing).
    pub message_id: String,
    /// A prompt that was a command line ran as a command: its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<dsh_protocol::CommandOutcome>,
}

/// `approval.respond`'s payload: a person's answer to a pending approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAnswer {
    pub approval_id: String,
    /// `allowed-once` or `rejected`.
    pub outcome: dsh_protocol::ApprovalOutcome,
    /// How far an `allowed-once` reaches (default: this call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<dsh_protocol::ApprovalScope>,
    /// A note with a `rejected` answer, passed to the model (a plan review's "keep planning").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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

/// `host.setRowEnabled`'s payload: the row (its id, as `host.plugins` lists it) and whether
/// it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RowEnabled {
    pub row: String,
    pub enabled: bool,
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
    /// The reasoning efforts the model offers (`off`, `low`, `high`, `max` for DeepSeek), in
    /// display order; empty: none to choose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub efforts: Vec<String>,
    /// The effort a request gets when none is chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_effort: Option<String>,
}

/// `session.models`'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelList {
    pub models: Vec<ModelRoute>,
    /// The session's route (or the default one for new sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// The reasoning effort chosen for the session's route; absent: its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// `session.selectModel`'s payload: the route of the session's next turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectModel {
    pub session_id: String,
    pub model: String,
    /// One of the model's efforts for the session's next requests; absent: its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
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
    pub action: dsh_protocol::QueueAction,
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

/// The result of a method that answers nothing beyond its success (`{}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Done {}

/// `credentials.unset`'s result: whether a stored value was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Removed {
    pub removed: bool,
}

/// `commands.list`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandList {
    pub commands: Vec<dsh_protocol::CommandSpec>,
}

/// `commands.run`'s payload: a command line (`/name args`) to run in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCommand {
    pub session_id: String,
    pub line: String,
}

/// `session.killJob`'s result: what `job_kill` would have told the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobKilled {
    pub message: String,
}

/// `session.context`'s result: the compaction row's token meter, or without that row
/// `{tokens, window}` from the session's latest answered request.
pub type ContextMeter = serde_json::Value;

/// The payload of `session.rewind`: revert the workspace to how it was before turn `turn`
/// (absent: undo the last turn with changes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindRequest {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
}
