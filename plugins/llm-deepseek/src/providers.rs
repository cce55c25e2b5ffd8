//! Plugin `llm-providers` (exported by this library beside `llm-deepseek`): one row that
//! serves any number of OpenAI-compatible providers, each registered with `llm` under its own
//! route. It exists for the providers a person adds in the web settings: the `clients` service
//! writes them as this row's `providers` in the settings document, the host remounts the row,
//! and the new routes are served without a restart. Each entry has the shape of an
//! `llm-deepseek` row's config (`provider`, `baseURL`, `apiKeyEnv`, `compat`, `models`...);
//! a hand-written patch may list entries too.

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RSome;
use dsh_llm_seam::{Adapter_TO, LLM_SERVICE, LlmService};
use dsh_plugin_api::io::http::{HTTP_SERVICE, HttpService};
use dsh_plugin_api::prelude::*;

use crate::live_catalog::LiveCatalog;
use crate::plugin::DeepSeek;
use crate::{AdapterConfig, AdapterSettings};

/// Row config: the providers to serve.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub(crate) struct ProvidersConfig {
    /// Each an adapter's settings; `provider` and `baseURL` are required.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    providers: Vec<AdapterSettings>,
}

fn invalid(path: String, message: String) -> PluginError {
    PluginError {
        kind: dsh_plugin_api::ErrorKind::Config,
        message: format!("invalid config: {message}").into(),
        path: RSome(path.into()),
    }
}

/// Entry `index` resolved: its route and endpoint must be given (no `DEEPSEEK_BASE_URL`
/// fallback and no DeepSeek default: an entry here is never the official provider).
fn resolve(index: usize, settings: &AdapterSettings) -> Result<AdapterConfig, PluginError> {
    let path = format!("$.providers[{index}]");
    let given = |value: &Option<String>| value.as_deref().is_some_and(|v| !v.trim().is_empty());
    if !given(&settings.provider) {
        return Err(invalid(
            format!("{path}.provider"),
            "no `provider` (the route)".into(),
        ));
    }
    if !given(&settings.base_url) {
        return Err(invalid(format!("{path}.baseURL"), "no `baseURL`".into()));
    }
    AdapterConfig::resolve(settings, None).map_err(|error| invalid(path, error.to_string()))
}

pub(crate) struct ProvidersPlugin;

impl Plugin for ProvidersPlugin {
    const NAME: &'static str = "llm-providers";
    const INJECT: &'static [&'static str] = &[LLM_SERVICE, HTTP_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_credentials_seam::CREDENTIALS_SERVICE,
        dsh_attachments_seam::ATTACHMENTS_SERVICE,
    ];
    type Config = ProvidersConfig;

    async fn apply(ctx: Context, config: ProvidersConfig) -> Result<(), PluginError> {
        // Every entry is checked before any registers, so a bad one names itself and leaves
        // no half-registered row behind.
        let configs = config
            .providers
            .iter()
            .enumerate()
            .map(|(index, settings)| resolve(index, settings))
            .collect::<Result<Vec<_>, _>>()?;
        let llm = ctx.inject::<LlmService>(LLM_SERVICE)?;
        let http = ctx.inject::<HttpService>(HTTP_SERVICE)?;
        let mut registrations = Vec::new();
        let mut adapters = Vec::new();
        for config in configs {
            let provider = config.provider.clone();
            let adapter = DeepSeek {
                catalog: Arc::new(LiveCatalog::new(config.models.clone())),
                config: Arc::new(config),
                http: http.clone(),
                ctx: ctx.clone(),
            };
            adapters.push(adapter.clone());
            let registration = llm
                .register(Adapter_TO::from_value(adapter, TD_Opaque))
                .into_result()
                .map_err(|failure| {
                    let failure = failure
                        .decode()
                        .map_or_else(|error| error.to_string(), |failure| failure.to_string());
                    PluginError::plugin(format!("provider `{provider}`: {failure}"))
                })?;
            registrations.push(registration);
        }
        for adapter in &adapters {
            adapter.discover();
        }
        // The registrations live as long as this fiber: unloading drops them, which
        // unregisters every route.
        ctx.on_dispose(move || drop(registrations))
    }
}
