//! The adapter's settings (YAML / settings namespace shape) and their validation into an
//! [`AdapterConfig`].

use dsh_protocol::{CatalogModel, Modality};
use serde::{Deserialize, Serialize};

use crate::config::{
    AdapterConfig, AppIdentity, Compat, DEFAULT_API_KEY_ENV, DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_REQUEST_IMAGE_BYTES, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RESPONSE_MS,
    DEFAULT_MAX_TOKENS, DEFAULT_PROVIDER, DEFAULT_STREAM_IDLE_TIMEOUT_MS,
    DEFAULT_STREAM_PROGRESS_TIMEOUT_MS, MAX_TIMER_DELAY_MS, ReasoningEffort, Thinking, base_url,
    default_models, non_empty,
};

/// The largest integer the reference (and any JSON reader using doubles) keeps exact.
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// The settings' `compat`: a preset name or the individual switches (unset ones default to
/// DeepSeek's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CompatSetting {
    Preset(CompatPreset),
    Custom(Compat),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompatPreset {
    Deepseek,
    Openai,
}

/// The adapter's settings as written in YAML or the settings namespace; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterSettings {
    /// Provider route name (default `deepseek-official`).
    pub provider: Option<String>,
    /// Where the key is looked up (credentials, then environment); a literal key is never config.
    pub api_key_env: Option<String>,
    /// `false` for an endpoint that takes no key (a local Ollama or vLLM): without one found,
    /// requests go with no authorization header instead of failing (default `true`).
    pub key_required: Option<bool>,
    #[serde(rename = "baseURL")]
    pub base_url: Option<String>,
    pub thinking: Option<Thinking>,
    /// Default effort (the catalog's default becomes `high` when unset).
    pub reasoning_effort: Option<ReasoningEffort>,
    pub max_tokens: Option<u64>,
    pub default_context_window: Option<u64>,
    pub models: Option<Vec<CatalogModel>>,
    pub stream_idle_timeout_ms: Option<u64>,
    /// Longest time without a chunk of the answer (keep-alive comments do not count).
    pub stream_progress_timeout_ms: Option<u64>,
    /// Most bytes of one response body (default 64 MiB).
    pub max_response_bytes: Option<u64>,
    /// Longest one request may take, response included (default 30 minutes).
    pub max_response_ms: Option<u64>,
    pub max_request_image_bytes: Option<u64>,
    pub compat: Option<CompatSetting>,
    /// Owned by the retry policy; carried through untouched.
    pub retry_policy: Option<serde_json::Value>,
}

/// A settings value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("llm-deepseek: {0}")]
pub struct ConfigError(String);

fn invalid(message: impl Into<String>) -> ConfigError {
    ConfigError(message.into())
}

fn positive(value: Option<u64>, default: u64, max: u64, what: &str) -> Result<u64, ConfigError> {
    match value {
        None => Ok(default),
        Some(value) if value > 0 && value <= max => Ok(value),
        Some(_) => Err(invalid(format!(
            "{what} must be a positive integer no greater than {max}"
        ))),
    }
}

fn resolve_models(models: Option<&[CatalogModel]>) -> Result<Vec<CatalogModel>, ConfigError> {
    let Some(models) = models else {
        return Ok(default_models());
    };
    let mut seen = std::collections::HashSet::new();
    models
        .iter()
        .map(|model| {
            let id = &model.id;
            if id.is_empty() {
                return Err(invalid("catalog model ids must be non-empty"));
            }
            if model.name.as_deref() == Some("") {
                return Err(invalid(format!("catalog model \"{id}\" has an empty name")));
            }
            if model.context_window == Some(0) {
                return Err(invalid(format!(
                    "catalog model \"{id}\" contextWindow must be a positive integer"
                )));
            }
            if model.max_tokens == Some(0) {
                return Err(invalid(format!(
                    "catalog model \"{id}\" maxTokens must be a positive integer"
                )));
            }
            let modalities = model
                .input_modalities
                .clone()
                .unwrap_or_else(|| vec![Modality::Text]);
            if modalities.is_empty() {
                return Err(invalid(format!(
                    "catalog model \"{id}\" inputModalities must not be empty"
                )));
            }
            let distinct: std::collections::HashSet<_> = modalities.iter().collect();
            if distinct.len() != modalities.len() {
                return Err(invalid(format!(
                    "catalog model \"{id}\" inputModalities must not contain duplicates"
                )));
            }
            if !seen.insert(id.clone()) {
                return Err(invalid(format!("duplicate catalog model \"{id}\"")));
            }
            Ok(CatalogModel {
                input_modalities: Some(modalities),
                ..model.clone()
            })
        })
        .collect()
}

impl AdapterConfig {
    /// Validates settings into connection facts. `env_base_url` is `$DEEPSEEK_BASE_URL` from a
    /// trusted environment layer, consulted only when the settings name no endpoint.
    pub fn resolve(
        settings: &AdapterSettings,
        env_base_url: Option<&str>,
    ) -> Result<Self, ConfigError> {
        if settings.thinking == Some(Thinking::Disabled)
            && settings
                .reasoning_effort
                .is_some_and(|effort| effort != ReasoningEffort::Off)
        {
            return Err(invalid(
                "only reasoningEffort \"off\" can be configured when thinking is disabled",
            ));
        }
        let compat = match settings.compat {
            None | Some(CompatSetting::Preset(CompatPreset::Deepseek)) => Compat::DEEPSEEK,
            Some(CompatSetting::Preset(CompatPreset::Openai)) => Compat::OPENAI,
            Some(CompatSetting::Custom(compat)) => compat,
        };
        let api_key_env = non_empty(settings.api_key_env.as_deref())
            .unwrap_or(DEFAULT_API_KEY_ENV)
            .to_owned();
        Ok(Self {
            provider: non_empty(settings.provider.as_deref())
                .unwrap_or(DEFAULT_PROVIDER)
                .to_owned(),
            base_url: base_url(settings.base_url.as_deref(), env_base_url),
            api_key_env,
            key_required: settings.key_required.unwrap_or(true),
            thinking: settings.thinking,
            reasoning_effort: settings.reasoning_effort,
            max_tokens: positive(
                settings.max_tokens,
                DEFAULT_MAX_TOKENS,
                MAX_SAFE_INTEGER,
                "maxTokens",
            )?,
            default_context_window: positive(
                settings.default_context_window,
                DEFAULT_CONTEXT_WINDOW,
                MAX_SAFE_INTEGER,
                "defaultContextWindow",
            )?,
            models: resolve_models(settings.models.as_deref())?,
            stream_idle_timeout_ms: positive(
                settings.stream_idle_timeout_ms,
                DEFAULT_STREAM_IDLE_TIMEOUT_MS,
                MAX_TIMER_DELAY_MS,
                "streamIdleTimeoutMs",
            )?,
            stream_progress_timeout_ms: positive(
                settings.stream_progress_timeout_ms,
                DEFAULT_STREAM_PROGRESS_TIMEOUT_MS,
                MAX_TIMER_DELAY_MS,
                "streamProgressTimeoutMs",
            )?,
            max_response_bytes: positive(
                settings.max_response_bytes,
                DEFAULT_MAX_RESPONSE_BYTES,
                MAX_SAFE_INTEGER,
                "maxResponseBytes",
            )?,
            max_response_ms: positive(
                settings.max_response_ms,
                DEFAULT_MAX_RESPONSE_MS,
                MAX_TIMER_DELAY_MS,
                "maxResponseMs",
            )?,
            max_request_image_bytes: positive(
                settings.max_request_image_bytes,
                DEFAULT_MAX_REQUEST_IMAGE_BYTES,
                MAX_SAFE_INTEGER,
                "maxRequestImageBytes",
            )?,
            compat,
            identity: AppIdentity::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PUBLIC_BASE_URL;
    use serde_json::json;

    fn settings(value: serde_json::Value) -> AdapterSettings {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn defaults_match_the_reference() {
        let config = AdapterConfig::resolve(&AdapterSettings::default(), None).unwrap();
        assert_eq!(config, AdapterConfig::deepseek(None));
        assert_eq!(config.provider, "deepseek-official");
        assert_eq!(config.base_url, "https://api.deepseek.com");
        assert_eq!(config.api_key_env, "DEEPSEEK_API_KEY");
        assert_eq!(config.max_tokens, 256_000);
        assert_eq!(config.stream_idle_timeout_ms, 300_000);
        assert_eq!(config.stream_progress_timeout_ms, 300_000);
        assert_eq!(config.max_response_bytes, 64 << 20);
        assert_eq!(config.max_response_ms, 1_800_000);
        assert_eq!(config.models.len(), 2);
        assert_eq!(config.compat, Compat::DEEPSEEK);
        assert_eq!(
            config.endpoint(),
            "https://api.deepseek.com/chat/completions"
        );
    }

    #[test]
    fn base_url_prefers_config_then_environment() {
        let from_env = AdapterConfig::resolve(&AdapterSettings::default(), Some("http://gw/v1/"));
        assert_eq!(from_env.unwrap().base_url, "http://gw/v1");
        let from_config = AdapterConfig::resolve(
            &settings(json!({"baseURL": "http://cfg"})),
            Some("http://gw"),
        );
        assert_eq!(from_config.unwrap().base_url, "http://cfg");
        let blank_env = AdapterConfig::resolve(&AdapterSettings::default(), Some(" "));
        assert_eq!(blank_env.unwrap().base_url, PUBLIC_BASE_URL);
    }

    #[test]
    fn rejects_unusable_settings() {
        for (value, needle) in [
            (
                json!({"thinking": "disabled", "reasoningEffort": "high"}),
                "only reasoningEffort",
            ),
            (json!({"maxTokens": 0}), "maxTokens"),
            (json!({"maxResponseBytes": 0}), "maxResponseBytes"),
            (json!({"maxResponseMs": 0}), "maxResponseMs"),
            (
                json!({"streamProgressTimeoutMs": 2_147_483_648_u64}),
                "streamProgressTimeoutMs",
            ),
            (
                json!({"streamIdleTimeoutMs": 2_147_483_648_u64}),
                "streamIdleTimeoutMs",
            ),
            (json!({"models": [{"id": ""}]}), "non-empty"),
            (json!({"models": [{"id": "a"}, {"id": "a"}]}), "duplicate"),
            (
                json!({"models": [{"id": "a", "inputModalities": []}]}),
                "must not be empty",
            ),
            (
                json!({"models": [{"id": "a", "inputModalities": ["text", "text"]}]}),
                "duplicates",
            ),
            (
                json!({"models": [{"id": "a", "contextWindow": 0}]}),
                "contextWindow",
            ),
        ] {
            let error = AdapterConfig::resolve(&settings(value.clone()), None).unwrap_err();
            assert!(error.to_string().contains(needle), "{value}: {error}");
        }
        assert!(
            AdapterConfig::resolve(
                &settings(json!({"thinking": "disabled", "reasoningEffort": "off"})),
                None
            )
            .is_ok()
        );
    }

    #[test]
    fn compat_accepts_presets_and_switches() {
        let openai = AdapterConfig::resolve(&settings(json!({"compat": "openai"})), None).unwrap();
        assert_eq!(openai.compat, Compat::OPENAI);
        let custom = AdapterConfig::resolve(
            &settings(json!({"compat": {"harnessHeaders": false}})),
            None,
        )
        .unwrap();
        assert_eq!(
            custom.compat,
            Compat {
                harness_headers: false,
                ..Compat::DEEPSEEK
            }
        );
    }

    #[test]
    fn user_agent_is_product_slash_version() {
        let identity = AppIdentity {
            product: "dsh".into(),
            version: "1.2.3".into(),
            url: Some("https://example.org/dsh".into()),
        };
        assert_eq!(
            identity.user_agent(),
            "dsh/1.2.3 (+https://example.org/dsh)"
        );
    }
}
