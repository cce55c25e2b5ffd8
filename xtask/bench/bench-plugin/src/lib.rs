//! Benchmark plugins. `listeners` registers N listeners on each benchmark event (the events are
//! declared in `dsh-plugin-api`'s bench module so the harness and this library agree on them);
//! `provider` provides one service. Nothing here prints: the harness measures from outside.

use dsh_bench_events::{BAIL, EMIT, PARALLEL, SERIAL, WATERFALL};
use dsh_plugin_api::prelude::*;

/// Config of `listeners`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ListenersConfig {
    /// Listeners per event.
    pub count: u32,
}

pub struct Listeners;

impl Plugin for Listeners {
    const NAME: &'static str = "listeners";
    type Config = ListenersConfig;

    async fn apply(ctx: Context, config: ListenersConfig) -> Result<(), PluginError> {
        for _ in 0..config.count {
            ctx.on_emit(&EMIT, |value: &u64| {
                std::hint::black_box(*value);
            })?;
            ctx.on_bail(&BAIL, |_value: &u64| None)?;
            ctx.on_serial(&SERIAL, |_value: RArc<u64>| async { None })?;
            ctx.on_parallel(&PARALLEL, |_value: RArc<u64>| async {})?;
            ctx.on_waterfall(&WATERFALL, |next: Next<u64, u64>| async move {
                Ok(next.run().await? + 1)
            })?;
        }
        Ok(())
    }
}

/// Config of `provider`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ProviderConfig {
    /// The service name to provide.
    pub service: String,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            service: "svc".to_owned(),
        }
    }
}

pub struct Provider;

impl Plugin for Provider {
    const NAME: &'static str = "provider";
    type Config = ProviderConfig;

    async fn apply(ctx: Context, config: ProviderConfig) -> Result<(), PluginError> {
        ctx.provide(&config.service, RString::from(config.service.as_str()))
    }
}

dsh_plugin_api::export_plugins!(Listeners, Provider);
