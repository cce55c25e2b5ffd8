//! The two tools as the registry sees them: their declarations (schemas, prompt guidance,
//! time limits), the reading of their arguments, and the replies: the text the model gets and
//! the meta a page's card reads (`{url, statusCode, truncated}` for a fetch, the sources for a
//! search).

use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::io::http::HttpService;
use dsh_plugin_api::{Context, Json, Service};
use dsh_protocol::{
    Concurrency, ContentBlock, Guidance, OutcomeSummary, ToolDecl, ToolError, ToolErrorInfo,
    ToolReply,
};
use dsh_tools_seam::{CallView, Tool};
use serde_json::{Value, json};

use crate::fetch::{self, Fetcher, Kind};
use crate::markdown;
use crate::search::{self, Found, Provider, SearchError};

/// The arguments' names, as the schemas require them.
const URL: &str = "url";
const QUERIES: &str = "queries";

#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct FetchArgs {
    url: String,
}

#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct SearchArgs {
    /// Values, not strings, so a bad item is named rather than the whole list refused.
    queries: Vec<Value>,
}

/// Why `web_search`'s arguments are refused (the reference's texts).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
enum ArgsError {
    #[error("queries must be an array of strings")]
    NotAList,
    #[error("queries must contain at least one query")]
    Empty,
    #[error("queries must contain at most {0} {1}")]
    TooMany(usize, &'static str),
    #[error("each query must be a non-empty string")]
    Blank,
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

pub(crate) struct FetchTool {
    pub(crate) fetcher: Fetcher,
    pub(crate) max_output_chars: usize,
}

impl FetchTool {
    fn decl(&self) -> ToolDecl {
        let mut decl = ToolDecl::new(
            "web_fetch",
            "Fetch the content of a specific HTTP(S) URL and return it decoded to text.",
            json!({
                "type": "object",
                "properties": {"url": {"type": "string", "description": "The HTTP(S) URL to fetch."}},
                "required": [URL]
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
        let Ok(FetchArgs { url }) = serde_json::from_str(arguments) else {
            return failure("url must be a non-empty string", "INVALID_ARGS");
        };
        let url = url.as_str();
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
                .blocking(move || markdown::convert_on_own_stack(source))
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

pub(crate) struct SearchTool {
    pub(crate) ctx: Context,
    pub(crate) http: Service<HttpService>,
    pub(crate) provider: Box<dyn Provider>,
    pub(crate) max_results: usize,
    pub(crate) max_queries: usize,
    pub(crate) timeout_ms: u64,
    pub(crate) fetch_enabled: bool,
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
                "required": [QUERIES]
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

    fn queries(&self, arguments: &str) -> Result<Vec<String>, ArgsError> {
        let Ok(SearchArgs { queries: list }) = serde_json::from_str(arguments) else {
            return Err(ArgsError::NotAList);
        };
        if list.is_empty() {
            return Err(ArgsError::Empty);
        }
        if list.len() > self.max_queries {
            let noun = if self.max_queries == 1 {
                "query"
            } else {
                "queries"
            };
            return Err(ArgsError::TooMany(self.max_queries, noun));
        }
        let mut out: Vec<String> = Vec::new();
        for query in list {
            let Some(text) = query.as_str().filter(|text| !text.trim().is_empty()) else {
                return Err(ArgsError::Blank);
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
            Err(error) => return failure(&error.to_string(), "INVALID_ARGS"),
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

/// The registered handle of either tool.
#[derive(Clone)]
pub(crate) enum WebHandle {
    Fetch(Arc<FetchTool>),
    Search(Arc<SearchTool>),
}

impl Tool for WebHandle {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&match self {
            Self::Fetch(tool) => tool.decl(),
            Self::Search(tool) => tool.decl(),
        })
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let handle = self.clone();
        async move {
            let arguments = call.arguments.as_str();
            let reply = match handle {
                Self::Fetch(tool) => tool.run(arguments, &cancel).await,
                Self::Search(tool) => tool.run(arguments, &cancel).await,
            };
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}
