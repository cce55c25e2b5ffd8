//! The row's config: the fallback's budgets, and the model title (`llm`), off unless the row
//! turns it on. Checked once, before anything listens, so a bad row fails naming its field.

use abi_stable::std_types::{RSome, RString};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{ErrorKind, PluginError};
use dsh_protocol::TitleRoute;

/// Config of `session-title`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct TitleConfig {
    /// Words of the first human message the fallback keeps.
    pub fallback_max_words: usize,
    /// UTF-8 bytes the fallback keeps.
    pub fallback_max_bytes: usize,
    /// UTF-8 bytes any title keeps (a model's included).
    pub max_title_bytes: usize,
    /// A title written by a model, once per session, after the fallback.
    pub llm: LlmTitleConfig,
}

impl Default for TitleConfig {
    fn default() -> Self {
        Self {
            fallback_max_words: 5,
            fallback_max_bytes: 40,
            max_title_bytes: 80,
            llm: LlmTitleConfig::default(),
        }
    }
}

/// The model title (the reference's `session-title-first-prompt-llm` provider). Off by default:
/// it is one more model request per session, which costs tokens and which scripted test
/// servers would have to answer.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct LlmTitleConfig {
    pub enabled: bool,
    /// Where to ask; absent: the route of the session's own first request.
    pub route: Option<RouteConfig>,
    /// Words the model is asked for in languages written with spaces.
    pub target_words: usize,
    /// Characters the model is asked for in Chinese, Japanese or Korean.
    pub target_cjk_characters: usize,
    /// UTF-8 bytes of the framed message, at most: a longer first message gets no model title.
    pub max_input_bytes: usize,
    /// The output cap of the request.
    pub max_output_tokens: u64,
    /// How long the whole request may take.
    pub timeout_ms: u64,
}

impl Default for LlmTitleConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            route: None,
            target_words: 5,
            target_cjk_characters: 10,
            max_input_bytes: 4096,
            max_output_tokens: 64,
            timeout_ms: 60_000,
        }
    }
}

/// A provider route and a model on it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct RouteConfig {
    pub provider: String,
    pub model: String,
}

impl RouteConfig {
    pub(crate) fn route(&self) -> TitleRoute {
        TitleRoute {
            provider: self.provider.clone(),
            model: self.model.clone(),
        }
    }
}

/// What is wrong with a row's config, and where (a JSON path from the row's `config`).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid config: {field} must be a positive integer")]
    NotPositive { field: &'static str },
    #[error("invalid config: fallbackMaxBytes must not exceed maxTitleBytes")]
    FallbackOverTitle,
    #[error("invalid config: {field} must not be empty")]
    Empty { field: &'static str },
}

impl ConfigError {
    /// The JSON path of the field at fault (the fields are named by their dotted path).
    fn path(&self) -> String {
        match self {
            Self::NotPositive { field } | Self::Empty { field } => format!("$.{field}"),
            Self::FallbackOverTitle => "$.fallbackMaxBytes".to_owned(),
        }
    }
}

impl From<ConfigError> for PluginError {
    fn from(error: ConfigError) -> Self {
        Self {
            kind: ErrorKind::Config,
            message: RString::from(error.to_string()),
            path: RSome(RString::from(error.path())),
        }
    }
}

impl TitleConfig {
    /// Checks what serde cannot: positive budgets, a fallback within the title's bytes, a
    /// route with both names.
    pub fn check(&self) -> Result<(), ConfigError> {
        let llm = &self.llm;
        let sizes = [
            ("fallbackMaxWords", self.fallback_max_words as u64),
            ("fallbackMaxBytes", self.fallback_max_bytes as u64),
            ("maxTitleBytes", self.max_title_bytes as u64),
            ("llm.targetWords", llm.target_words as u64),
            ("llm.targetCjkCharacters", llm.target_cjk_characters as u64),
            ("llm.maxInputBytes", llm.max_input_bytes as u64),
            ("llm.maxOutputTokens", llm.max_output_tokens),
            ("llm.timeoutMs", llm.timeout_ms),
        ];
        if let Some((field, _)) = sizes.iter().find(|(_, value)| *value == 0) {
            return Err(ConfigError::NotPositive { field });
        }
        if self.fallback_max_bytes > self.max_title_bytes {
            return Err(ConfigError::FallbackOverTitle);
        }
        if let Some(route) = &llm.route {
            if route.provider.trim().is_empty() {
                return Err(ConfigError::Empty {
                    field: "llm.route.provider",
                });
            }
            if route.model.trim().is_empty() {
                return Err(ConfigError::Empty {
                    field: "llm.route.model",
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<TitleConfig, PluginError> {
        let config: TitleConfig = dsh_plugin_api::parse_config(json)?;
        config.check()?;
        Ok(config)
    }

    #[test]
    fn the_model_title_is_off_by_default_with_the_reference_budgets() {
        let config = parse("{}").unwrap();
        assert!(!config.llm.enabled);
        assert!(config.llm.route.is_none());
        assert_eq!(
            (
                config.llm.target_words,
                config.llm.target_cjk_characters,
                config.llm.max_input_bytes,
                config.llm.max_output_tokens,
                config.llm.timeout_ms,
            ),
            (5, 10, 4096, 64, 60_000)
        );
        let on = parse(r#"{"llm": {"enabled": true, "route": {"provider": "p", "model": "m"}}}"#)
            .unwrap();
        assert!(on.llm.enabled);
        assert_eq!(on.llm.route.unwrap().route().model, "m");
    }

    #[test]
    fn a_bad_field_is_named_with_its_path() {
        let error = parse(r#"{"llm": {"enabled": "yes"}}"#).unwrap_err();
        assert_eq!(error.path.clone().into_option().unwrap(), "$.llm.enabled");
        let error = parse(r#"{"llm": {"enabeld": true}}"#).unwrap_err();
        assert!(error.message.contains("enabeld"), "{}", error.message);
        let error = parse(r#"{"llm": {"timeoutMs": 0}}"#).unwrap_err();
        assert_eq!(
            error.message.as_str(),
            "invalid config: llm.timeoutMs must be a positive integer"
        );
        assert_eq!(error.path.into_option().unwrap(), "$.llm.timeoutMs");
        let error = parse(r#"{"llm": {"route": {"provider": "p"}}}"#).unwrap_err();
        assert!(error.message.contains("model"), "{}", error.message);
        let error = parse(r#"{"llm": {"route": {"provider": " ", "model": "m"}}}"#).unwrap_err();
        assert_eq!(error.path.into_option().unwrap(), "$.llm.route.provider");
        let error = parse(r#"{"fallbackMaxBytes": 100}"#).unwrap_err();
        assert!(error.message.contains("maxTitleBytes"), "{}", error.message);
    }
}
