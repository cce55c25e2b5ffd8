//! Adapter configuration: the settings shape, its validation, and the resolved connection facts.

use dsh_protocol::{CatalogModel, Modality};
use serde::{Deserialize, Serialize};

/// The provider route this adapter registers by default.
pub const DEFAULT_PROVIDER: &str = "deepseek-official";
/// The public endpoint, used when neither the config nor `DEEPSEEK_BASE_URL` names one.
pub const PUBLIC_BASE_URL: &str = "https://api.deepseek.com";
/// The environment variable naming the endpoint (read by the caller, passed in).
pub const BASE_URL_ENV: &str = "DEEPSEEK_BASE_URL";
pub const DEFAULT_API_KEY_ENV: &str = "DEEPSEEK_API_KEY";
pub const DEFAULT_MAX_TOKENS: u64 = 256_000;
pub const DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;
pub const DEFAULT_MAX_REQUEST_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// The most SSE body one answer may take: far above a real answer (a million-token window's
/// worth of text is a few MiB), low enough that an endless one is cut off long before memory
/// runs out.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;
/// The longest one request may take from sending it to its last byte.
pub const DEFAULT_MAX_RESPONSE_MS: u64 = 30 * 60 * 1000;
/// The longest a stream may go without a chunk of the answer (keep-alive comments keep the
/// connection alive but are not progress).
pub const DEFAULT_STREAM_PROGRESS_TIMEOUT_MS: u64 = 300_000;
/// The largest delay a timer can arm (2^31 - 1 ms); a longer idle timeout would never fire.
pub const MAX_TIMER_DELAY_MS: u64 = 2_147_483_647;

/// The deployment's thinking policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    Enabled,
    /// Every request is limited to effort `off`.
    Disabled,
}

impl Thinking {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Disabled => "disabled",
        }
    }
}

/// The efforts DeepSeek exposes; `off` is not a wire effort but `thinking: disabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Off,
    Low,
    High,
    Max,
}

impl ReasoningEffort {
    pub const ALL: [Self; 4] = [Self::Off, Self::Low, Self::High, Self::Max];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Low => "low",
            Self::High => "high",
            Self::Max => "max",
        }
    }

    pub fn display_name(self) -> &'static str {
        match self {
            Self::Off => "Off",
            Self::Low => "Low",
            Self::High => "High",
            Self::Max => "Max",
        }
    }

    pub fn parse(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|effort| effort.as_str() == id)
    }
}

/// Which DeepSeek-only parts of the protocol to use. All on for DeepSeek; all off for a generic
/// OpenAI-compatible endpoint, which would reject (or bill oddly for) fields it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Compat {
    /// Send the top-level `thinking: {type}` toggle.
    pub thinking: bool,
    /// Send `reasoning_effort`.
    pub reasoning_effort: bool,
    /// Pass prior reasoning back as `reasoning_content` on assistant history messages.
    pub reasoning_content: bool,
    /// Fill `max_tokens` with the large default (256 000) when the request sets none.
    pub max_tokens_default: bool,
    /// Send the `x-deepseek-harness-*` attribution headers.
    pub harness_headers: bool,
}

impl Compat {
    pub const DEEPSEEK: Self = Self {
        thinking: true,
        reasoning_effort: true,
        reasoning_content: true,
        max_tokens_default: true,
        harness_headers: true,
    };
    pub const OPENAI: Self = Self {
        thinking: false,
        reasoning_effort: false,
        reasoning_content: false,
        max_tokens_default: false,
        harness_headers: false,
    };
}

impl Default for Compat {
    fn default() -> Self {
        Self::DEEPSEEK
    }
}

/// The public product identity sent as `User-Agent` (`product/version (+url)`): no secrets, no
/// per-user or per-request values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppIdentity {
    pub product: String,
    pub version: String,
    pub url: Option<String>,
}

impl Default for AppIdentity {
    fn default() -> Self {
        Self {
            product: "dsh".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            url: None,
        }
    }
}

impl AppIdentity {
    pub fn user_agent(&self) -> String {
        match &self.url {
            Some(url) => format!("{}/{} (+{url})", self.product, self.version),
            None => format!("{}/{}", self.product, self.version),
        }
    }
}

/// Validated connection facts for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterConfig {
    pub provider: String,
    /// Endpoint base without a trailing slash; `/chat/completions` is appended.
    pub base_url: String,
    pub api_key_env: String,
    /// Whether a request without a key found fails (`false`: it goes without authorization).
    pub key_required: bool,
    pub thinking: Option<Thinking>,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Default output cap; a catalog entry's own cap and explicit request values win.
    pub max_tokens: u64,
    pub default_context_window: u64,
    /// Advisory catalog: unlisted model ids still pass through.
    pub models: Vec<CatalogModel>,
    /// Longest silence tolerated while a read is outstanding (the initial response included).
    pub stream_idle_timeout_ms: u64,
    /// Longest time without a chunk of the answer, comments notwithstanding.
    pub stream_progress_timeout_ms: u64,
    /// Most bytes of one response body.
    pub max_response_bytes: u64,
    /// Longest one request may take, response included.
    pub max_response_ms: u64,
    pub max_request_image_bytes: u64,
    pub compat: Compat,
    pub identity: AppIdentity,
}

/// The default catalog: V4 Flash and V4 Pro, text only, one-million-token context.
pub fn default_models() -> Vec<CatalogModel> {
    [
        ("deepseek-v4-flash", "DeepSeek-V4-Flash"),
        ("deepseek-v4-pro", "DeepSeek-V4-Pro"),
    ]
    .into_iter()
    .map(|(id, name)| CatalogModel {
        id: id.into(),
        name: Some(name.into()),
        description: None,
        input_modalities: Some(vec![Modality::Text]),
        context_window: Some(DEFAULT_CONTEXT_WINDOW),
        max_tokens: None,
        reasoning: None,
    })
    .collect()
}

pub(crate) fn non_empty(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|value| !value.is_empty())
}

impl AdapterConfig {
    /// DeepSeek's defaults; `env_base_url` is `$DEEPSEEK_BASE_URL` as the caller read it.
    pub fn deepseek(env_base_url: Option<&str>) -> Self {
        Self {
            provider: DEFAULT_PROVIDER.into(),
            base_url: base_url(None, env_base_url),
            api_key_env: DEFAULT_API_KEY_ENV.into(),
            key_required: true,
            thinking: None,
            reasoning_effort: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            default_context_window: DEFAULT_CONTEXT_WINDOW,
            models: default_models(),
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            stream_progress_timeout_ms: DEFAULT_STREAM_PROGRESS_TIMEOUT_MS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_response_ms: DEFAULT_MAX_RESPONSE_MS,
            max_request_image_bytes: DEFAULT_MAX_REQUEST_IMAGE_BYTES,
            compat: Compat::DEEPSEEK,
            identity: AppIdentity::default(),
        }
    }

    /// A generic OpenAI-compatible endpoint: no DeepSeek-only fields or headers, empty catalog.
    pub fn openai_compatible(
        provider: impl Into<String>,
        base: &str,
        api_key_env: impl Into<String>,
    ) -> Self {
        Self {
            provider: provider.into(),
            base_url: base.trim().trim_end_matches('/').to_owned(),
            api_key_env: api_key_env.into(),
            models: Vec::new(),
            compat: Compat::OPENAI,
            ..Self::deepseek(None)
        }
    }

    /// The catalog entry for `model`, if listed.
    pub fn catalog_entry(&self, model: &str) -> Option<&CatalogModel> {
        self.models.iter().find(|entry| entry.id == model)
    }

    /// `{base}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

/// config → environment → public endpoint. Blank values count as unset (an exported but empty
/// variable is not an endpoint), and trailing slashes are dropped so the path joins cleanly.
pub(crate) fn base_url(configured: Option<&str>, env: Option<&str>) -> String {
    non_empty(configured)
        .or(non_empty(env))
        .unwrap_or(PUBLIC_BASE_URL)
        .trim_end_matches('/')
        .to_owned()
}
