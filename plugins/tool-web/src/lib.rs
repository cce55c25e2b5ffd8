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

use std::sync::Arc;
use std::time::Duration;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_credentials_seam::{CREDENTIALS_SERVICE, CredentialsService};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::io::http::{HTTP_SERVICE, HttpService};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{
    Concurrency, ContentBlock, Guidance, OutcomeSummary, ToolDecl, ToolError, ToolErrorInfo,
    ToolReply,
};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, Tool_TO, ToolsService};
use serde_json::{Value, json};

use crate::address::AllowList;
use crate::fetch::{Fetcher, Kind, Limits};
use crate::search::{Found, Provider, SearchError};

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

/// A failed call, with its class and code.
fn failure(message: &str, code: &str) -> ToolReply {
    let info = ToolErrorInfo::new("WebError", code);
    ToolReply::Error(ToolError::new(message).coded(info.name, info.code))
}

/// Races `work` against the call's deadline and its cancellation.
async fn bounded<T>(
    ctx: &Context,
    work: impl std::future::Future<Output = T>,
    ms: u64,
    cancel: &CancelBox,
) -> Option<T> {
    let stop = first_of(ctx.sleep(Duration::from_millis(ms)), cancel.cancelled());
    match first_of(work, stop).await {
        Either::Left(value) => Some(value),
        Either::Right(_) => None,
    }
}

struct FetchTool {
    fetcher: Fetcher,
    max_output_chars: usize,
}

impl FetchTool {
    fn decl(&self) -> ToolDecl {
        let mut decl = ToolDecl::new(
            "web_fetch",
            "Fetch the content of a specific HTTP(S) URL and return it decoded to text.",
            json!({
                "type": "object",
                "properties": {"url": {"type": "string", "description": "The HTTP(S) URL to fetch."}},
                "required": ["url"]
            }),
        );
        decl.concurrency = Concurrency::Parallel;
        // Our own deadline answers first, saying which URL did not answer.
        decl.timeout_ms = Some(self.fetcher.limits.timeout_ms + 5_000);
        decl.guidance = Some(Guidance {
            order: 111,
            text: "Use the web_fetch tool to retrieve the content of a specific HTTP(S) URL (for example a result from web_search). It returns the page content decoded to text. Cite the URL as a markdown link when you use its content.".to_owned(),
        });
        decl
    }

    async fn run(&self, arguments: &str, cancel: &CancelBox) -> ToolReply {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let Some(url) = args.get("url").and_then(Value::as_str) else {
            return failure("url must be a non-empty string", "INVALID_ARGS");
        };
        let ms = self.fetcher.limits.timeout_ms;
        let fetched = match bounded(&self.fetcher.ctx, self.fetcher.fetch(url), ms, cancel).await {
            None if cancel.is_cancelled() => return failure("web fetch aborted", "WEB_ABORTED"),
            None => {
                let error = fetch::FetchError::Timeout {
                    url: url.trim().to_owned(),
                    ms,
                };
                return failure(&error.to_string(), error.code());
            }
            Some(Err(error)) => return failure(&error.to_string(), error.code()),
            Some(Ok(fetched)) => fetched,
        };
        let text = self.render(fetched.clone()).await;
        ToolReply::text(text.0).with_meta(json!({
            "url": fetched.url,
            "statusCode": fetched.status,
            "truncated": text.1,
        }))
    }

    /// The model's text, bounded as a whole, and whether anything was cut.
    async fn render(&self, fetched: fetch::Fetched) -> (String, bool) {
        const FOOTER: &str =
            "\n\n(Content truncated. Fetch a more specific URL or section for the full text.)";
        let cap = self.max_output_chars;
        let mut source_cut = false;
        let mut source = fetched.body;
        if let Some((cut, _)) = source.char_indices().nth(cap) {
            source.truncate(cut);
            source_cut = true;
        }
        let body = match fetched.kind {
            // Off the runtime's threads: a large page takes a while to convert.
            Kind::Html => self
                .fetcher
                .ctx
                .blocking(move || markdown::convert(&source))
                .await
                .unwrap_or_default(),
            Kind::Text => source,
        };
        let prefix = format!(
            "Fetched {} (HTTP {})\n\n{body}",
            fetched.url, fetched.status
        );
        let length = prefix.chars().count();
        let truncated = fetched.truncated || source_cut || length > cap;
        if !truncated {
            return (prefix, false);
        }
        let room = cap.saturating_sub(FOOTER.chars().count());
        let kept: String = prefix.chars().take(room).collect();
        (format!("{kept}{FOOTER}"), true)
    }
}

/// The registered handle.
struct FetchHandle(Arc<FetchTool>);

impl Tool for FetchHandle {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&self.0.decl())
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = self.0.clone();
        async move { Json::encode(&tool.run(call.arguments.as_str(), &cancel).await) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

struct SearchTool {
    ctx: Context,
    http: Service<HttpService>,
    provider: Box<dyn Provider>,
    max_results: usize,
    max_queries: usize,
    timeout_ms: u64,
    fetch_enabled: bool,
}

impl SearchTool {
    fn decl(&self) -> ToolDecl {
        let n = self.max_queries;
        let mut decl = ToolDecl::new(
            "web_search",
            format!(
                "Search the web for current information. Provide 1–{n} queries in the required queries array. Returns an optional summary answer and a list of source URLs."
            ),
            json!({
                "type": "object",
                "properties": {"queries": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": format!("Required search queries; accepts 1–{n} items and merges their results.")
                }},
                "required": ["queries"]
            }),
        );
        decl.concurrency = Concurrency::Parallel;
        decl.timeout_ms = Some(self.timeout_ms + 5_000);
        let follow = match self.fetch_enabled {
            true => {
                "Follow up with web_fetch when you need the full content of a specific result, and cite the relevant URLs as markdown links."
            }
            false => {
                "Use the returned source snippets when available, and cite the relevant URLs as markdown links."
            }
        };
        decl.guidance = Some(Guidance {
            order: 110,
            text: format!(
                "Use the web_search tool to discover current information on the web. The required queries array accepts 1–{n} non-empty search queries; use a one-item array for a single search. It returns an optional answer plus a list of source URLs. {follow}"
            ),
        });
        decl
    }

    fn queries(&self, arguments: &str) -> Result<Vec<String>, String> {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let Some(list) = args.get("queries").and_then(Value::as_array) else {
            return Err("queries must be an array of strings".to_owned());
        };
        if list.is_empty() {
            return Err("queries must contain at least one query".to_owned());
        }
        if list.len() > self.max_queries {
            let noun = if self.max_queries == 1 {
                "query"
            } else {
                "queries"
            };
            return Err(format!(
                "queries must contain at most {} {noun}",
                self.max_queries
            ));
        }
        let mut out: Vec<String> = Vec::new();
        for query in list {
            let Some(text) = query.as_str().filter(|text| !text.trim().is_empty()) else {
                return Err("each query must be a non-empty string".to_owned());
            };
            if !out.iter().any(|seen| seen == text) {
                out.push(text.to_owned());
            }
        }
        Ok(out)
    }

    async fn run(&self, arguments: &str, cancel: &CancelBox) -> ToolReply {
        let queries = match self.queries(arguments) {
            Ok(queries) => queries,
            Err(message) => return failure(&message, "INVALID_ARGS"),
        };
        let searches = queries
            .iter()
            .map(|query| self.provider.search(&self.http, query, self.max_results));
        let all = futures_join(searches.collect());
        let results = match bounded(&self.ctx, all, self.timeout_ms, cancel).await {
            None if cancel.is_cancelled() => return failure("web search aborted", "WEB_ABORTED"),
            None => {
                let error = SearchError::Timeout(self.timeout_ms);
                return failure(&error.to_string(), error.code());
            }
            Some(results) => results,
        };
        let mut found: Vec<Found> = Vec::new();
        for result in results {
            match result {
                Ok(one) => found.push(one),
                Err(error) => {
                    let message = format!("{} search failed: {error}", self.provider.name());
                    return failure(&message, error.code());
                }
            }
        }
        let merged = search::merge(&queries, found, self.max_results);
        let mut meta = json!({"sources": merged.sources, "truncated": merged.truncated});
        if let (Some(answer), Some(object)) = (&merged.answer, meta.as_object_mut()) {
            object.insert("answer".to_owned(), Value::String(answer.clone()));
        }
        ToolReply::text(search::render(&merged)).with_meta(meta)
    }
}

/// Polls every future until all are done (the queries of one call run side by side).
async fn futures_join(futures: Vec<search::SearchFuture<'_>>) -> Vec<Result<Found, SearchError>> {
    let mut slots: Vec<Option<Result<Found, SearchError>>> = futures.iter().map(|_| None).collect();
    let mut futures: Vec<Option<search::SearchFuture<'_>>> =
        futures.into_iter().map(Some).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (slot, future) in slots.iter_mut().zip(futures.iter_mut()) {
            if let Some(running) = future {
                match running.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => {
                        *slot = Some(value);
                        *future = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            return std::task::Poll::Pending;
        }
        std::task::Poll::Ready(slots.iter_mut().filter_map(Option::take).collect())
    })
    .await
}

/// The registered handle.
struct SearchHandle(Arc<SearchTool>);

impl Tool for SearchHandle {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&self.0.decl())
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = self.0.clone();
        async move { Json::encode(&tool.run(call.arguments.as_str(), &cancel).await) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
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
                        Tool_TO::from_value(SearchHandle(tool), TD_Opaque),
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
                    .register(
                        owner,
                        RString::new(),
                        Tool_TO::from_value(FetchHandle(tool), TD_Opaque),
                    )
                    .into_result()
                    .map_err(|error| PluginError::plugin(error.to_string()))?,
            );
        }
        ctx.on_dispose(move || drop(registrations))
    }
}

dsh_plugin_api::export_plugins!(ToolWebPlugin);
