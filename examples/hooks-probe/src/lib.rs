//! Test plugin `hooks-probe`: answers hooks as its row says, so tests can drive the loop's and
//! the pipeline's refusals through the real binary: `rejectStep` refuses every step on
//! `agent/pre-step`, `preExecute` and `postExecute` are the decisions every call gets on
//! `tools/pre-execute` and `tools/post-execute`, and
//! `guard` registers a guard that denies calls whose arguments contain that text.

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RNone, ROption, RSome, RString};
use dsh_agent_seam::AGENT_PRE_STEP;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::serde_json::{self, Value};
use dsh_tools_seam::{
    CallView, Guard, Guard_TO, TOOLS, TOOLS_POST_EXECUTE, TOOLS_PRE_EXECUTE, ToolsService,
};

/// Row config of `hooks-probe`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    pub reject_step: Option<String>,
    pub pre_execute: Option<Value>,
    pub post_execute: Option<Value>,
    pub guard: Option<String>,
}

struct Contains(String);

impl Guard for Contains {
    fn check(&self, call: &CallView) -> ROption<RString> {
        if call.arguments.contains(self.0.as_str()) {
            RSome(
                format!("hooks-probe guards against `{}`", self.0)
                    .as_str()
                    .into(),
            )
        } else {
            RNone
        }
    }
}

pub struct HooksProbe;

impl Plugin for HooksProbe {
    const NAME: &'static str = "hooks-probe";
    const INJECT: &'static [&'static str] = &[TOOLS];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        if let Some(reason) = config.reject_step {
            ctx.on_waterfall(&AGENT_PRE_STEP, move |_step, _next| {
                let answer = serde_json::json!({"kind": "reject", "reason": reason}).to_string();
                async move { Ok(RString::from(answer)) }
            })?;
        }
        if let Some(decision) = config.pre_execute {
            let answer = decision.to_string();
            ctx.on_waterfall(&TOOLS_PRE_EXECUTE, move |_call, _next| {
                let answer = RString::from(answer.as_str());
                async move { Ok(answer) }
            })?;
        }
        if let Some(decision) = config.post_execute {
            let answer = decision.to_string();
            ctx.on_waterfall(&TOOLS_POST_EXECUTE, move |_post, _next| {
                let answer = RString::from(answer.as_str());
                async move { Ok(answer) }
            })?;
        }
        if let Some(text) = config.guard {
            let tools = ctx.inject::<ToolsService>(TOOLS)?;
            let held = tools.guard(
                RString::from(ctx.row_id()),
                Guard_TO::from_value(Contains(text), TD_Opaque),
            );
            ctx.on_dispose(move || drop(held))?;
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(HooksProbe);
