//! Every request a client sends, as one enum tagged by its method with its params beside it
//! (`{"method": "session.prompt", "params": {...}}`), each method's result type, and how a
//! method name and its params are read from a transport: an unknown method and params that do
//! not fit are told apart, the latter naming the field.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::goals::{GoalCreate, GoalEdit, GoalState, GoalTarget};
use crate::handshake::{Initialize, Initialized, SubscribeRequest};
use crate::payloads::*;
use crate::presets::{CopyPreset, PresetList, PresetRef, SelectPreset};
use crate::providers::{DiscoverModels, DiscoveredModels, ProviderList, ProviderRef, SaveProvider};
use crate::{AttachmentData, ChatItem, ReadAttachment, SessionHistory, Trajectory, UploadImage};

/// The params of a method that takes none (`{}`; absent or `null` reads the same).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoParams {}

/// Why a method and its params do not make a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("no method `{0}`")]
    UnknownMethod(String),
    #[error("{method}: the params do not fit at `{field}`: {message}")]
    BadParams {
        method: String,
        /// Where in the params (`sessionId`, `action.text`; `.` for the params as a whole).
        field: String,
        message: String,
    },
}

/// Declares the methods once: the enum, the list of names, each variant's name and the schema
/// of each method's params and result.
macro_rules! methods {
    ($( $(#[doc = $doc:literal])* $name:literal => $variant:ident($params:ty) -> $result:ty; )*) => {
        /// A client's request: its method and params.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "method", content = "params")]
        pub enum ClientRequest {
            $( $(#[doc = $doc])* #[serde(rename = $name)] $variant($params), )*
        }

        /// Every method's name, in the order of the protocol's documentation.
        pub const METHODS: &[&str] = &[$($name),*];

        impl ClientRequest {
            /// The method's name.
            pub fn method(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => $name, )*
                }
            }
        }

        /// `(method, params schema, result schema)` of every method.
        pub(crate) fn method_schemas(
            generator: &mut schemars::SchemaGenerator,
        ) -> Vec<(&'static str, schemars::Schema, schemars::Schema)> {
            vec![$( ($name, generator.subschema_for::<$params>(), generator.subschema_for::<$result>()), )*]
        }
    };
}

methods! {
    /// The first request of a connection: versions and features.
    "initialize" => Initialize(Initialize) -> Initialized;
    /// What a client needs before anything else: version, boot id, profile, directory, models.
    "host.describe" => HostDescribe(NoParams) -> HostDescription;
    /// The rows of the running tree and how each is doing.
    "host.plugins" => HostPlugins(NoParams) -> PluginList;
    /// Turns a row of the tree off or on from the settings document (the host reloads it).
    "host.setRowEnabled" => HostSetRowEnabled(RowEnabled) -> Done;
    /// The stored and live sessions, most recently active first.
    "session.list" => SessionList(NoParams) -> SessionList;
    /// Sessions whose title or messages hold a text.
    "session.search" => SessionSearch(SearchRequest) -> SearchResult;
    /// The tail of a session's conversation, as items.
    "session.history" => SessionHistory(HistoryRequest) -> SessionHistory;
    /// One item, whole.
    "session.item" => SessionItem(ItemRequest) -> ChatItem;
    /// A session's turns, steps and calls with their timings.
    "session.trajectory" => SessionTrajectory(SessionRef) -> Trajectory;
    /// A new session with its agent.
    "session.create" => SessionCreate(CreateRequest) -> Created;
    /// A stored session opened again as a live one (its directory, roots and MCP servers as
    /// asked); refused while it is live already.
    "session.open" => SessionOpen(OpenRequest) -> Created;
    /// The offline demo: a recorded session replayed.
    "session.demo" => SessionDemo(NoParams) -> Created;
    /// A person's message, queued as a turn of its own or steered into the running one; a
    /// command line runs as the command.
    "session.prompt" => SessionPrompt(SendPrompt) -> PromptAccepted;
    /// An image stored for a later prompt (`images` of `session.prompt`): its reference.
    "session.attachment" => SessionAttachment(UploadImage) -> dsh_protocol::ImageAttachment;
    /// A stored image's bytes (to show a sent prompt's images), verified against its digest.
    "attachment.read" => AttachmentRead(ReadAttachment) -> AttachmentData;
    /// Cancels the running turn.
    "session.cancel" => SessionCancel(SessionRef) -> Done;
    /// Drops, edits or steers one waiting message.
    "session.updateQueue" => SessionUpdateQueue(UpdateQueue) -> Done;
    "session.rename" => SessionRename(RenameRequest) -> Done;
    /// A new session seeded with a conversation up to an item.
    "session.fork" => SessionFork(ForkRequest) -> Created;
    /// Moves a session to the trash.
    "session.delete" => SessionDelete(SessionRef) -> Done;
    /// Brings a session back from the trash.
    "session.restore" => SessionRestore(SessionRef) -> Done;
    "session.archive" => SessionArchive(ArchiveRequest) -> Done;
    /// The model routes, and the session's.
    "session.models" => SessionModels(ModelsRequest) -> ModelList;
    "session.selectModel" => SessionSelectModel(SelectModel) -> Done;
    /// The permission preset of the session's next calls.
    "session.setPermission" => SessionSetPermission(SetPermission) -> Done;
    /// The session's token meter.
    "session.context" => SessionContext(SessionRef) -> ContextMeter;
    /// Stops one background job.
    "session.killJob" => SessionKillJob(JobRef) -> JobKilled;
    /// Reverts the workspace changes of turn `turn` and of every later turn ("rewind to
    /// here"), or of the last turn with changes when no turn is given, as `/rewind` and
    /// `/undo` do; answers the command's outcome (a refusal names the conflicting files).
    "session.rewind" => SessionRewind(RewindRequest) -> dsh_protocol::CommandOutcome;
    /// Follows a session on this connection (frames `session/update`, then live).
    "session.subscribe" => SessionSubscribe(SubscribeRequest) -> Done;
    "session.unsubscribe" => SessionUnsubscribe(SessionRef) -> Done;
    /// The commands a prompt can run.
    "commands.list" => CommandsList(NoParams) -> CommandList;
    /// Runs a command line in a session, never as a message to the model (`session.prompt`
    /// sends a line no command answers to the model): its outcome, an unknown command's
    /// included.
    "commands.run" => CommandsRun(RunCommand) -> dsh_protocol::CommandOutcome;
    /// Paths under the session's directory that start with what a person typed after `@`.
    "files.complete" => FilesComplete(CompleteFiles) -> FileCompletions;
    "settings.describe" => SettingsDescribe(NoParams) -> SettingsDescription;
    "settings.update" => SettingsUpdate(SettingsUpdate) -> Done;
    "credentials.describe" => CredentialsDescribe(NoParams) -> CredentialsDescription;
    "credentials.set" => CredentialsSet(SetCredential) -> Done;
    "credentials.unset" => CredentialsUnset(CredentialName) -> Removed;
    /// The OpenAI-compatible providers added in the settings, their keys masked.
    "provider.list" => ProviderList(NoParams) -> ProviderList;
    /// The model ids an endpoint lists at `GET {baseUrl}/models` (nothing is saved).
    "provider.discover" => ProviderDiscover(DiscoverModels) -> DiscoveredModels;
    /// Adds a provider or changes one (its models discovered first; loopback clients only):
    /// its models are offered by `session.models` once the host has loaded it.
    "provider.save" => ProviderSave(SaveProvider) -> DiscoveredModels;
    /// Removes a provider added in the settings and its stored key (loopback clients only).
    "provider.remove" => ProviderRemove(ProviderRef) -> Done;
    /// Whether the host's project is trusted (its hooks, MCP servers and settings apply).
    "project.describe" => ProjectDescribe(NoParams) -> dsh_protocol::ProjectTrust;
    "project.trust" => ProjectTrust(NoParams) -> dsh_protocol::ProjectTrust;
    /// A session's goal (`null` when it has none).
    "goal.get" => GoalGet(SessionRef) -> GoalState;
    /// Sets a session's goal (a completed one is replaced); the agent starts towards it.
    "goal.create" => GoalCreate(GoalCreate) -> GoalState;
    "goal.edit" => GoalEdit(GoalEdit) -> GoalState;
    /// Stops the agent going on towards the goal by itself.
    "goal.pause" => GoalPause(GoalTarget) -> GoalState;
    "goal.resume" => GoalResume(GoalTarget) -> GoalState;
    "goal.complete" => GoalComplete(GoalTarget) -> GoalState;
    "goal.clear" => GoalClear(GoalTarget) -> GoalState;
    /// The agent presets (shipped and the user's) and the default.
    "agentPreset.list" => AgentPresetList(NoParams) -> PresetList;
    /// A preset's files (preset.yml, agent.yml, its prompt).
    "agentPreset.read" => AgentPresetRead(PresetRef) -> dsh_protocol::PresetFiles;
    /// A new user preset copied from another, to edit (loopback clients only).
    "agentPreset.copy" => AgentPresetCopy(CopyPreset) -> dsh_protocol::PresetSummary;
    /// Removes a user preset (loopback clients only; shipped ones are read-only).
    "agentPreset.remove" => AgentPresetRemove(PresetRef) -> Done;
    /// Makes a preset the one new sessions run (written in the settings document; loopback
    /// clients only).
    "agentPreset.setDefault" => AgentPresetSetDefault(PresetRef) -> Done;
    /// Switches a session that has had no turn to another preset.
    "agentPreset.select" => AgentPresetSelect(SelectPreset) -> Done;
    /// A person's answer to an approval; the first answer of any client wins.
    "approval.respond" => ApprovalRespond(ApprovalAnswer) -> AnswerReceipt;
    /// A person's answers to a question; the first answer of any client wins.
    "question.respond" => QuestionRespond(dsh_protocol::QuestionResponse) -> AnswerReceipt;
}

impl ClientRequest {
    /// Reads `method` with its `params` (absent or `null` for none).
    pub fn parse(method: &str, params: serde_json::Value) -> Result<Self, RequestError> {
        if !METHODS.contains(&method) {
            return Err(RequestError::UnknownMethod(method.to_owned()));
        }
        let params = match params {
            serde_json::Value::Null => serde_json::Value::Object(serde_json::Map::new()),
            other => other,
        };
        let mut envelope = serde_json::Map::new();
        envelope.insert("method".to_owned(), serde_json::Value::from(method));
        envelope.insert("params".to_owned(), params);
        serde_path_to_error::deserialize(serde_json::Value::Object(envelope)).map_err(|error| {
            let path = error.path().to_string();
            let field = path
                .strip_prefix("params.")
                .or_else(|| path.strip_prefix("params"))
                .filter(|rest| !rest.is_empty())
                .unwrap_or(".")
                .to_owned();
            RequestError::BadParams {
                method: method.to_owned(),
                field,
                message: error.into_inner().to_string(),
            }
        })
    }

    /// The request's params as JSON text, as the clients seam's `ClientConnection::call`
    /// takes them beside the method (`{}` for none).
    pub fn params_text(&self) -> Result<String, serde_json::Error> {
        #[derive(Deserialize)]
        struct Envelope {
            params: Box<serde_json::value::RawValue>,
        }
        let whole = serde_json::to_string(self)?;
        let envelope: Envelope = serde_json::from_str(&whole)?;
        Ok(envelope.params.get().to_owned())
    }

    /// The session the request names, if it names one (checked before any service sees it).
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Self::SessionHistory(HistoryRequest { session_id, .. })
            | Self::SessionItem(ItemRequest { session_id, .. })
            | Self::SessionPrompt(SendPrompt { session_id, .. })
            | Self::SessionAttachment(UploadImage { session_id, .. })
            | Self::SessionUpdateQueue(UpdateQueue { session_id, .. })
            | Self::SessionRename(RenameRequest { session_id, .. })
            | Self::SessionFork(ForkRequest { session_id, .. })
            | Self::SessionArchive(ArchiveRequest { session_id, .. })
            | Self::SessionSelectModel(SelectModel { session_id, .. })
            | Self::SessionSetPermission(SetPermission { session_id, .. })
            | Self::SessionKillJob(JobRef { session_id, .. })
            | Self::SessionRewind(RewindRequest { session_id, .. })
            | Self::SessionSubscribe(SubscribeRequest { session_id, .. })
            | Self::FilesComplete(CompleteFiles { session_id, .. })
            | Self::AgentPresetSelect(SelectPreset { session_id, .. })
            | Self::SessionOpen(OpenRequest { session_id, .. })
            | Self::CommandsRun(RunCommand { session_id, .. }) => Some(session_id),
            Self::SessionTrajectory(SessionRef { session_id })
            | Self::SessionCancel(SessionRef { session_id })
            | Self::SessionDelete(SessionRef { session_id })
            | Self::SessionRestore(SessionRef { session_id })
            | Self::SessionContext(SessionRef { session_id })
            | Self::SessionUnsubscribe(SessionRef { session_id }) => Some(session_id),
            Self::SessionModels(ModelsRequest { session_id }) => session_id.as_deref(),
            Self::GoalGet(SessionRef { session_id })
            | Self::GoalCreate(GoalCreate { session_id, .. })
            | Self::GoalEdit(GoalEdit { session_id, .. })
            | Self::GoalPause(GoalTarget { session_id, .. })
            | Self::GoalResume(GoalTarget { session_id, .. })
            | Self::GoalComplete(GoalTarget { session_id, .. })
            | Self::GoalClear(GoalTarget { session_id, .. }) => Some(session_id),
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
