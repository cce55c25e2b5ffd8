//! One MCP tool as a registered tool: `mcp__<server>__<tool>`, the server's input schema sent
//! as given (the server checks its own arguments), parallel-safe when the server marks it
//! read-only. A call goes to the server's current connection; while the server is down the
//! call answers at once with why, and when it comes back.

use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::{Context, Json};
use dsh_protocol::{Concurrency, ContentBlock, OutcomeSummary, ToolDecl, ToolError, ToolReply};
use dsh_tools_seam::{CallView, Tool};
use serde_json::Value;

use crate::protocol::{CallParams, CallResult, ToolInfo};
use crate::rpc::CallError;
use crate::server::Server;

/// Tool names models accept: letters, digits, `_` and `-`, at most 64 characters.
const MAX_NAME: usize = 64;

pub(crate) fn sanitize(name: &str) -> String {
    name.chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// The registered name of `tool` of `server`.
pub(crate) fn tool_name(server: &str, tool: &str) -> String {
    let mut name = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    name.truncate(MAX_NAME);
    name
}

/// A short tag of `text` (FNV-1a, four hex digits): the same for the same tool every time, so
/// a rule naming a suffixed tool keeps naming it across restarts.
fn tag(text: &str) -> String {
    let hash = text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    });
    format!("{:04x}", hash & 0xffff)
}

/// The registered names of a server's `tools`, each unique: where two become the same name
/// once sanitized (`read.file` and `read_file`) or truncated, the first in the server's order
/// keeps it and the others get a short suffix of their own name. Answers the names and a
/// warning for each clash, naming the originals.
pub(crate) fn tool_names(
    server: &str,
    tools: Vec<ToolInfo>,
) -> (std::collections::BTreeMap<String, ToolInfo>, Vec<String>) {
    let mut named = std::collections::BTreeMap::<String, ToolInfo>::new();
    let mut warnings = Vec::new();
    for info in tools {
        let plain = tool_name(server, &info.name);
        let Some(holder) = named.get(&plain).map(|held| held.name.clone()) else {
            named.insert(plain, info);
            continue;
        };
        if holder == info.name {
            warnings.push(format!(
                "mcp `{server}`: the server lists tool `{holder}` twice; the first is kept"
            ));
            continue;
        }
        let mut name = suffixed(&plain, &tag(&info.name));
        let mut extra = 1_u32;
        while named.contains_key(&name) {
            name = suffixed(&plain, &format!("{}{extra}", tag(&info.name)));
            extra += 1;
        }
        warnings.push(format!(
            "mcp `{server}`: tools `{holder}` and `{}` both become `{plain}`; the second is `{name}`",
            info.name
        ));
        named.insert(name, info);
    }
    (named, warnings)
}

/// `name` with `_<suffix>`, kept within the length models accept.
fn suffixed(name: &str, suffix: &str) -> String {
    let mut base = name.to_owned();
    base.truncate(MAX_NAME.saturating_sub(suffix.len() + 1));
    format!("{base}_{suffix}")
}

pub(crate) struct McpTool {
    /// The registered name (see `tool_names`).
    pub(crate) name: String,
    pub(crate) server: Arc<Server>,
    pub(crate) info: ToolInfo,
    pub(crate) timeout_ms: Option<u64>,
    /// For the attachment store and the calling session's route (images in results).
    pub(crate) ctx: Context,
}

fn failure(message: String, name: &str, code: &str) -> ToolReply {
    ToolReply::Error(ToolError::new(message).coded(name, code))
}

impl McpTool {
    async fn call(&self, session: &str, arguments: &str, cancel: CancelBox) -> ToolReply {
        let server = &self.server.name;
        let tool = &self.info.name;
        let arguments: Value = match arguments.trim() {
            "" => Value::Object(serde_json::Map::new()),
            text => match serde_json::from_str(text) {
                Ok(value @ Value::Object(_)) => value,
                Ok(_) | Err(_) => {
                    return failure(
                        format!("the arguments of `{tool}` must be a JSON object"),
                        "InvalidArgsError",
                        "INVALID_ARGS",
                    );
                }
            },
        };
        let connection = match self.server.connection() {
            Ok(connection) => connection,
            Err(why) => {
                return failure(
                    why.to_string(),
                    "McpUnavailableError",
                    "MCP_SERVER_UNAVAILABLE",
                );
            }
        };
        let params = CallParams {
            name: tool,
            arguments,
        };
        let answer: Result<CallResult, CallError> = connection
            .request("tools/call", params, cancel.cancelled())
            .await;
        match answer {
            Ok(result) => crate::images::reply(&self.ctx, session, server, tool, result).await,
            Err(CallError::Rpc(error)) => failure(
                format!("MCP server `{server}` refused the call of `{tool}`: {error}"),
                "McpError",
                "MCP_ERROR",
            ),
            Err(CallError::Closed(why)) => failure(
                format!(
                    "MCP server `{server}` went away during the call of `{tool}` ({why}); it is being restarted, and the call may or may not have taken effect"
                ),
                "McpUnavailableError",
                "MCP_SERVER_UNAVAILABLE",
            ),
            Err(CallError::Malformed(why)) => failure(
                format!(
                    "MCP server `{server}` answered the call of `{tool}` with something unreadable: {why}"
                ),
                "McpError",
                "MCP_ERROR",
            ),
            Err(CallError::Cancelled) => failure(
                format!("the call of `{tool}` was cancelled (the server was told)"),
                "AbortError",
                "ABORTED",
            ),
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> Json<ToolDecl> {
        let description = self
            .info
            .description
            .clone()
            .or_else(|| self.info.title.clone())
            .unwrap_or_else(|| {
                format!(
                    "The tool `{}` of MCP server `{}`.",
                    self.info.name, self.server.name
                )
            });
        let mut parameters = self.info.input_schema.clone();
        if !parameters.is_object() {
            parameters = Value::Object(
                [("type".to_owned(), Value::String("object".to_owned()))]
                    .into_iter()
                    .collect(),
            );
        }
        let mut decl = ToolDecl::new(self.name.clone(), description, parameters);
        decl.passthrough = true;
        decl.timeout_ms = self.timeout_ms;
        let read_only = self
            .info
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.read_only_hint)
            == Some(true);
        if read_only {
            decl.concurrency = Concurrency::Parallel;
        }
        Json::encode(&decl)
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = Self {
            name: self.name.clone(),
            server: self.server.clone(),
            info: self.info.clone(),
            timeout_ms: self.timeout_ms,
            ctx: self.ctx.clone(),
        };
        async move { Json::encode(&tool.call(&call.session, &call.arguments, cancel).await) }
            .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

#[cfg(test)]
mod tests {
    use super::{tool_name, tool_names};
    use crate::protocol::ToolInfo;

    fn info(name: &str) -> ToolInfo {
        serde_json::from_value(serde_json::json!({"name": name, "inputSchema": {"type": "object"}}))
            .unwrap()
    }

    #[test]
    fn names_equal_once_sanitized_get_a_suffix_and_a_warning() {
        let (names, warnings) = tool_names(
            "s",
            vec![info("read.file"), info("read_file"), info("other")],
        );
        let keys: Vec<&String> = names.keys().collect();
        assert_eq!(keys.len(), 3, "{keys:?}");
        assert_eq!(names["mcp__s__read_file"].name, "read.file");
        let suffixed = keys
            .iter()
            .find(|key| key.starts_with("mcp__s__read_file_"))
            .unwrap();
        assert_eq!(names[*suffixed].name, "read_file");
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("`read.file`") && warnings[0].contains("`read_file`"),
            "{warnings:?}"
        );
        // The same every time.
        let (again, _) = tool_names("s", vec![info("read.file"), info("read_file")]);
        assert!(again.contains_key(suffixed.as_str()));
        let long = "x".repeat(100);
        let (long_names, _) = tool_names("s", vec![info(&long), info(&format!("{long}y"))]);
        assert!(
            long_names.keys().all(|name| name.len() <= 64),
            "{long_names:?}"
        );
        assert_eq!(long_names.len(), 2);
    }

    #[test]
    fn names_keep_to_what_models_accept() {
        assert_eq!(
            tool_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(
            tool_name("my.server", "read file"),
            "mcp__my_server__read_file"
        );
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    }
}
