//! Example plugin `heartbeat`: an effect with a timer. It prints `tick` at each interval until
//! its fiber unloads; its disposer prints `heartbeat cleaned up`.

use std::io::Write;
use std::time::Duration;

use dsh_plugin_api::prelude::*;

/// Row config of `heartbeat`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// Milliseconds between ticks.
    pub interval_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self { interval_ms: 200 }
    }
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

pub struct Heartbeat;

impl Plugin for Heartbeat {
    const NAME: &'static str = "heartbeat";
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        say("heartbeat plugin loading");
        // Registered first so it runs last: the timer task is already stopped when the
        // disposer reports.
        ctx.on_dispose(|| say("heartbeat cleaned up"))?;
        let timer = ctx.clone();
        let interval = Duration::from_millis(config.interval_ms.max(1));
        ctx.spawn(async move {
            loop {
                timer.sleep(interval).await;
                say("tick");
            }
        })
    }
}

dsh_plugin_api::export_plugins!(Heartbeat);
