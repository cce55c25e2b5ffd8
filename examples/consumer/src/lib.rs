//! Example plugin `consumer`: injects `greeter` and, each time it is applied, prints
//! `consumer says: <greeting>, world!` on its own line to stdout.

use std::io::Write;

use dsh_plugin_api::prelude::*;
use greeter_api::GreeterService;

pub struct ConsumerPlugin;

impl Plugin for ConsumerPlugin {
    const NAME: &'static str = "consumer";
    const INJECT: &'static [&'static str] = &["greeter"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let greeter = ctx.inject::<GreeterService>("greeter")?;
        let line = greeter.greet("world".into());
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "consumer says: {line}")
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        stdout
            .flush()
            .map_err(|error| PluginError::plugin(error.to_string()))
    }
}

dsh_plugin_api::export_plugins!(ConsumerPlugin);
