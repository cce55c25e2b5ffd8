//! Test plugin `llm-probe`: streams the `GenerateRequest` of its config through the `llm`
//! service and prints `chunk <json>` per chunk, then `llm done` or `llm failed <failure json>`,
//! so integration tests see exactly what a consumer of the seam sees.

use std::io::Write;

use dsh_llm_seam::LlmService;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::serde_json;

/// Row config of `llm-probe`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// A `GenerateRequest` (`config`, `messages`, `system`, `tools`).
    pub request: serde_json::Value,
    /// How many times to send it, one after the other (each prints `request <n>` first).
    #[serde(default = "one")]
    pub repeat: u32,
}

fn one() -> u32 {
    1
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

pub struct LlmProbe;

impl Plugin for LlmProbe {
    const NAME: &'static str = "llm-probe";
    const INJECT: &'static [&'static str] = &["llm"];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let llm = ctx.inject::<LlmService>("llm")?;
        for round in 1..=config.repeat {
            say(&format!("request {round}"));
            let stream = match llm
                .stream(Json::from_text(config.request.to_string()))
                .await
                .into_result()
            {
                Ok(stream) => stream,
                Err(failure) => {
                    say(&format!("llm failed {}", failure.text()));
                    continue;
                }
            };
            loop {
                match stream.next().await.into_result() {
                    Ok(dsh_plugin_api::ROption::RSome(chunk)) => {
                        say(&format!("chunk {}", chunk.text()))
                    }
                    Ok(dsh_plugin_api::ROption::RNone) => {
                        say("llm done");
                        break;
                    }
                    Err(failure) => {
                        say(&format!("llm failed {}", failure.text()));
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(LlmProbe);
