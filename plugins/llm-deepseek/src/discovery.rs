//! Model discovery as pure logic: the `GET {base}/models` request an OpenAI-compatible endpoint
//! (DeepSeek's own API included) answers with the models it serves, reading that answer (the
//! OpenAI list shape, `{"object": "list", "data": [{"id": ..., "owned_by": ...}]}`), and laying
//! the discovered ids over the configured catalog. Sending the request, its time bound and the
//! cache belong to the plugin.

use std::collections::HashSet;

use dsh_protocol::CatalogModel;
use serde::Deserialize;

use crate::config::AdapterConfig;

/// The longest one discovery may take, connection and body included: it runs beside the host,
/// never in a turn, but a list that never comes should not keep a task and a socket forever.
pub const DISCOVERY_TIMEOUT_MS: u64 = 5_000;
/// The most bytes of a model list read: far above a real one (OpenRouter's, with descriptions
/// and prices for hundreds of models, is a few hundred KiB), low enough to bound memory.
pub const MAX_MODEL_LIST_BYTES: usize = 8 * 1024 * 1024;
/// The most discovered ids kept: more would only make the picker unusable.
pub const MAX_DISCOVERED_MODELS: usize = 2_000;

/// Why an endpoint's models could not be discovered (the configured catalog is kept).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    #[error("it answered HTTP {0}")]
    Status(u16),
    #[error("no answer within {0} ms")]
    Timeout(u64),
    #[error("the request failed: {0}")]
    Transport(String),
    #[error("its answer is larger than {MAX_MODEL_LIST_BYTES} bytes")]
    TooLarge,
    #[error("its answer is not a model list: {0}")]
    NotAList(String),
}

/// `{base}/models`: the same base the chat requests use, so discovery reaches no other host.
pub fn models_url(config: &AdapterConfig) -> String {
    format!("{}/models", config.base_url)
}

/// The headers of a discovery request: the chat requests' authorization and identity, none of
/// the per-session attribution headers (a listing belongs to no session).
pub fn discovery_headers(config: &AdapterConfig, key: &str) -> Vec<(String, String)> {
    let mut headers = authorization(key);
    headers.extend([
        ("accept".to_owned(), "application/json".to_owned()),
        ("user-agent".to_owned(), config.identity.user_agent()),
    ]);
    headers
}

/// The authorization header of `key`; none for the empty key (an endpoint that takes none).
pub(crate) fn authorization(key: &str) -> Vec<(String, String)> {
    match key.is_empty() {
        true => Vec::new(),
        false => vec![("authorization".to_owned(), format!("Bearer {key}"))],
    }
}

#[derive(Deserialize)]
struct ListBody {
    data: Vec<ListEntry>,
}

/// One entry of `data`: a model with a string id, or anything else (skipped).
#[derive(Deserialize)]
#[serde(untagged)]
enum ListEntry {
    Model { id: String },
    Other(serde::de::IgnoredAny),
}

/// The model ids of a list answer, in the endpoint's order: blank and repeated ids are
/// skipped, as are entries without a string `id` (one odd entry does not cost the whole list),
/// and at most [`MAX_DISCOVERED_MODELS`] are kept. `object` is not required: some servers leave
/// it out, and `data` alone says what the answer is.
pub fn parse_model_list(body: &[u8]) -> Result<Vec<String>, DiscoveryError> {
    let list: ListBody = serde_json::from_slice(body)
        .map_err(|error| DiscoveryError::NotAList(error.to_string()))?;
    let mut seen = HashSet::new();
    Ok(list
        .data
        .iter()
        .filter_map(|entry| match entry {
            ListEntry::Model { id } => Some(id.trim()),
            ListEntry::Other(_) => None,
        })
        .filter(|id| !id.is_empty())
        .filter(|id| seen.insert(id.to_owned()))
        .take(MAX_DISCOVERED_MODELS)
        .map(str::to_owned)
        .collect())
}

/// The catalog with the discovered ids laid over it: every configured model first, as
/// configured (its name, window and caps are what the row knows and the endpoint does not
/// say), then each discovered id the configuration does not list, by its id alone.
pub fn merge_discovered(configured: &[CatalogModel], discovered: &[String]) -> Vec<CatalogModel> {
    let known: HashSet<&str> = configured.iter().map(|model| model.id.as_str()).collect();
    let mut merged = configured.to_vec();
    merged.extend(
        discovered
            .iter()
            .filter(|id| !known.contains(id.as_str()))
            .map(|id| CatalogModel {
                id: id.clone(),
                name: None,
                description: None,
                input_modalities: None,
                context_window: None,
                max_tokens: None,
                reasoning: None,
            }),
    );
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_models;

    #[test]
    fn reads_the_openai_list_shape() {
        let body = br#"{"object":"list","data":[
            {"id":"deepseek-v4-flash","object":"model","owned_by":"deepseek"},
            {"id":"qwen2.5-coder:7b","object":"model","created":1,"owned_by":"library"}
        ]}"#;
        assert_eq!(
            parse_model_list(body).unwrap(),
            ["deepseek-v4-flash", "qwen2.5-coder:7b"]
        );
    }

    #[test]
    fn skips_odd_entries_and_keeps_the_first_of_repeated_ids() {
        let body = br#"{"data":[{"id":"a"},{"name":"no id"},{"id":7},{"id":"  "},{"id":" b "},{"id":"a"},"x"]}"#;
        assert_eq!(parse_model_list(body).unwrap(), ["a", "b"]);
        assert_eq!(
            parse_model_list(br#"{"data":[]}"#).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn refuses_what_is_not_a_list() {
        for body in [
            &b"<html>404</html>"[..],
            br#"{"error":{"message":"no route"}}"#,
            br#"{"data":{"id":"a"}}"#,
            br#"[{"id":"a"}]"#,
            b"",
        ] {
            assert!(
                matches!(parse_model_list(body), Err(DiscoveryError::NotAList(_))),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn keeps_at_most_the_cap() {
        let entries: Vec<String> = (0..MAX_DISCOVERED_MODELS + 10)
            .map(|index| format!(r#"{{"id":"m{index}"}}"#))
            .collect();
        let body = format!(r#"{{"data":[{}]}}"#, entries.join(","));
        let ids = parse_model_list(body.as_bytes()).unwrap();
        assert_eq!(ids.len(), MAX_DISCOVERED_MODELS);
        assert_eq!(ids[0], "m0");
    }

    #[test]
    fn known_models_keep_their_entries_and_new_ones_follow_by_id() {
        let configured = default_models();
        let discovered = vec![
            "qwen2.5-coder:7b".to_owned(),
            "deepseek-v4-pro".to_owned(),
            "llama3.1:8b".to_owned(),
        ];
        let merged = merge_discovered(&configured, &discovered);
        let ids: Vec<&str> = merged.iter().map(|model| model.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "deepseek-v4-flash",
                "deepseek-v4-pro",
                "qwen2.5-coder:7b",
                "llama3.1:8b"
            ]
        );
        assert_eq!(
            merged[1], configured[1],
            "a known model is kept as configured"
        );
        assert_eq!(merged[2].name, None);
        assert_eq!(merged[2].context_window, None);
        assert_eq!(merge_discovered(&configured, &[]), configured);
    }

    #[test]
    fn the_request_goes_to_the_configured_base_with_the_key() {
        let config = AdapterConfig::openai_compatible("ollama", "http://127.0.0.1:11434/v1/", "K");
        assert_eq!(models_url(&config), "http://127.0.0.1:11434/v1/models");
        let headers = discovery_headers(&config, "sk-1");
        assert_eq!(
            headers[0],
            ("authorization".to_owned(), "Bearer sk-1".to_owned())
        );
    }
}
