//! The `provider.*` methods: OpenAI-compatible providers a person adds, changes and removes in
//! the settings. A provider is an entry of the `llm-providers` row's `providers` in the settings
//! document (the shape of an `llm-deepseek` row's config: route, endpoint, the key's name,
//! `compat: openai`, the models its endpoint listed); its key goes to the credentials store
//! (owner-only), never to the document, and is never answered whole. Saving asks the endpoint
//! for its models first (`GET {base}/models`), so a wrong URL or key is refused with the
//! endpoint's own status before anything is written; then the host's watcher remounts the row
//! and the new route is served, which `provider.save` waits for, so the picker the page reloads
//! next lists its models.

use std::time::{Duration, Instant};

use abi_stable::std_types::{RErr, RNone, ROk, RSome, RString, RVec};
use dsh_client_protocol::{
    DiscoverModels, DiscoveredModels, ProviderList, ProviderRef, ProviderState, RpcErrorCode,
    SaveProvider,
};
use dsh_credentials_seam::{CREDENTIALS_SERVICE, CredentialsService};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::io::http::{HTTP_SERVICE, HttpHeader, HttpRequest, HttpService};
use serde_norway::Value;

use crate::api::{Api, Failure};

/// The row that serves the providers, and its field, in the settings document.
const PROVIDERS_ROW: &str = "llm-providers";
const PROVIDERS_FIELD: &str = "providers";
/// How long an endpoint may take to answer its model list.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a model list read (a list of thousands of ids is far below it).
const MAX_LIST_BYTES: usize = 4 << 20;
/// The most model ids kept from one list.
const MAX_MODELS: usize = 1000;
/// How long a save or a removal waits for the host to remount the row.
const RELOAD_WAIT: Duration = Duration::from_secs(10);

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn rejected(message: String) -> Failure {
    Failure(RpcErrorCode::ProviderRejected, message)
}

/// A route: lowercase letters, digits and dashes, starting with a letter or digit, at most 40.
fn check_id(id: &str) -> Result<(), Failure> {
    let ok = !id.is_empty()
        && id.len() <= 40
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    match ok {
        true => Ok(()),
        false => Err(rejected(format!(
            "id `{id}`: lowercase letters, digits and dashes (at most 40), e.g. `local-vllm`"
        ))),
    }
}

/// An `http://` or `https://` base with a host, without spaces, a query or a fragment; the
/// trailing slash dropped so paths join cleanly.
fn check_base_url(url: &str) -> Result<String, Failure> {
    let url = url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let bad = |why: &str| rejected(format!("baseUrl `{url}`: {why}"));
    let Some(rest) = rest else {
        return Err(bad("not an http:// or https:// address"));
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(bad("names no host"));
    }
    if url.contains(char::is_whitespace) || url.contains(['?', '#']) {
        return Err(bad("holds spaces, a query or a fragment"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// A key as a header carries it: printable ASCII without spaces.
fn check_key(key: &str) -> Result<String, Failure> {
    let key = key.trim();
    match !key.is_empty() && key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        true => Ok(key.to_owned()),
        false => Err(rejected(
            "apiKey: printable ASCII with no spaces (any value for an endpoint that takes none)"
                .to_owned(),
        )),
    }
}

/// The credential a provider's key is stored under.
pub(crate) fn key_name(id: &str) -> String {
    format!(
        "DSH_PROVIDER_{}_API_KEY",
        id.to_ascii_uppercase().replace('-', "_")
    )
}

/// A key as a page may see it: its last four characters at most, the rest dots.
pub(crate) fn mask(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    match chars.len() {
        0..=8 => "••••".to_owned(),
        n => format!("••••{}", chars[n - 4..].iter().collect::<String>()),
    }
}

/// Why a provider's answer to `GET /models` is not a model list.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModelListError {
    #[error("not JSON ({0})")]
    NotJson(serde_json::Error),
    #[error("not an OpenAI model list (no `data` array)")]
    NoData,
}

/// An OpenAI model list, as far as it is read: entries whose `id` is no string are skipped.
#[derive(serde::Deserialize)]
struct ModelList {
    data: Option<Vec<serde_json::Value>>,
}

#[derive(serde::Deserialize)]
struct ModelEntry {
    id: String,
}

/// Reads an OpenAI model list (`{data: [{id}]}`): the ids, trimmed, once each, in order.
pub(crate) fn parse_models(body: &[u8]) -> Result<Vec<String>, ModelListError> {
    let list: ModelList = serde_json::from_slice(body).map_err(|error| match error.is_data() {
        // JSON, but `data` is not a list.
        true => ModelListError::NoData,
        false => ModelListError::NotJson(error),
    })?;
    let data = list.data.ok_or(ModelListError::NoData)?;
    let mut ids: Vec<String> = Vec::new();
    for entry in data {
        let Ok(ModelEntry { id }) = serde_json::from_value::<ModelEntry>(entry) else {
            continue;
        };
        let id = id.trim();
        if !id.is_empty() && !ids.iter().any(|known| known == id) && ids.len() < MAX_MODELS {
            ids.push(id.to_owned());
        }
    }
    Ok(ids)
}

/// One entry of the row's `providers` as the settings document holds it.
fn entry_id(entry: &Value) -> Option<&str> {
    entry.get("provider")?.as_str()
}

fn entry_string<'a>(entry: &'a Value, field: &str) -> Option<&'a str> {
    entry.get(field)?.as_str()
}

/// The entry a save writes: the route, its endpoint, where its key is, OpenAI's protocol
/// without DeepSeek's fields, and the models the endpoint listed. A provider saved without a
/// key (a local Ollama or vLLM) is written `keyRequired: false`: its requests go without an
/// authorization header until a key is stored.
fn entry(id: &str, base_url: &str, models: &[String], keyed: bool) -> Value {
    #[derive(serde::Serialize)]
    struct ModelId<'a> {
        id: &'a str,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry<'a> {
        provider: &'a str,
        #[serde(rename = "baseURL")]
        base_url: &'a str,
        api_key_env: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        key_required: Option<bool>,
        compat: &'static str,
        models: Vec<ModelId<'a>>,
    }
    let written = Entry {
        provider: id,
        base_url,
        api_key_env: key_name(id),
        key_required: (!keyed).then_some(false),
        compat: "openai",
        models: models.iter().map(|id| ModelId { id }).collect(),
    };
    serde_norway::to_value(written).unwrap_or(Value::Null)
}

impl Api {
    fn llm(&self) -> Option<dsh_plugin_api::Service<LlmService>> {
        self.ctx.get::<LlmService>(LLM_SERVICE).ok().flatten()
    }

    fn served(&self) -> Vec<String> {
        self.llm()
            .map(|llm| {
                llm.providers()
                    .into_iter()
                    .map(RString::into_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The model ids the adapter of `id` lists now, if one serves it.
    fn served_models(&self, id: &str) -> Option<Vec<String>> {
        let models = self.llm()?.models(RString::from(id)).into_option()?;
        let models = models.decode().ok()?;
        Some(models.into_iter().map(|model| model.id).collect())
    }

    fn stored_key(&self, id: &str) -> Option<String> {
        let store = self
            .ctx
            .get::<CredentialsService>(CREDENTIALS_SERVICE)
            .ok()
            .flatten()?;
        store
            .get(RString::from(key_name(id)))
            .into_option()
            .map(RString::into_string)
    }

    /// The row's entries as the settings document holds them now.
    async fn stored_providers(&self) -> Result<Vec<Value>, Failure> {
        let document = self.settings_document().await?;
        Ok(document
            .get(PROVIDERS_ROW)
            .and_then(|row| row.get(PROVIDERS_FIELD))
            .and_then(Value::as_sequence)
            .cloned()
            .unwrap_or_default())
    }

    pub(crate) async fn list_providers(&self, writable: bool) -> Result<ProviderList, Failure> {
        let providers = self
            .stored_providers()
            .await?
            .iter()
            .filter_map(|stored| {
                let id = entry_id(stored)?.to_owned();
                let listed = stored
                    .get("models")
                    .and_then(Value::as_sequence)
                    .map(|models| {
                        models
                            .iter()
                            .filter_map(|model| entry_string(model, "id").map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                let served = self.served_models(&id);
                Some(ProviderState {
                    base_url: entry_string(stored, "baseURL")
                        .unwrap_or_default()
                        .to_owned(),
                    api_key: self.stored_key(&id).as_deref().map(mask),
                    served: served.is_some(),
                    models: served.unwrap_or(listed),
                    id,
                })
            })
            .collect();
        Ok(ProviderList {
            providers,
            writable,
        })
    }

    /// `GET {base}/models` with `key` (none: no authorization header): the ids, or why not
    /// with the endpoint's status.
    async fn ask_models(&self, base_url: &str, key: Option<&str>) -> Result<Vec<String>, Failure> {
        let failed = |message: String| Failure(RpcErrorCode::ProviderDiscoveryFailed, message);
        let http = self
            .ctx
            .get::<HttpService>(HTTP_SERVICE)
            .ok()
            .flatten()
            .ok_or_else(|| Failure::internal("no `http` service is running"))?;
        let url = format!("{base_url}/models");
        let header = |name: &str, value: String| HttpHeader {
            name: name.into(),
            value: value.into(),
        };
        let request = HttpRequest {
            method: "GET".into(),
            url: url.as_str().into(),
            headers: key
                .map(|key| header("authorization", format!("Bearer {key}")))
                .into_iter()
                .chain([header("accept", "application/json".to_owned())])
                .collect(),
            body: RVec::new(),
            head_timeout_ms: millis(DISCOVERY_TIMEOUT),
        };
        let response = match http.send(request).await {
            ROk(response) => response,
            RErr(error) => return Err(failed(format!("GET {url}: {error}"))),
        };
        let deadline = Instant::now() + DISCOVERY_TIMEOUT;
        let mut body = Vec::new();
        while body.len() <= MAX_LIST_BYTES {
            let left = millis(deadline.saturating_duration_since(Instant::now()));
            if left == 0 {
                return Err(failed(format!("GET {url}: no whole answer within 5 s")));
            }
            match response.body.next_chunk(left).await {
                ROk(RSome(chunk)) => body.extend_from_slice(&chunk),
                ROk(RNone) => break,
                RErr(error) => return Err(failed(format!("GET {url}: {error}"))),
            }
        }
        if key.is_none() && matches!(response.status, 401 | 403) {
            return Err(rejected(format!(
                "apiKey: GET {url} answered {} without a key: this endpoint needs one",
                response.status
            )));
        }
        if !(200..300).contains(&response.status) {
            let excerpt: String = String::from_utf8_lossy(&body).chars().take(200).collect();
            return Err(failed(format!(
                "GET {url} answered {}: {}",
                response.status,
                excerpt.trim()
            )));
        }
        if body.len() > MAX_LIST_BYTES {
            return Err(failed(format!(
                "GET {url}: a list over {MAX_LIST_BYTES} bytes"
            )));
        }
        parse_models(&body).map_err(|why| failed(format!("GET {url}: {why}")))
    }

    pub(crate) async fn discover_models(
        &self,
        request: DiscoverModels,
    ) -> Result<DiscoveredModels, Failure> {
        let base_url = check_base_url(&request.base_url)?;
        // No key given: the stored one of the provider edited, else none (an endpoint that
        // takes none answers; one that wants a key says so with its status).
        let key = match (&request.api_key, &request.id) {
            (Some(key), _) => Some(check_key(key)?),
            (None, Some(id)) => self.stored_key(id),
            (None, None) => None,
        };
        Ok(DiscoveredModels {
            models: self.ask_models(&base_url, key.as_deref()).await?,
        })
    }

    pub(crate) async fn save_provider(
        &self,
        request: SaveProvider,
    ) -> Result<DiscoveredModels, Failure> {
        let id = request.id.trim().to_owned();
        check_id(&id)?;
        let base_url = check_base_url(&request.base_url)?;
        let mut stored = self.stored_providers().await?;
        let existing = stored
            .iter()
            .position(|entry| entry_id(entry) == Some(id.as_str()));
        let conflict = |message: String| Failure(RpcErrorCode::ProviderConflict, message);
        match (existing, request.edit) {
            (Some(_), false) => {
                return Err(conflict(format!(
                    "id `{id}`: a provider by that id exists already (edit it, or choose another id)"
                )));
            }
            (None, true) => {
                return Err(Failure(
                    RpcErrorCode::ProviderNotFound,
                    format!("id `{id}`: no provider by that id was added in the settings"),
                ));
            }
            (None, false) if self.served().contains(&id) => {
                return Err(conflict(format!(
                    "id `{id}`: another adapter serves that route already (choose another id)"
                )));
            }
            _ => {}
        }
        let key = match &request.api_key {
            Some(key) => Some(check_key(key)?),
            None => self.stored_key(&id),
        };
        // Asked before anything is written: a wrong URL or key changes nothing.
        let models = self.ask_models(&base_url, key.as_deref()).await?;
        if let (Some(key), Some(_)) = (&key, &request.api_key) {
            let store = self
                .ctx
                .get::<CredentialsService>(CREDENTIALS_SERVICE)
                .ok()
                .flatten()
                .ok_or_else(|| Failure::internal("no `credentials` service is running"))?;
            store
                .set(RString::from(key_name(&id)), RString::from(key.as_str()))
                .await
                .into_result()
                .map_err(|error| Failure::internal(error.message.into_string()))?;
        }
        let written = entry(&id, &base_url, &models, key.is_some());
        match existing {
            Some(index) => stored[index] = written,
            None => stored.push(written),
        }
        self.write_setting_value(
            PROVIDERS_ROW,
            PROVIDERS_FIELD,
            Some(Value::Sequence(stored)),
        )
        .await?;
        // Served once the row has remounted with these models (an edit's old adapter may
        // still be there a moment).
        let loaded = self
            .until(|api| {
                api.served_models(&id)
                    .is_some_and(|now| models.iter().all(|model| now.contains(model)))
            })
            .await;
        if !loaded {
            return Err(Failure::internal(format!(
                "provider `{id}` is saved, but the host has not served it within {} s: see Settings › Plugins for the `{PROVIDERS_ROW}` row",
                RELOAD_WAIT.as_secs()
            )));
        }
        Ok(DiscoveredModels { models })
    }

    pub(crate) async fn remove_provider(&self, request: ProviderRef) -> Result<(), Failure> {
        let id = request.id;
        let mut stored = self.stored_providers().await?;
        let before = stored.len();
        stored.retain(|entry| entry_id(entry) != Some(id.as_str()));
        if stored.len() == before {
            return Err(Failure(
                RpcErrorCode::ProviderNotFound,
                format!("id `{id}`: no provider by that id was added in the settings"),
            ));
        }
        let value = (!stored.is_empty()).then_some(Value::Sequence(stored));
        self.write_setting_value(PROVIDERS_ROW, PROVIDERS_FIELD, value)
            .await?;
        if let Ok(Some(store)) = self.ctx.get::<CredentialsService>(CREDENTIALS_SERVICE) {
            // The route is gone either way; a key left behind only warns.
            if let Err(error) = store
                .unset(RString::from(key_name(&id)))
                .await
                .into_result()
            {
                self.ctx.log(
                    dsh_plugin_api::LogLevel::Warn,
                    &format!("provider `{id}` removed, its key not: {}", error.message),
                );
            }
        }
        self.until(|api| !api.served().contains(&id)).await;
        Ok(())
    }

    /// Waits (bounded by [`RELOAD_WAIT`]) until `done` holds; whether it did.
    async fn until(&self, done: impl Fn(&Self) -> bool) -> bool {
        let deadline = Instant::now() + RELOAD_WAIT;
        loop {
            if done(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.ctx.sleep(Duration::from_millis(50)).await;
        }
    }
}

#[cfg(test)]
#[path = "providers_tests.rs"]
mod tests;
