//! Benchmark plugin `consumer`: the row's `inject` names the service it waits for; when
//! `announce` is set it prints `bench consumer <row> ready` on apply, so a harness outside the
//! process can tell when the whole tree is active.

use std::io::Write;

use dsh_plugin_api::prelude::*;

/// Config of `consumer`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ConsumerConfig {
    /// Print a line when applied.
    pub announce: bool,
}

pub struct Consumer;

impl Plugin for Consumer {
    const NAME: &'static str = "consumer";
    type Config = ConsumerConfig;

    async fn apply(ctx: Context, config: ConsumerConfig) -> Result<(), PluginError> {
        if config.announce {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "bench consumer {} ready", ctx.row_id());
            let _ = stdout.flush();
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(Consumer);
