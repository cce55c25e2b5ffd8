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
            let parsed: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if !(200..300).contains(&status) {
                let detail = parsed
                    .pointer("/error/message")
                    .or_else(|| parsed.get("error"))
                    .or_else(|| parsed.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Err(SearchError::Provider(format!(
                    "DeepSeek search answered HTTP {status}{}",
                    if detail.is_empty() {
                        String::new()
                    } else {
                        format!(": {detail}")
                    }
                )));
            }
            map_deepseek(&parsed)
        })
    }
}

/// The sources of a Messages response.
fn map_deepseek(response: &Value) -> Result<Found, SearchError> {
    let blocks = response
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let results: Vec<&Value> = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("web_search_tool_result"))
        .collect();
    if results.is_empty() {
        return Err(SearchError::Provider(
            "DeepSeek returned no web_search_tool_result blocks; the request may not have triggered its web search".into(),
        ));
    }
    let mut snippets: HashMap<String, String> = HashMap::new();
    for block in blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
    {
        for cite in block
            .get("citations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(url), Some(text)) = (
                cite.get("url").and_then(Value::as_str),
                cite.get("cited_text").and_then(Value::as_str),
            ) && !url.is_empty()
                && !text.is_empty()
            {
                snippets
                    .entry(url.to_owned())
                    .or_insert_with(|| text.to_owned());
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut sources = Vec::new();
    for block in results {
        for item in block
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(url) = item.get("url").and_then(Value::as_str) else {
                continue;
            };
            if item.get("type").and_then(Value::as_str) != Some("web_search_result")
                || url.is_empty()
                || !seen.insert(url.to_owned())
            {
                continue;
            }
            sources.push(Source {
                url: url.to_owned(),
                title: text_field(item, "title"),
                snippet: snippets.get(url).cloned(),
                published_at: text_field(item, "page_age"),
            });
        }
    }
    Ok(Found {
        answer: None,
        sources,
        truncated: false,
    })
}

fn text_field(item: &Value, name: &str) -> Option<String> {
    item.get(name)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
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
            let parsed: Value = serde_json::from_slice(&bytes).map_err(|error| {
                SearchError::Provider(format!(
                    "SearXNG at {} answered what is not JSON: {error}",
                    self.base_url
                ))
            })?;
            Ok(map_searxng(&parsed, max))
        })
    }
}

fn map_searxng(response: &Value, max: usize) -> Found {
    let mut seen = std::collections::HashSet::new();
    let mut sources = Vec::new();
    let mut truncated = false;
    for item in response
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(url) = item
            .get("url")
            .and_then(Value::as_str)
            .filter(|url| !url.is_empty())
        else {
            continue;
        };
        if !seen.insert(url.to_owned()) {
            continue;
        }
        if sources.len() == max {
            truncated = true;
            break;
        }
        sources.push(Source {
            url: url.to_owned(),
            title: text_field(item, "title"),
            snippet: text_field(item, "content"),
            published_at: text_field(item, "publishedDate"),
        });
    }
    // An instant answer, when the engines gave one (a string, or `{answer: ..}` on newer ones).
    let answer = response
        .get("answers")
        .and_then(Value::as_array)
        .and_then(|answers| answers.first())
        .and_then(|answer| {
            answer
                .as_str()
                .or_else(|| answer.get("answer").and_then(Value::as_str))
        })
        .filter(|answer| !answer.is_empty())
        .map(str::to_owned);
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
        let found = map_deepseek(&response).unwrap();
        assert_eq!(found.sources.len(), 2);
        assert_eq!(found.sources[0].snippet.as_deref(), Some("excerpt"));
        assert_eq!(found.sources[0].published_at.as_deref(), Some("May 1"));
        let none = map_deepseek(&json!({"content": [{"type": "text", "text": "hi"}]})).unwrap_err();
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
        let found = map_searxng(&response, 2);
        assert_eq!(found.sources.len(), 2);
        assert!(found.truncated);
        assert_eq!(found.answer.as_deref(), Some("42"));
        assert_eq!(found.sources[0].snippet.as_deref(), Some("about a"));
    }
}
