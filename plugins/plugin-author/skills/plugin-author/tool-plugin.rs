//! `word-count`: a dsh plugin that adds the `word_count` tool (how many words a text has).

use dsh_plugin_api::abi_stable::sabi_trait::TD_Opaque;
use dsh_plugin_api::async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::serde_json::{self, json};
use dsh_plugin_api::{RBox, ROption};
use dsh_protocol::{ContentBlock, OutcomeSummary, ToolDecl, ToolReply};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, tool_box, ToolsService};

/// The row's `config`. `scope` is the tool layer to register into ("" is the global one);
/// plugin_install passes the layer of the agent that installs the plugin.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    pub scope: String,
}

struct WordCount;

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Arguments {
    text: String,
}

impl Tool for WordCount {
    fn spec(&self) -> Json<ToolDecl> {
        let parameters = json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to count."}},
            "required": ["text"],
            "additionalProperties": false
        });
        Json::encode(&ToolDecl::new(
            "word_count",
            "Count the words (runs of non-whitespace) of a text.",
            parameters,
        ))
    }

    fn execute(&self, call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        // The arguments are the model's JSON text; a bad one is an error result, not a panic.
        let reply = match serde_json::from_str::<Arguments>(&call.arguments) {
            Ok(arguments) => {
                let words = arguments.text.split_whitespace().count();
                ToolReply::text(format!("{words} words"))
            }
            Err(error) => ToolReply::error(format!("arguments are not valid: {error}")),
        };
        async move { Json::encode(&reply) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        ROption::RSome(true)
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        ROption::RNone
    }
}

pub struct WordCountPlugin;

impl Plugin for WordCountPlugin {
    const NAME: &'static str = "word-count";
    // `apply` runs once the `tools` service is there.
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let tool = tool_box(WordCount);
        let registration = tools
            .register(ctx.row_id().into(), config.scope.into(), tool)
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        // Unloading the plugin removes the tool.
        ctx.on_dispose(move || drop(registration))
    }
}

dsh_plugin_api::export_plugins!(WordCountPlugin);
