//! The ACP (protocol version 1) requests, results and notifications this agent reads and
//! writes, as typed values: the methods a client calls, the content blocks of a prompt, and the
//! permission question the agent asks. The `session/update` payloads are in `updates`.
//! Members the agent does not read are ignored; members it writes are in the order the
//! reference's SDK writes them.

use serde::{Deserialize, Serialize};

/// The one protocol version this agent speaks.
pub(crate) const PROTOCOL_VERSION: u16 = 1;

/// The method names this agent answers, and those it sends.
pub(crate) mod methods {
    pub(crate) const INITIALIZE: &str = "initialize";
    pub(crate) const AUTHENTICATE: &str = "authenticate";
    pub(crate) const SESSION_NEW: &str = "session/new";
    pub(crate) const SESSION_LOAD: &str = "session/load";
    pub(crate) const SESSION_LIST: &str = "session/list";
    pub(crate) const SESSION_RESUME: &str = "session/resume";
    pub(crate) const SESSION_SET_MODE: &str = "session/set_mode";
    pub(crate) const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
    pub(crate) const SESSION_PROMPT: &str = "session/prompt";
    pub(crate) const SESSION_CANCEL: &str = "session/cancel";
    pub(crate) const SESSION_UPDATE: &str = "session/update";
    pub(crate) const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
}

/// `initialize` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeRequest {
    pub(crate) protocol_version: u16,
    #[serde(default)]
    pub(crate) client_capabilities: ClientCapabilities,
}

/// What the client can do for the agent.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ClientCapabilities {
    pub(crate) fs: FsCapabilities,
    pub(crate) terminal: bool,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct FsCapabilities {
    pub(crate) read_text_file: bool,
    pub(crate) write_text_file: bool,
}

/// `initialize` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeResponse {
    pub(crate) protocol_version: u16,
    pub(crate) agent_info: Implementation,
    pub(crate) agent_capabilities: AgentCapabilities,
    pub(crate) auth_methods: Vec<AuthMethod>,
}

/// No authentication method is offered.
#[derive(Debug, Serialize)]
pub(crate) struct AuthMethod {}

#[derive(Debug, Serialize)]
pub(crate) struct Implementation {
    pub(crate) name: &'static str,
    pub(crate) version: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) load_session: Option<bool>,
    pub(crate) prompt_capabilities: PromptCapabilities,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mcp_capabilities: Option<McpCapabilities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) session_capabilities: Option<SessionCapabilities>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptCapabilities {
    pub(crate) image: bool,
    pub(crate) audio: bool,
    pub(crate) embedded_context: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct McpCapabilities {
    pub(crate) http: bool,
    pub(crate) sse: bool,
}

/// The optional session methods this agent serves (each an empty object when served).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionCapabilities {
    pub(crate) list: Served,
    pub(crate) resume: Served,
}

#[derive(Debug, Serialize)]
pub(crate) struct Served {}

/// An empty result (`authenticate`, `session/set_mode`).
#[derive(Debug, Serialize)]
pub(crate) struct Empty {}

/// One MCP server the client asks the session to use: stdio (`command`, `args`, `env`; no
/// `type`), or `http`/`sse` by `type` (`url`, `headers`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpServer {
    pub(crate) name: String,
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) command: Option<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    #[serde(default)]
    pub(crate) env: Vec<NameValue>,
    #[serde(default)]
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) headers: Vec<NameValue>,
}

/// An environment variable or an HTTP header of an [`McpServer`].
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct NameValue {
    pub(crate) name: String,
    pub(crate) value: String,
}

/// `session/new` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewSessionRequest {
    pub(crate) cwd: String,
    pub(crate) mcp_servers: Vec<McpServer>,
    #[serde(default)]
    pub(crate) additional_directories: Vec<String>,
}

/// `session/load` and `session/resume` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenSessionRequest {
    pub(crate) session_id: String,
    pub(crate) cwd: String,
    #[serde(default)]
    pub(crate) mcp_servers: Vec<McpServer>,
    #[serde(default)]
    pub(crate) additional_directories: Vec<String>,
}

/// `session/new` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewSessionResponse {
    pub(crate) session_id: String,
    #[serde(flatten)]
    pub(crate) state: SessionState,
}

/// What a session's client shows besides the conversation: its modes and config options
/// (editor mode only; automation mode answers none).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionState {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) modes: Option<SessionModeState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) config_options: Option<Vec<ConfigOption>>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionModeState {
    pub(crate) current_mode_id: String,
    pub(crate) available_modes: Vec<SessionMode>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SessionMode {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) description: String,
}

/// A select config option (the model).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConfigOption {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) category: &'static str,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) current_value: String,
    pub(crate) options: Vec<ConfigValue>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConfigValue {
    pub(crate) value: String,
    pub(crate) name: String,
}

/// `session/set_mode` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetModeRequest {
    pub(crate) session_id: String,
    pub(crate) mode_id: String,
}

/// `session/set_config_option` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetConfigOptionRequest {
    pub(crate) session_id: String,
    pub(crate) config_id: String,
    pub(crate) value: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetConfigOptionResponse {
    pub(crate) config_options: Vec<ConfigOption>,
}

/// `session/list` params.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ListSessionsRequest {
    pub(crate) cwd: Option<String>,
    pub(crate) cursor: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListSessionsResponse {
    pub(crate) sessions: Vec<SessionInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionInfo {
    pub(crate) session_id: String,
    pub(crate) cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) updated_at: Option<String>,
}

/// `session/prompt` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptRequest {
    pub(crate) session_id: String,
    pub(crate) prompt: Vec<ContentBlock>,
}

/// A block of a prompt.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum ContentBlock {
    Text { text: String },
    Image { data: String, mime_type: String },
    Audio {},
    ResourceLink { name: String, uri: String },
    Resource { resource: EmbeddedResource },
}

/// An embedded resource's contents: text (a file or a selection an editor attached), or
/// bytes (`blob`, base64).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EmbeddedResource {
    pub(crate) uri: String,
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) mime_type: Option<String>,
}

/// `session/prompt` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptResponse {
    pub(crate) stop_reason: StopReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StopReason {
    EndTurn,
    MaxTokens,
    Cancelled,
}

/// `session/cancel` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelNotification {
    pub(crate) session_id: String,
}

/// `session/request_permission` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionRequest {
    pub(crate) session_id: String,
    pub(crate) tool_call: crate::updates::ToolCallUpdate,
    pub(crate) options: Vec<PermissionOption>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PermissionOption {
    pub(crate) option_id: &'static str,
    pub(crate) name: &'static str,
    pub(crate) kind: &'static str,
}

/// `session/request_permission` result.
#[derive(Debug, Deserialize)]
pub(crate) struct PermissionResponse {
    pub(crate) outcome: PermissionOutcome,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum PermissionOutcome {
    Cancelled,
    Selected {
        #[serde(rename = "optionId")]
        option_id: String,
    },
}
