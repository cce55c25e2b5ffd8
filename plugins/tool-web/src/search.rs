//! `web_search` behind a provider: the [`Provider`] interface, the result every provider
//! answers, the merge of several queries' results (round-robin by rank, each URL once, capped)
//! and the text the model gets. The providers are `deepseek` (the reference's: DeepSeek's
//! Anthropic-compatible Messages endpoint with its native `web_search` server tool) and
//! `searxng` (a self-hosted SearXNG's JSON API), chosen by the row's `searchProvider`.

use std::future::Future;
use std::pin::Pin;

use abi_stable::std_types::{RErr, ROk, RSome, RVec};
use dsh_plugin_api::io::http::{HttpErrorKind, HttpHeader, HttpRequest, HttpService};

/// A provider's failure, as the tool result shows it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum SearchError {
    #[error("{0}")]
    Provider(String),
    #[error("{0}")]
    Credential(String),
    #[error("the search timed out after {0} ms")]
    Timeout(u64),
}

impl SearchError {
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::Provider(_) => "WEB_PROVIDER_ERROR",
            Self::Credential(_) => "WEB_PROVIDER_CREDENTIAL_MISSING",
            Self::Timeout(_) => "WEB_SEARCH_TIMEOUT",
        }
    }
}

/// One source a search found.
#[derive(Debug, Clone, PartialEq, Eq, dsh_plugin_api::Serialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
pub(crate) struct Source {
    pub(crate) url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) snippet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) published_at: Option<String>,
}

/// What a search answers: an optional answer text and its sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) answer: Option<String>,
    pub(crate) sources: Vec<Source>,
    pub(crate) truncated: bool,
}

pub(crate) type SearchFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Found, SearchError>> + Send + 'a>>;

/// A search backend.
pub(crate) trait Provider: Send + Sync {
    /// Its name in messages (`deepseek`, `searxng`).
    fn name(&self) -> &'static str;
    /// Searches `query` through `http`, answering at most `max` sources.
    fn search<'a>(&'a self, http: &'a HttpService, query: &'a str, max: usize) -> SearchFuture<'a>;
}

/// The results of several queries as one: round-robin by rank, each URL once, at most `max`.
pub(crate) fn merge(queries: &[String], results: Vec<Found>, max: usize) -> Found {
    if results.len() == 1 {
        let mut only = results.into_iter().next().unwrap_or_default();
        if only.sources.len() > max {
            only.sources.truncate(max);
            only.truncated = true;
        }
        return only;
    }
    let mut seen = std::collections::HashSet::new();
    let mut sources = Vec::new();
    let mut truncated = results.iter().any(|found| found.truncated);
    let ranks = results
        .iter()
        .map(|found| found.sources.len())
        .max()
        .unwrap_or(0);
    'merge: for rank in 0..ranks {
        for found in &results {
            if let Some(source) = found.sources.get(rank)
                && seen.insert(source.url.clone())
            {
                if sources.len() == max {
                    truncated = true;
                    break 'merge;
                }
                sources.push(source.clone());
            }
        }
    }
    let answers: Vec<String> = queries
        .iter()
        .zip(&results)
        .filter_map(|(query, found)| {
            let answer = found
                .answer
                .as_deref()
                .filter(|answer| !answer.is_empty())?;
            Some(format!("### {query}\n\n{answer}"))
        })
        .collect();
    Found {
        answer: (!answers.is_empty()).then(|| answers.join("\n\n")),
        sources,
        truncated,
    }
}

/// The text the model gets.
pub(crate) fn render(found: &Found) -> String {
    let mut parts = Vec::new();
    let answer = found.answer.as_deref().filter(|answer| !answer.is_empty());
    if let Some(answer) = answer {
        parts.push(answer.to_owned());
    }
    if !found.sources.is_empty() {
        let lines: Vec<String> = found
            .sources
            .iter()
            .map(|source| {
                let label = source
                    .title
                    .clone()
                    .filter(|title| !title.is_empty())
                    .or_else(|| {
                        url::Url::parse(&source.url)
                            .ok()
                            .and_then(|url| url.host_str().map(str::to_owned))
                    })
                    .unwrap_or_else(|| source.url.clone());
                let mut meta = Vec::new();
                if let Some(snippet) = source.snippet.as_deref().filter(|s| !s.is_empty()) {
                    meta.push(snippet.to_owned());
                }
                if let Some(date) = source.published_at.as_deref().filter(|d| !d.is_empty()) {
                    meta.push(format!("({date})"));
                }
                let suffix = match meta.is_empty() {
                    true => String::new(),
                    false => format!(" — {}", meta.join(" ")),
                };
                format!("- [{label}]({}){suffix}", source.url)
            })
            .collect();
        parts.push(format!("Sources:\n{}", lines.join("\n")));
    } else if answer.is_none() {
        parts.push("No results found.".to_owned());
    }
    if found.truncated {
        parts.push(format!(
            "(Showing the first {} sources. Refine the query for more.)",
            found.sources.len()
        ));
    }
    parts.push("Cite the relevant URLs above as markdown links in your answer.".to_owned());
    parts.join("\n\n")
}

/// One JSON exchange for a provider: the status and the body (read up to `cap` bytes).
pub(crate) async fn exchange(
    http: &HttpService,
    method: &str,
    url: &str,
    headers: Vec<(&str, String)>,
    body: Vec<u8>,
    timeout_ms: u64,
    cap: usize,
) -> Result<(u16, Vec<u8>), SearchError> {
    let request = HttpRequest {
        method: method.into(),
        url: url.into(),
        headers: headers
            .into_iter()
            .map(|(name, value)| HttpHeader {
                name: name.into(),
                value: value.into(),
            })
            .collect::<Vec<_>>()
            .into(),
        body: RVec::from(body),
        head_timeout_ms: timeout_ms,
    };
    let response = match http.send(request).await {
        ROk(response) => response,
        RErr(error) if error.kind == HttpErrorKind::Timeout => {
            return Err(SearchError::Timeout(timeout_ms));
        }
        RErr(error) => {
            return Err(SearchError::Provider(format!(
                "the search request to {url} failed: {error}"
            )));
        }
    };
    if matches!(response.status, 301 | 302 | 303 | 307 | 308) {
        return Err(SearchError::Provider(format!(
            "{url} answered a redirect (HTTP {}) to {}: set the provider's baseUrl to the final address",
            response.status,
            response.header("location").unwrap_or("nowhere")
        )));
    }
    let mut bytes = Vec::new();
    loop {
        match response.body.next_chunk(timeout_ms).await {
            ROk(RSome(chunk)) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > cap {
                    return Err(SearchError::Provider(format!(
                        "{url} answered more than {cap} bytes"
                    )));
                }
            }
            ROk(_) => break,
            RErr(error) if error.kind == HttpErrorKind::Timeout => {
                return Err(SearchError::Timeout(timeout_ms));
            }
            RErr(error) => {
                return Err(SearchError::Provider(format!(
                    "reading the answer of {url} failed: {error}"
                )));
            }
        }
    }
    Ok((response.status, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(url: &str, title: Option<&str>) -> Source {
        Source {
            url: url.into(),
            title: title.map(str::to_owned),
            snippet: None,
            published_at: None,
        }
    }

    #[test]
    fn results_render_as_the_reference_gives_them() {
        let found = Found {
            answer: None,
            sources: vec![
                Source {
                    snippet: Some("a snippet".into()),
                    published_at: Some("2026-01-02".into()),
                    ..source("https://a.example/x", Some("A"))
                },
                source("https://b.example/y", None),
            ],
            truncated: true,
        };
        assert_eq!(
            render(&found),
            "Sources:\n- [A](https://a.example/x) — a snippet (2026-01-02)\n- [b.example](https://b.example/y)\n\n(Showing the first 2 sources. Refine the query for more.)\n\nCite the relevant URLs above as markdown links in your answer."
        );
        assert_eq!(
            render(&Found::default()),
            "No results found.\n\nCite the relevant URLs above as markdown links in your answer."
        );
    }

    #[test]
    fn queries_merge_round_robin_each_url_once_capped() {
        let one = Found {
            answer: Some("first".into()),
            sources: vec![source("u1", None), source("u2", None), source("u3", None)],
            truncated: false,
        };
        let two = Found {
            answer: None,
            sources: vec![source("u1", None), source("v2", None)],
            truncated: false,
        };
        let merged = merge(&["q1".into(), "q2".into()], vec![one, two], 3);
        let urls: Vec<&str> = merged.sources.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, ["u1", "u2", "v2"]);
        assert!(merged.truncated);
        assert_eq!(merged.answer.as_deref(), Some("### q1\n\nfirst"));
    }
}
