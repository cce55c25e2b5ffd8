//! The envelope of a unary call as the page's HTTP transport carries it (`POST /api/<method>`:
//! a client-request in, a server-response out) and the closed set of error codes every
//! transport answers with. Names follow the reference's web API, so its clients read ours.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// What arrived is not JSON (JSON-RPC -32700).
    ParseError,
    /// No such method (JSON-RPC -32601).
    MethodNotFound,
    /// The envelope or the params do not have the method's shape (JSON-RPC -32602).
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
    /// An image was refused (not an image, too large, an unsupported type, a model that
    /// takes none); the message starts with the store's code (`IMAGE_TOO_LARGE: ...`).
    AttachmentRejected,
    /// No agent preset by that id.
    AgentPresetNotFound,
    /// The preset does not read (the file and the field are named) or cannot run.
    AgentPresetInvalid,
    /// A shipped preset cannot be changed or removed.
    AgentPresetReadOnly,
    /// A preset by that id exists already.
    AgentPresetConflict,
    /// A provider's id, URL or key cannot be used (the field is named).
    ProviderRejected,
    /// A provider's id is a route another adapter serves already.
    ProviderConflict,
    /// No provider by that id was added in the settings.
    ProviderNotFound,
    /// The endpoint's `GET /models` failed; the message names the URL and its status.
    ProviderDiscoveryFailed,
    /// The server failed; the message says where.
    Internal,
}

impl RpcErrorCode {
    /// The JSON-RPC 2.0 code of a transport that speaks JSON-RPC: the standard ones where they
    /// fit, an application code (-32000 and below, with the name in `data.code`) otherwise.
    pub fn json_rpc_code(self) -> i64 {
        match self {
            Self::ParseError => -32700,
            Self::MethodNotFound => -32601,
            Self::BadRequest => -32602,
            Self::Internal => -32603,
            Self::Cancelled => -32000,
            // -32001 as the SDK runtime answers a second prompt on a running session; -32002
            // and -32003 are the line transports' own (not initialized, shutting down).
            Self::AgentBusy => -32001,
            Self::SessionNotFound => -32010,
            Self::ModelUnavailable => -32011,
            Self::SessionConflict => -32012,
            Self::QueueItemNotFound => -32013,
            Self::SteerUnavailable => -32014,
            Self::SettingsRejected => -32015,
            Self::SettingsConflict => -32016,
            Self::CredentialRejected => -32017,
            Self::TitleInvalid => -32018,
            Self::ForkUnavailable => -32019,
            Self::AttachmentRejected => -32020,
            Self::AgentPresetNotFound => -32021,
            Self::AgentPresetInvalid => -32022,
            Self::AgentPresetReadOnly => -32023,
            Self::AgentPresetConflict => -32024,
            Self::ProviderRejected => -32025,
            Self::ProviderConflict => -32026,
            Self::ProviderNotFound => -32027,
            Self::ProviderDiscoveryFailed => -32028,
        }
    }

    /// The code's name as it is written on the wire (`agent-busy`).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[path = "envelope_tests.rs"]
mod tests;
