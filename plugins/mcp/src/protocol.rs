//! The MCP wire vocabulary this client reads and writes: JSON-RPC 2.0 messages and the
//! results of `initialize`, the `*/list` methods and `tools/call`, as serde types. Fields a
//! server may add in a later revision are ignored; the few values that stay opaque (a tool's
//! input schema, a call's arguments, structured content) are `Value`s passed on as they are.

use dsh_plugin_api::{Deserialize, Serialize};
use serde_json::Value;

/// The revision this client asks for first.
pub(crate) const LATEST: &str = "2025-11-25";

/// Every revision this client speaks, newest first; a server may answer any of them.
pub(crate) const SUPPORTED: [&str; 4] = [LATEST, "2025-06-18", "2025-03-26", "2024-11-05"];

/// JSON-RPC's "method not found".
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// A JSON-RPC id: servers answer with the id they were sent, and send their own (numbers or
/// strings) with their requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", untagged)]
pub(crate) enum Id {
    Number(i64),
    Text(String),
}

/// Any message, as read off the wire.
#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Incoming {
    #[serde(default)]
    pub(crate) id: Option<Id>,
    #[serde(default)]
    pub(crate) method: Option<String>,
    #[serde(default)]
    pub(crate) result: Option<Value>,
    #[serde(default)]
    pub(crate) error: Option<RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(crate = "dsh_plugin_api::serde")]
#[error("{message} (code {code})")]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) data: Option<Value>,
}

/// A request or a notification (no id) this client sends.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Outgoing<'a, P: Serialize> {
    pub(crate) jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<Id>,
    pub(crate) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<P>,
}

/// This client's answer to a server's request.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Reply<R: Serialize> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) id: Id,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<RpcError>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct InitializeParams {
    pub(crate) protocol_version: &'static str,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) client_info: Implementation,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct ClientCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) roots: Option<RootsCapability>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct RootsCapability {
    pub(crate) list_changed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Implementation {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) version: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct InitializeResult {
    pub(crate) protocol_version: String,
    #[serde(default)]
    pub(crate) capabilities: ServerCapabilities,
    #[serde(default)]
    pub(crate) server_info: Option<Implementation>,
}

/// What the server offers; a present key means the feature is there.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct ServerCapabilities {
    #[serde(default)]
    pub(crate) tools: Option<Value>,
    #[serde(default)]
    pub(crate) resources: Option<Value>,
    #[serde(default)]
    pub(crate) prompts: Option<Value>,
}

/// The params of a `*/list` request.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct ListParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<String>,
}

/// One page of a `*/list` answer; `items` is the list under the method's own key.
#[derive(Debug, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Page<T> {
    #[serde(alias = "tools", alias = "resources", alias = "prompts")]
    pub(crate) items: Vec<T>,
    #[serde(default)]
    pub(crate) next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct ToolInfo {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) title: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) input_schema: Value,
    #[serde(default)]
    pub(crate) annotations: Option<ToolAnnotations>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct ToolAnnotations {
    #[serde(default)]
    pub(crate) read_only_hint: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct ResourceInfo {
    pub(crate) uri: String,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) mime_type: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct PromptInfo {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct CallParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct CallResult {
    #[serde(default)]
    pub(crate) content: Vec<Content>,
    #[serde(default)]
    pub(crate) structured_content: Option<Value>,
    #[serde(default)]
    pub(crate) is_error: bool,
}

/// One block of a call's result.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    crate = "dsh_plugin_api::serde",
    tag = "type",
    rename_all = "snake_case"
)]
pub(crate) enum Content {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType", default)]
        mime_type: String,
    },
    Audio {
        data: String,
        #[serde(rename = "mimeType", default)]
        mime_type: String,
    },
    ResourceLink {
        uri: String,
        #[serde(default)]
        name: String,
        #[serde(rename = "mimeType", default)]
        mime_type: Option<String>,
    },
    Resource {
        resource: EmbeddedResource,
    },
    /// A block type of a later revision.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct EmbeddedResource {
    pub(crate) uri: String,
    #[serde(default)]
    pub(crate) mime_type: Option<String>,
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) blob: Option<String>,
}

/// `notifications/cancelled`.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Cancelled {
    pub(crate) request_id: Id,
    pub(crate) reason: &'static str,
}

/// The answer to `roots/list`.
#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Roots {
    pub(crate) roots: Vec<Root>,
}

#[derive(Debug, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Root {
    pub(crate) uri: String,
    pub(crate) name: String,
}

/// An empty object (the answer to `ping`, the params of `notifications/initialized`).
#[derive(Debug, Default, Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
pub(crate) struct Empty {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_result_reads_every_block_kind_and_skips_unknown_ones() {
        let result: CallResult = serde_json::from_str(
            r#"{"content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "demo://a", "name": "a"},
                {"type": "resource", "resource": {"uri": "demo://b", "text": "body"}},
                {"type": "hologram", "beam": 1}
            ], "structuredContent": {"sum": 3}, "isError": true}"#,
        )
        .unwrap();
        assert_eq!(result.content.len(), 5);
        assert!(matches!(result.content[4], Content::Unknown));
        assert!(result.is_error);
    }

    #[test]
    fn a_page_reads_under_the_methods_own_key() {
        let page: Page<ToolInfo> = serde_json::from_str(
            r#"{"tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "nextCursor": "2"}"#,
        )
        .unwrap();
        assert_eq!(page.items[0].name, "echo");
        assert_eq!(page.next_cursor.as_deref(), Some("2"));
    }
}
