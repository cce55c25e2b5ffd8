//! Test plugin `prompt-probe`: adds the section of its row to `system_prompt` (held until the
//! row unloads) and prints `prompt <assembled JSON>`, so reload tests can see the sections a
//! prompt is made of after each change.

use std::io::Write;

use dsh_plugin_api::RString;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{PromptRequest, PromptSection};
use dsh_system_prompt_seam::{SYSTEM_PROMPT_SERVICE, SystemPromptService};

/// Row config of `prompt-probe`: the section (`{"id","order","text"}`).
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    #[schemars(with = "dsh_plugin_api::serde_json::Value")]
    pub section: PromptSection,
}

pub struct PromptProbe;

impl Plugin for PromptProbe {
    const NAME: &'static str = "prompt-probe";
    const INJECT: &'static [&'static str] = &[SYSTEM_PROMPT_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let prompt = ctx.inject::<SystemPromptService>(SYSTEM_PROMPT_SERVICE)?;
        let held = prompt
            .section(RString::from(ctx.row_id()), Json::encode(&config.section))
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(held))?;
        let assembled = prompt
            .assemble(Json::encode(&PromptRequest {
                session: String::new(),
                cwd: "/".to_owned(),
                scope: Vec::new(),
                provider: "probe".to_owned(),
                model: "probe-model".to_owned(),
            }))
            .await;
        let text = match assembled.into_result() {
            Ok(assembled) => assembled.into_text().into_string(),
            Err(error) => {
                dsh_plugin_api::serde_json::json!({"error": error.message.as_str()}).to_string()
            }
        };
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "prompt {text}");
        let _ = stdout.flush();
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(PromptProbe);
