//! The adapter's catalog as the plugin serves it: the configured models, then the ones its
//! endpoint lists at `GET {base}/models`. Discovery runs beside the host, never in a turn: once
//! when the row starts (a changed endpoint remounts the row, so that is a start too) and again
//! when the key the chat requests would send changes (noticed when the catalog is asked for,
//! since the store says nothing when a person sets a key). It is bounded by
//! [`DISCOVERY_TIMEOUT_MS`]; its answer is kept until the next one. A failure keeps the
//! configured catalog and logs one warning naming the endpoint; nothing else depends on it.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::{RErr, RNone, ROk, RSome, RString, RVec};
use dsh_llm_seam::LLM_ADAPTERS_UPDATED;
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::io::http::{HttpErrorKind, HttpHeader, HttpRequest, HttpService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Json, LogLevel, lock};
use dsh_protocol::CatalogModel;

use crate::AdapterConfig;
use crate::discovery::{
    DISCOVERY_TIMEOUT_MS, DiscoveryError, MAX_MODEL_LIST_BYTES, discovery_headers,
    merge_discovered, models_url, parse_model_list,
};

/// The catalog and what discovery last did.
pub(crate) struct LiveCatalog {
    configured: Vec<CatalogModel>,
    state: Mutex<State>,
}

struct State {
    /// The catalog as it crosses the seam, encoded once per change.
    encoded: Json<Vec<CatalogModel>>,
    /// A hash of the key the latest discovery was started with (never the key itself): the
    /// same key is not asked again, whatever the answer was, so a failure warns once.
    attempted: Option<u64>,
    /// Counts the discoveries started: an answer is kept only if no later one was started.
    generation: u64,
}

fn fingerprint(key: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

impl LiveCatalog {
    pub(crate) fn new(configured: Vec<CatalogModel>) -> Self {
        Self {
            state: Mutex::new(State {
                encoded: Json::encode(&configured),
                attempted: None,
                generation: 0,
            }),
            configured,
        }
    }

    /// The catalog as it stands.
    pub(crate) fn current(&self) -> Json<Vec<CatalogModel>> {
        lock(&self.state).encoded.clone()
    }

    /// Claims a discovery with `key`: its generation, or `None` when the latest one already
    /// used this key.
    fn claim(&self, key: &str) -> Option<u64> {
        let print = fingerprint(key);
        let mut state = lock(&self.state);
        if state.attempted == Some(print) {
            return None;
        }
        state.attempted = Some(print);
        state.generation += 1;
        Some(state.generation)
    }

    /// Lays `discovered` over the configured models unless a later discovery was started;
    /// answers whether the catalog changed.
    fn store(&self, generation: u64, discovered: &[String]) -> bool {
        let merged = Json::encode(&merge_discovered(&self.configured, discovered));
        let mut state = lock(&self.state);
        if state.generation != generation || state.encoded == merged {
            return false;
        }
        state.encoded = merged;
        true
    }
}

/// What a discovery needs: the row's endpoint, the host's client, the row's context (its log,
/// its tasks, the event) and the catalog it fills.
#[derive(Clone)]
pub(crate) struct Discoverer {
    pub(crate) config: Arc<AdapterConfig>,
    pub(crate) http: Service<HttpService>,
    pub(crate) ctx: Context,
    pub(crate) catalog: Arc<LiveCatalog>,
}

impl Discoverer {
    /// Starts a discovery with `key` unless the latest one used it; returns at once.
    pub(crate) fn start(&self, key: &str) {
        let Some(generation) = self.catalog.claim(key) else {
            return;
        };
        let discoverer = self.clone();
        let key = key.to_owned();
        let task = async move { discoverer.run(generation, &key).await };
        if let Err(error) = self.ctx.spawn(task) {
            // Only an unloading row cannot spawn; its catalog is going away with it.
            self.ctx.log(
                LogLevel::Debug,
                &format!("llm-deepseek: model discovery not started: {error}"),
            );
        }
    }

    async fn run(&self, generation: u64, key: &str) {
        let url = models_url(&self.config);
        let bound = self.ctx.sleep(Duration::from_millis(DISCOVERY_TIMEOUT_MS));
        let outcome = match first_of(self.fetch(&url, key), bound).await {
            Either::Left(outcome) => outcome,
            Either::Right(()) => Err(DiscoveryError::Timeout(DISCOVERY_TIMEOUT_MS)),
        };
        let provider = &self.config.provider;
        match outcome {
            Ok(ids) => {
                self.ctx.log(
                    LogLevel::Info,
                    &format!(
                        "llm-deepseek: {} model(s) discovered at {url} for provider route `{provider}`",
                        ids.len()
                    ),
                );
                if self.catalog.store(generation, &ids) {
                    // The routes on offer changed: a listener (the page) asks for them again.
                    let _ = self
                        .ctx
                        .emit(&LLM_ADAPTERS_UPDATED, &RString::from(provider.as_str()));
                }
            }
            Err(error) => self.ctx.log(
                LogLevel::Warn,
                &format!(
                    "llm-deepseek: model discovery at {url} failed for provider route `{provider}` ({error}); it lists the configured models only"
                ),
            ),
        }
    }

    /// One `GET {base}/models` with the chat requests' key, read whole within a size cap.
    async fn fetch(&self, url: &str, key: &str) -> Result<Vec<String>, DiscoveryError> {
        let headers: RVec<HttpHeader> = discovery_headers(&self.config, key)
            .into_iter()
            .map(|(name, value)| HttpHeader {
                name: name.into(),
                value: value.into(),
            })
            .collect();
        let request = HttpRequest {
            method: "GET".into(),
            url: url.into(),
            headers,
            body: RVec::new(),
            head_timeout_ms: DISCOVERY_TIMEOUT_MS,
        };
        let failed = |error: dsh_plugin_api::io::http::HttpError| match error.kind {
            HttpErrorKind::Timeout => DiscoveryError::Timeout(DISCOVERY_TIMEOUT_MS),
            _ => DiscoveryError::Transport(error.message.into_string()),
        };
        let response = self
            .http
            .send(request)
            .await
            .into_result()
            .map_err(failed)?;
        if !(200..300).contains(&response.status) {
            return Err(DiscoveryError::Status(response.status));
        }
        let mut body = Vec::new();
        loop {
            match response.body.next_chunk(DISCOVERY_TIMEOUT_MS).await {
                ROk(RSome(chunk)) => {
                    body.extend_from_slice(&chunk);
                    if body.len() > MAX_MODEL_LIST_BYTES {
                        return Err(DiscoveryError::TooLarge);
                    }
                }
                ROk(RNone) => break,
                RErr(error) => return Err(failed(error)),
            }
        }
        parse_model_list(&body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_models;

    #[test]
    fn one_discovery_per_key_and_only_the_latest_answer_counts() {
        let catalog = LiveCatalog::new(default_models());
        let first = catalog.claim("sk-1").unwrap();
        assert_eq!(
            catalog.claim("sk-1"),
            None,
            "the same key is not asked twice"
        );
        let second = catalog.claim("sk-2").unwrap();
        assert!(!catalog.store(first, &["stale".to_owned()]));
        assert!(catalog.store(second, &["fresh".to_owned()]));
        assert!(!catalog.store(second, &["fresh".to_owned()]), "no change");
        let ids: Vec<String> = catalog
            .current()
            .decode()
            .unwrap()
            .into_iter()
            .map(|model| model.id)
            .collect();
        assert_eq!(ids, ["deepseek-v4-flash", "deepseek-v4-pro", "fresh"]);
    }
}
