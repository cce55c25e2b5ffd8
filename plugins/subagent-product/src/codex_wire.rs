//! Codex app-server's wire vocabulary, the part a one-shot run reads and writes, as serde
//! types: JSON-RPC requests, responses and notifications (Codex sends no `jsonrpc` member and
//! takes one), the `initialize`, `thread/start`, `turn/start` and `turn/interrupt` calls, the
//! `item/completed` and `turn/completed` notifications, and the answers to the requests Codex
//! makes of a person. Fields Codex adds are ignored; the error variants it adds read as
//! `unknown`.

use std::collections::BTreeMap;

use dsh_plugin_api::{Deserialize, Serialize};
use serde_json::Value;

/// Any message, as read off the wire: a response (`id` and `result` or `error`), a request
/// Codex makes (`id` and `method`) or a notification (`method` only).
#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Incoming {
    #[serde(default)]
    pub(crate) id: Option<Value>,
    #[serde(default)]
    pub(crate) method: Option<String>,
    #[serde(default)]
    pub(crate) params: Value,
    #[serde(default)]
    pub(crate) result: Option<Value>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// A request or notification this client sends.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Outgoing<'a, P: Serialize> {
    pub(crate) jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<u64>,
    pub(crate) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<P>,
}

/// This client's answer to a request Codex made.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Reply<'a> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<ReplyError>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct ReplyError {
    pub(crate) code: i64,
    pub(crate) message: String,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Initialize {
    pub(crate) client_info: ClientInfo,
    pub(crate) capabilities: Capabilities,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct ClientInfo {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) version: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Capabilities {
    pub(crate) experimental_api: bool,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct ThreadStart<'a> {
    pub(crate) cwd: &'a str,
    pub(crate) ephemeral: bool,
    pub(crate) approval_policy: &'a str,
    pub(crate) sandbox: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) approvals_reviewer: Option<&'a str>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct TurnStart<'a> {
    pub(crate) thread_id: &'a str,
    pub(crate) input: Vec<TextInput<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct TextInput<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) text: &'a str,
    pub(crate) text_elements: Vec<Value>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct TurnInterrupt<'a> {
    pub(crate) thread_id: &'a str,
    pub(crate) turn_id: &'a str,
}

/// `{thread: {id}}` of `thread/start`, `{turn: {id}}` of `turn/start`.
#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Started {
    #[serde(default)]
    pub(crate) thread: Option<Named>,
    #[serde(default)]
    pub(crate) turn: Option<Named>,
}

#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Named {
    pub(crate) id: String,
}

/// The params of the notifications a run follows.
#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Notification {
    #[serde(default)]
    pub(crate) thread_id: Option<String>,
    #[serde(default)]
    pub(crate) turn_id: Option<String>,
    #[serde(default)]
    pub(crate) item: Option<Item>,
    #[serde(default)]
    pub(crate) turn: Option<Turn>,
}

/// A completed item: an agent message, or a command or file change (declined ones count).
#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Item {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) phase: Option<String>,
    #[serde(default)]
    pub(crate) status: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Turn {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) error: Option<TurnError>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct TurnError {
    #[serde(default)]
    pub(crate) codex_error_info: Option<ErrorInfo>,
}

/// `codexErrorInfo`: a variant's name, or an object of one variant and its detail.
#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", untagged)]
pub(crate) enum ErrorInfo {
    Named(String),
    Detailed(BTreeMap<String, ErrorDetail>),
    /// Anything else (a later revision's shape): read as `unknown`.
    Other(#[allow(dead_code, reason = "kept so any shape reads")] Value),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct ErrorDetail {
    #[serde(default)]
    pub(crate) http_status_code: Option<u64>,
}

/// The answers to the requests Codex makes of a person.
#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde", untagged)]
pub(crate) enum Answered {
    Decision {
        decision: &'static str,
    },
    Permissions {
        permissions: Empty,
        scope: &'static str,
    },
    Answers {
        answers: Empty,
    },
    Elicitation {
        action: &'static str,
        content: Option<Empty>,
        #[serde(rename = "_meta")]
        meta: Option<Empty>,
    },
}

/// `{}`.
#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Empty {}
