//! Example plugin `greeter-alt`: the same `greeter` plugin and service from a second crate, so a
//! reload test can swap one library for the other. Default greeting `Howdy`; the configured word
//! wins otherwise.

use dsh_plugin_api::prelude::*;

/// Row config of `greeter`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// The word used to greet.
    pub greeting: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            greeting: "Howdy".to_owned(),
        }
    }
}

pub struct GreeterPlugin;

impl Plugin for GreeterPlugin {
    const NAME: &'static str = "greeter";
    const PROVIDES: &'static [&'static str] = &["greeter"];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        ctx.provide("greeter", greeter_api::service(config.greeting))
    }
}

dsh_plugin_api::export_plugins!(GreeterPlugin);
