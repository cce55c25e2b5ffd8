//! The two search providers.
//!
//! `deepseek`: one Messages request to DeepSeek's Anthropic-compatible endpoint
//! (`{baseUrl}/messages`) carrying the native `web_search_20250305` server tool; the sources
//! are its `web_search_tool_result` blocks, each joined to the first excerpt a text block cites
//! for its URL. A response without result blocks is an error, never prose scraped for links.
//! The key is the stored credential (or the environment variable) named by `apiKeyEnv`.
//!
//! `searxng`: `GET {baseUrl}/search?q=..&format=json` on a SearXNG instance (its `json`
//! format must be enabled under `search.formats` in its settings.yml, or it answers 403).

use std::collections::HashMap;

use dsh_plugin_api::Deserialize;
use dsh_plugin_api::io::http::HttpService;
use serde_json::{Value, json};

use crate::search::{Found, Provider, SearchError, SearchFuture, Source, exchange};

/// The most a provider's answer may hold.
const ANSWER_CAP: usize = 8 * 1024 * 1024;

/// Resolves the DeepSeek key when a search runs (a key stored since start counts).
pub(crate) type KeySource = Box<dyn Fn() -> Option<String> + Send + Sync>;

pub(crate) struct DeepSeek {
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) api_key_env: String,
    pub(crate) max_tokens: u32,
    pub(crate) max_uses: u32,
    pub(crate) timeout_ms: u64,
    pub(crate) key: KeySource,
}

impl Provider for DeepSeek {
    fn name(&self) -> &'static str {
        "deepseek"
    }

    fn search<'a>(
        &'a self,
        http: &'a HttpService,
        query: &'a str,
        _max: usize,
    ) -> SearchFuture<'a> {
        Box::pin(async move {
            let key = (self.key)().filter(|key| !key.trim().is_empty()).ok_or_else(|| {
                SearchError::Credential(format!(
                    "web_search has no DeepSeek API key: set {} (or store it in the page's settings), or give the tool-web row a `searchProvider` of kind `searxng`",
                    self.api_key_env
                ))
            })?;
            let body = json!({
                "model": self.model,
                "max_tokens": self.max_tokens,
                "messages": [{
                    "role": "user",
                    "content": [{"type": "text", "text": format!("Perform a web search for the query: {query}")}],
                }],
                "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": self.max_uses}],
            });
            let url = format!("{}/messages", self.base_url.trim_end_matches('/'));
            let headers = vec![
                ("x-api-key", key.clone()),
                ("authorization", format!("Bearer {key}")),
                ("anthropic-version", "2023-06-01".to_owned()),
                ("content-type", "application/json".to_owned()),
                ("accept", "application/json".to_owned()),
            ];
            let (status, bytes) = exchange(
                http,
                "POST",
                &url,
                headers,
                body.to_string().into_bytes(),
                self.timeout_ms,
                ANSWER_CAP,
            )
            .await?;
            if !(200..300).contains(&status) {
                let detail = serde_json::from_slice::<ErrorBody>(&bytes)
                    .ok()
                    .and_then(ErrorBody::detail)
                    .map_or_else(String::new, |detail| format!(": {detail}"));
                return Err(SearchError::Provider(format!(
                    "DeepSeek search answered HTTP {status}{detail}"
                )));
            }
            let parsed: Messages = serde_json::from_slice(&bytes).map_err(|error| {
                SearchError::Provider(format!(
                    "DeepSeek search answered what is not a Messages response: {error}"
                ))
            })?;
            map_deepseek(parsed)
        })
    }
}

/// A Messages response, as far as search reads it.
#[derive(Deserialize, Default)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Messages {
    #[serde(default)]
    content: Vec<Block>,
}

#[derive(Deserialize)]
#[serde(
    crate = "dsh_plugin_api::serde",
    tag = "type",
    rename_all = "snake_case"
)]
enum Block {
    /// Its `content` is the results, or an error object (read as no results).
    WebSearchToolResult {
        #[serde(default)]
        content: Value,
    },
    Text {
        #[serde(default)]
        citations: Vec<Citation>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Citation {
    url: Option<String>,
    cited_text: Option<String>,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    url: String,
    title: Option<String>,
    page_age: Option<String>,
}

/// An error answer: `{error: {message}}`, `{error: ".."}` or `{message: ".."}`.
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct ErrorBody {
    error: Option<ErrorDetail>,
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", untagged)]
enum ErrorDetail {
    Text(String),
    Object { message: Option<String> },
}

impl ErrorBody {
    fn detail(self) -> Option<String> {
        let nested = match self.error {
            Some(ErrorDetail::Text(text)) => Some(text),
            Some(ErrorDetail::Object { message }) => message,
            None => None,
        };
        nested.or(self.message).filter(|text| !text.is_empty())
    }
}

/// The sources of a Messages response.
fn map_deepseek(response: Messages) -> Result<Found, SearchError> {
    let mut snippets: HashMap<String, String> = HashMap::new();
    let mut results = Vec::new();
    for block in response.content {
        match block {
            Block::WebSearchToolResult { content } => results.push(content),
            Block::Text { citations } => {
                for cite in citations {
                    if let (Some(url), Some(text)) = (cite.url, cite.cited_text)
                        && !url.is_empty()
                        && !text.is_empty()
                    {
                        snippets.entry(url).or_insert(text);
                    }
                }
            }
            Block::Other => {}
        }
    }
    if results.is_empty() {
        return Err(SearchError::Provider(
            "DeepSeek returned no web_search_tool_result blocks; the request may not have triggered its web search".into(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut sources = Vec::new();
    for content in results {
        let items: Vec<Item> = serde_json::from_value(content).unwrap_or_default();
        for item in items {
            if item.kind != "web_search_result"
                || item.url.is_empty()
                || !seen.insert(item.url.clone())
            {
                continue;
            }
            sources.push(Source {
                snippet: snippets.get(&item.url).cloned(),
                title: item.title.filter(|title| !title.is_empty()),
                published_at: item.page_age.filter(|age| !age.is_empty()),
                url: item.url,
            });
        }
    }
    Ok(Found {
        answer: None,
        sources,
        truncated: false,
    })
}

pub(crate) struct Searxng {
    pub(crate) base_url: String,
    pub(crate) timeout_ms: u64,
}

impl Provider for Searxng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn search<'a>(&'a self, http: &'a HttpService, query: &'a str, max: usize) -> SearchFuture<'a> {
        Box::pin(async move {
            let mut url =
                url::Url::parse(&format!("{}/search", self.base_url.trim_end_matches('/')))
                    .map_err(|error| {
                        SearchError::Provider(format!(
                            "the searxng baseUrl `{}` is not a URL: {error}",
                            self.base_url
                        ))
                    })?;
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            let headers = vec![("accept", "application/json".to_owned())];
            let (status, bytes) = exchange(
                http,
                "GET",
                url.as_str(),
                headers,
                Vec::new(),
                self.timeout_ms,
                ANSWER_CAP,
            )
            .await?;
            if status == 403 {
                return Err(SearchError::Provider(format!(
                    "SearXNG at {} refused the JSON format (HTTP 403): enable `json` under `search.formats` in its settings.yml",
                    self.base_url
                )));
            }
            if !(200..300).contains(&status) {
                return Err(SearchError::Provider(format!(
                    "SearXNG at {} answered HTTP {status}",
                    self.base_url
                )));
            }
            let parsed: SearxResponse = serde_json::from_slice(&bytes).map_err(|error| {
                SearchError::Provider(format!(
                    "SearXNG at {} answered what is not its JSON: {error}",
                    self.base_url
                ))
            })?;
            Ok(map_searxng(parsed, max))
        })
    }
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct SearxResponse {
    #[serde(default)]
    results: Vec<SearxItem>,
    #[serde(default)]
    answers: Vec<SearxAnswer>,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct SearxItem {
    #[serde(default)]
    url: String,
    title: Option<String>,
    content: Option<String>,
    #[serde(rename = "publishedDate")]
    published_date: Option<String>,
}

/// An instant answer: a string, or `{answer: ..}` on newer instances.
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", untagged)]
enum SearxAnswer {
    Text(String),
    Object { answer: Option<String> },
}

fn map_searxng(response: SearxResponse, max: usize) -> Found {
    let mut seen = std::collections::HashSet::new();
    let mut sources = Vec::new();
    let mut truncated = false;
    for item in response.results {
        if item.url.is_empty() || !seen.insert(item.url.clone()) {
            continue;
        }
        if sources.len() == max {
            truncated = true;
            break;
        }
        sources.push(Source {
            url: item.url,
            title: item.title.filter(|text| !text.is_empty()),
            snippet: item.content.filter(|text| !text.is_empty()),
            published_at: item.published_date.filter(|text| !text.is_empty()),
        });
    }
    let answer = response
        .answers
        .into_iter()
        .next()
        .and_then(|answer| match answer {
            SearxAnswer::Text(text) => Some(text),
            SearxAnswer::Object { answer } => answer,
        })
        .filter(|answer| !answer.is_empty());
    Found {
        answer,
        sources,
        truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepseek_sources_come_from_result_blocks_with_cited_snippets() {
        let response = json!({"content": [
            {"type": "server_tool_use", "name": "web_search"},
            {"type": "web_search_tool_result", "content": [
                {"type": "web_search_result", "url": "https://a.example", "title": "A", "page_age": "May 1"},
                {"type": "web_search_result", "url": "https://a.example", "title": "dup"},
                {"type": "web_search_result", "url": "https://b.example"}
            ]},
            {"type": "text", "text": "x", "citations": [{"url": "https://a.example", "cited_text": "excerpt"}]}
        ]});
        let found = map_deepseek(serde_json::from_value(response).unwrap()).unwrap();
        assert_eq!(found.sources.len(), 2);
        assert_eq!(found.sources[0].snippet.as_deref(), Some("excerpt"));
        assert_eq!(found.sources[0].published_at.as_deref(), Some("May 1"));
        let text_only = json!({"content": [{"type": "text", "text": "hi"}]});
        let none = map_deepseek(serde_json::from_value(text_only).unwrap()).unwrap_err();
        assert!(none.to_string().contains("no web_search_tool_result"));
    }

    #[test]
    fn searxng_results_map_and_cap() {
        let response = json!({
            "answers": ["42"],
            "results": [
                {"url": "https://a.example", "title": "A", "content": "about a", "publishedDate": "2026-01-01"},
                {"url": "https://b.example", "title": "B"},
                {"url": "https://c.example", "title": "C"}
            ]
        });
        let found = map_searxng(serde_json::from_value(response).unwrap(), 2);
        assert_eq!(found.sources.len(), 2);
        assert!(found.truncated);
        assert_eq!(found.answer.as_deref(), Some("42"));
        assert_eq!(found.sources[0].snippet.as_deref(), Some("about a"));
    }
}
