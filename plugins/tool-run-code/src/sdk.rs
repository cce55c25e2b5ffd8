//! What a program can call, told to the model: wherever `run_code` is offered, the system
//! prompt ends with the declarations of the tools its programs reach (the same chain the
//! calls are resolved in), TypeScript-like, from the tools' own schemas. Rendered per request
//! from the registry's cached schema lists, so a tool mounted later (an MCP server's) is
//! declared from the next request on.

use std::fmt::Write as _;
use std::sync::Arc;

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{PromptRequest, ToolSchema};
use dsh_system_prompt_seam::SYSTEM_PROMPT_ASSEMBLE;
use dsh_tools_seam::ToolsService;
use serde_json::Value;

use crate::NAME;
use crate::hide::Hidden;

/// How deep nested object types are spelled out; deeper ones are `object`.
const MAX_DEPTH: usize = 2;
/// How much of a tool's description a declaration keeps.
const MAX_SUMMARY: usize = 200;

/// Appends the declarations to every prompt whose scope is offered `run_code`.
pub(crate) fn install(
    ctx: &Context,
    tools: &Arc<Service<ToolsService>>,
    hidden: &Arc<Hidden>,
) -> Result<(), PluginError> {
    let (tools, hidden) = (tools.clone(), hidden.clone());
    ctx.on_waterfall(&SYSTEM_PROMPT_ASSEMBLE, move |next| {
        let request: Option<PromptRequest> = next.payload().decode().ok();
        let section = request.and_then(|request| section(&tools, &hidden, &request.scope));
        async move {
            let text = next.run().await?;
            Ok(match section {
                Some(section) => RString::from(format!("{text}\n\n{section}")),
                None => text,
            })
        }
    })
}

fn schemas(tools: &ToolsService, chain: &[String]) -> Vec<ToolSchema> {
    let chain: RVec<RString> = chain
        .iter()
        .map(|key| RString::from(key.as_str()))
        .collect();
    tools
        .schemas(chain)
        .into_result()
        .ok()
        .and_then(|schemas| schemas.decode().ok())
        .unwrap_or_default()
}

/// The section for a request seen from `chain`, when `run_code` is offered there.
fn section(tools: &ToolsService, hidden: &Hidden, chain: &[String]) -> Option<String> {
    if !schemas(tools, chain)
        .iter()
        .any(|schema| schema.name == NAME)
    {
        return None;
    }
    let reached = hidden.sub_scope(
        &chain
            .iter()
            .map(|key| RString::from(key.as_str()))
            .collect(),
    );
    let mut text = String::from(
        "# Code Mode tools\n\nIn a `run_code` program every tool below is an async function of one \
         arguments object on `tools`; it resolves to the tool's structured value and rejects with \
         a ToolCallError (`toolName`, `message`):\n\n```ts\ndeclare const tools: {\n",
    );
    for schema in schemas(tools, &reached)
        .iter()
        .filter(|schema| schema.name != NAME)
    {
        let parameters: Value = serde_json::from_str(schema.parameters.get()).unwrap_or_default();
        let _ = writeln!(
            text,
            "  /** {} */\n  {}(args: {}): Promise<any>;",
            summary(&schema.description),
            schema.name,
            ts_type(&parameters, 0)
        );
    }
    text.push_str("};\n```");
    Some(text)
}

/// The first sentence of a description, on one line, within [`MAX_SUMMARY`] bytes.
fn summary(description: &str) -> String {
    let line = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line.as_str(),
    };
    let mut cut = sentence.len().min(MAX_SUMMARY);
    while !sentence.is_char_boundary(cut) {
        cut -= 1;
    }
    sentence[..cut].replace("*/", "* /")
}

/// The part of a JSON Schema a declaration shows.
#[derive(Debug, Default, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", default)]
struct Schema {
    #[serde(rename = "type")]
    kind: Option<Kinds>,
    /// In the tool's order (the workspace's `serde_json` keeps it).
    properties: Option<serde_json::Map<String, Value>>,
    required: Vec<String>,
    items: Option<Box<Schema>>,
    #[serde(rename = "enum")]
    values: Option<Vec<Value>>,
    #[serde(rename = "anyOf")]
    any_of: Option<Vec<Schema>>,
    #[serde(rename = "oneOf")]
    one_of: Option<Vec<Schema>>,
}

/// `type`: one name or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", untagged)]
enum Kinds {
    One(String),
    Many(Vec<String>),
}

/// A JSON Schema as a TypeScript type (anything it does not read is `unknown`).
fn ts_type(schema: &Value, depth: usize) -> String {
    let schema: Schema = serde_json::from_value(schema.clone()).unwrap_or_default();
    typed(&schema, depth)
}

fn typed(schema: &Schema, depth: usize) -> String {
    if let Some(options) = schema.any_of.as_ref().or(schema.one_of.as_ref()) {
        return union(options.iter().map(|option| typed(option, depth)));
    }
    if let Some(values) = &schema.values {
        return union(values.iter().map(Value::to_string));
    }
    match &schema.kind {
        Some(Kinds::Many(kinds)) => union(kinds.iter().map(|kind| of_kind(schema, kind, depth))),
        Some(Kinds::One(kind)) => of_kind(schema, kind, depth),
        None if schema.properties.is_some() => object_type(schema, depth),
        None => "unknown".to_owned(),
    }
}

fn of_kind(schema: &Schema, kind: &str, depth: usize) -> String {
    match kind {
        "string" => "string".to_owned(),
        "number" | "integer" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => match &schema.items {
            Some(items) => format!("Array<{}>", typed(items, depth + 1)),
            None => "unknown[]".to_owned(),
        },
        "object" => object_type(schema, depth),
        _ => "unknown".to_owned(),
    }
}

fn object_type(schema: &Schema, depth: usize) -> String {
    let Some(properties) = &schema.properties else {
        return "object".to_owned();
    };
    if depth > MAX_DEPTH {
        return "object".to_owned();
    }
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, property)| {
            let optional = if schema.required.contains(name) {
                ""
            } else {
                "?"
            };
            format!("{name}{optional}: {}", ts_type(property, depth + 1))
        })
        .collect();
    match fields.is_empty() {
        true => "{}".to_owned(),
        false => format!("{{ {} }}", fields.join("; ")),
    }
}

fn union(parts: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = parts.collect();
    match parts.is_empty() {
        true => "unknown".to_owned(),
        false => parts.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{summary, ts_type};

    #[test]
    fn schemas_read_as_typescript() {
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeoutMs": {"type": "integer"},
                "mode": {"enum": ["a", "b"]},
                "todos": {"type": "array", "items": {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]}},
                "maybe": {"type": ["string", "null"]}
            },
            "required": ["command"]
        });
        assert_eq!(
            ts_type(&schema, 0),
            "{ command: string; timeoutMs?: number; mode?: \"a\" | \"b\"; todos?: Array<{ done: boolean }>; maybe?: string | null }"
        );
        assert_eq!(
            summary("Runs a command.  Then more.\nAnd more."),
            "Runs a command."
        );
    }
}
