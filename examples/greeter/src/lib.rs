//! Example plugin `greeter`: provides the `greeter` service, greeting with the configured word
//! (default `Hello`).

use dsh_plugin_api::RStr;
use dsh_plugin_api::prelude::*;
use greeter_api::{Greeter, Greeter_TO, TD_Opaque};

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
            greeting: "Hello".to_owned(),
        }
    }
}

struct Greeting(String);

impl Greeter for Greeting {
    fn greet(&self, who: RStr<'_>) -> RString {
        format!("{}, {who}!", self.0).into()
    }
}

pub struct GreeterPlugin;

impl Plugin for GreeterPlugin {
    const NAME: &'static str = "greeter";
    const PROVIDES: &'static [&'static str] = &["greeter"];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        ctx.provide(
            "greeter",
            Greeter_TO::from_value(Greeting(config.greeting), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(GreeterPlugin);
