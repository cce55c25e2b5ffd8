//! Test plugin `prompt-probe`: adds the section of its row to `system_prompt` (held until the
//! row unloads) and prints `prompt <assembled JSON>`, so reload tests can see the sections a
//! prompt is made of after each change.

use std::io::Write;

use dsh_agent_seam::{PromptRequest, SYSTEM_PROMPT, SystemPromptService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::serde_json::{self, Value};
use dsh_plugin_api::{RString, RVec};

/// Row config of `prompt-probe`: the section (`{"id","order","text"}`).
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    pub section: Value,
}

pub struct PromptProbe;

impl Plugin for PromptProbe {
    const NAME: &'static str = "prompt-probe";
    const INJECT: &'static [&'static str] = &[SYSTEM_PROMPT];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let prompt = ctx.inject::<SystemPromptService>(SYSTEM_PROMPT)?;
        let held = prompt
            .section(
                RString::from(ctx.row_id()),
                RString::from(serde_json::to_string(&config.section).unwrap_or_default()),
            )
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(held))?;
        let assembled = prompt
            .assemble(PromptRequest {
                session: RString::new(),
                cwd: RString::from("/"),
                scope: RVec::new(),
                provider: RString::from("probe"),
                model: RString::from("probe-model"),
            })
            .await;
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "prompt {assembled}");
        let _ = stdout.flush();
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(PromptProbe);
