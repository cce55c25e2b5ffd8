//! Plugin `tool-web`: the `web_fetch` and `web_search` tools, both through the host's `http`
//! service and, as every tool call, through `tools/pre-execute` (so the permission rules judge
//! them: `web_fetch(domain:example.com)` in a deny list refuses that host).
//!
//! `web_fetch {url}` reads one http(s) URL: HTML comes back as Markdown, text as it is, under
//! a `Fetched <url> (HTTP <status>)` header; a non-2xx status is reported, not an error. The
//! body is capped (`maxResponseBytes`, `maxBodyChars`, then `fetchMaxOutputChars` for the
//! whole text, with a truncation notice), redirects are followed within the origin up to
//! `maxRedirects`, and the call has `fetchTimeoutMs` in all. Loopback, private and other
//! non-public addresses are refused unless `allowPrivate` lists the host or range. A URL that
//! times out, redirects forever, answers too much or answers binary gets an error result that
//! says which.
//!
//! `web_search {queries}` runs one to `searchMaxQueries` queries on the row's
//! `searchProvider` (`deepseek`, the default, or `searxng`) and merges their sources (each URL
//! once, at most `searchMaxResults`).

mod address;
mod fetch;
mod markdown;
mod providers;
mod search;
mod tools;

use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_credentials_seam::{CREDENTIALS_SERVICE, CredentialsService};
use dsh_plugin_api::io::http::{HTTP_SERVICE, HttpService};
use dsh_plugin_api::prelude::*;
use dsh_tools_seam::{TOOLS_SERVICE, ToolsService, tool_box};

use crate::address::AllowList;
use crate::fetch::{Fetcher, Limits};
use crate::search::Provider;
use crate::tools::{FetchTool, SearchTool, WebHandle};

/// The reference's default `User-Agent`: a product, never a browser disguise.
const USER_AGENT: &str = "dsh/0.1 (web_fetch)";

/// Config of `tool-web`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ToolWebConfig {
    /// Register `web_fetch`.
    pub fetch: bool,
    /// Register `web_search`.
    pub search: bool,
    /// The most sources one `web_search` call gives.
    pub search_max_results: usize,
    /// The most queries one `web_search` call takes.
    pub search_max_queries: usize,
    /// The time one `web_fetch` call has, redirects and body included.
    pub fetch_timeout_ms: u64,
    /// The time one `web_search` call has.
    pub search_timeout_ms: u64,
    /// The most characters of one `web_fetch` result (header, page and notice).
    pub fetch_max_output_chars: usize,
    pub max_url_length: usize,
    /// The most bytes of a body read; a larger declared length is refused, a longer stream cut.
    pub max_response_bytes: u64,
    /// The most characters of a decoded body.
    pub max_body_chars: usize,
    /// Redirect hops followed (within the origin).
    pub max_redirects: u32,
    pub user_agent: String,
    /// Hosts (`localhost`) and ranges (`10.0.0.0/8`, `127.0.0.1`) `web_fetch` may reach though
    /// they are not public.
    pub allow_private: Vec<String>,
    pub search_provider: SearchProviderConfig,
}

impl Default for ToolWebConfig {
    fn default() -> Self {
        Self {
            fetch: true,
            search: true,
            search_max_results: 8,
            search_max_queries: 4,
            fetch_timeout_ms: 30_000,
            search_timeout_ms: 30_000,
            fetch_max_output_chars: 200_000,
            max_url_length: 2048,
            max_response_bytes: 5_000_000,
            max_body_chars: 100_000,
            max_redirects: 5,
            user_agent: USER_AGENT.to_owned(),
            allow_private: Vec::new(),
            search_provider: SearchProviderConfig::Deepseek(DeepSeekSearchConfig::default()),
        }
    }
}

/// Which provider `web_search` asks.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    tag = "kind",
    rename_all = "lowercase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub enum SearchProviderConfig {
    /// DeepSeek's search route (the reference's provider).
    Deepseek(DeepSeekSearchConfig),
    /// A self-hosted SearXNG instance's JSON API.
    Searxng(SearxngConfig),
}

#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct DeepSeekSearchConfig {
    /// The Anthropic-compatible base (`/messages` is appended).
    pub base_url: String,
    pub model: String,
    /// The credential or environment variable holding the key.
    pub api_key_env: String,
    pub max_tokens: u32,
    /// Server-side searches per request.
    pub max_uses: u32,
}

impl Default for DeepSeekSearchConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.deepseek.com/anthropic/v1".to_owned(),
            model: "deepseek-v4-flash".to_owned(),
            api_key_env: "DEEPSEEK_API_KEY".to_owned(),
            max_tokens: 4096,
            max_uses: 5,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct SearxngConfig {
    /// The instance, e.g. `http://127.0.0.1:8888` (`/search` is appended).
    pub base_url: String,
}

fn config_error(path: &str, message: impl std::fmt::Display) -> PluginError {
    PluginError {
        kind: dsh_plugin_api::ErrorKind::Config,
        message: format!("invalid config: {path}: {message}").into(),
        path: abi_stable::std_types::RSome(format!("$.{path}").into()),
    }
}

fn provider(
    ctx: &Context,
    config: SearchProviderConfig,
    timeout_ms: u64,
) -> Result<Box<dyn Provider>, PluginError> {
    Ok(match config {
        SearchProviderConfig::Deepseek(deepseek) => {
            if url::Url::parse(&deepseek.base_url).is_err() {
                return Err(config_error(
                    "searchProvider.baseUrl",
                    format!("`{}` is not a URL", deepseek.base_url),
                ));
            }
            let (lookup, name) = (ctx.clone(), deepseek.api_key_env.clone());
            Box::new(providers::DeepSeek {
                base_url: deepseek.base_url,
                model: deepseek.model,
                api_key_env: deepseek.api_key_env,
                max_tokens: deepseek.max_tokens.max(1),
                max_uses: deepseek.max_uses.max(1),
                timeout_ms,
                key: Box::new(move || {
                    let stored = match lookup.get::<CredentialsService>(CREDENTIALS_SERVICE) {
                        Ok(Some(credentials)) => {
                            credentials.get(RString::from(name.as_str())).into_option()
                        }
                        _ => None,
                    };
                    stored
                        .map(|key| key.to_string())
                        .or_else(|| std::env::var(&name).ok())
                }),
            })
        }
        SearchProviderConfig::Searxng(searxng) => {
            if url::Url::parse(&searxng.base_url).is_err() {
                return Err(config_error(
                    "searchProvider.baseUrl",
                    format!("`{}` is not a URL", searxng.base_url),
                ));
            }
            Box::new(providers::Searxng {
                base_url: searxng.base_url,
                timeout_ms,
            })
        }
    })
}

pub struct ToolWebPlugin;

impl Plugin for ToolWebPlugin {
    const NAME: &'static str = "tool-web";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, HTTP_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[CREDENTIALS_SERVICE];
    type Config = ToolWebConfig;

    async fn apply(ctx: Context, config: ToolWebConfig) -> Result<(), PluginError> {
        for (field, value) in [
            ("searchMaxResults", config.search_max_results as u64),
            ("searchMaxQueries", config.search_max_queries as u64),
            ("fetchTimeoutMs", config.fetch_timeout_ms),
            ("searchTimeoutMs", config.search_timeout_ms),
            ("fetchMaxOutputChars", config.fetch_max_output_chars as u64),
            ("maxUrlLength", config.max_url_length as u64),
            ("maxResponseBytes", config.max_response_bytes),
            ("maxBodyChars", config.max_body_chars as u64),
        ] {
            if value == 0 {
                return Err(config_error(field, "must be a positive number"));
            }
        }
        let allow = AllowList::parse(&config.allow_private)
            .map_err(|error| config_error("allowPrivate", error))?;
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let http = ctx.inject::<HttpService>(HTTP_SERVICE)?;
        let owner = RString::from(ctx.row_id());
        let mut registrations = Vec::new();
        if config.search {
            let tool = Arc::new(SearchTool {
                ctx: ctx.clone(),
                http: http.clone(),
                provider: provider(&ctx, config.search_provider, config.search_timeout_ms)?,
                max_results: config.search_max_results,
                max_queries: config.search_max_queries,
                timeout_ms: config.search_timeout_ms,
                fetch_enabled: config.fetch,
            });
            registrations.push(
                tools
                    .register(
                        owner.clone(),
                        RString::new(),
                        tool_box(WebHandle::Search(tool)),
                    )
                    .into_result()
                    .map_err(|error| PluginError::plugin(error.to_string()))?,
            );
        }
        if config.fetch {
            let tool = Arc::new(FetchTool {
                fetcher: Fetcher {
                    ctx: ctx.clone(),
                    http,
                    allow,
                    limits: Limits {
                        max_url_length: config.max_url_length,
                        max_response_bytes: config.max_response_bytes,
                        max_body_chars: config.max_body_chars,
                        timeout_ms: config.fetch_timeout_ms,
                        max_redirects: config.max_redirects,
                        user_agent: config.user_agent,
                    },
                },
                max_output_chars: config.fetch_max_output_chars,
            });
            registrations.push(
                tools
                    .register(owner, RString::new(), tool_box(WebHandle::Fetch(tool)))
                    .into_result()
                    .map_err(|error| PluginError::plugin(error.to_string()))?,
            );
        }
        ctx.on_dispose(move || drop(registrations))
    }
}

dsh_plugin_api::export_plugins!(ToolWebPlugin);
