//! Plugin `llm-deepseek`: registers a DeepSeek (or any OpenAI-compatible) adapter with `llm`
//! and sends its requests through the host's `http` service. One row per provider route: the
//! row's config names the route, endpoint, key variable, models and `compat` preset, and the
//! bounds of a response (`maxResponseBytes`, `maxResponseMs`, `streamProgressTimeoutMs`),
//! which end a request that passes them with a named failure. The catalog it answers is the
//! configured one with the endpoint's own list laid over it (`live_catalog.rs`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_llm_seam::{
    Adapter, Adapter_TO, ChunkStream, ChunkStream_TO, HistoryBox, LLM_SERVICE, LlmService,
    NextChunk, StreamOutcome, read_history,
};
use dsh_plugin_api::Json;
use dsh_plugin_api::io::http::{
    HTTP_SERVICE, HttpBodyBox, HttpErrorKind, HttpHeader, HttpRequest, HttpService,
};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{CatalogModel, FailureCode, GenerateRequest, LlmFailure, StreamChunk};

use dsh_credentials_seam::{CREDENTIALS_SERVICE, CredentialsService};

use crate::live_catalog::{Discoverer, LiveCatalog};
use crate::{
    AdapterConfig, AdapterSettings, BASE_URL_ENV, Budget, HeaderIds, ResponseStream, build_request,
    build_request_with_images, check_api_key, map_http_error, stream_transport_failure,
    transport_failure,
};

/// Row config: the adapter settings (`provider`, `baseURL`, `apiKeyEnv`, `models`, `compat`...).
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", transparent)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub(crate) struct Config(
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")] AdapterSettings,
);

#[derive(Clone)]
pub(crate) struct DeepSeek {
    pub(crate) config: Arc<AdapterConfig>,
    pub(crate) http: Service<HttpService>,
    /// For the stored key, looked up per request (so a key set in the web settings is used at
    /// once, and a credentials row that goes away only leaves the environment).
    pub(crate) ctx: Context,
    /// The configured models and the discovered ones.
    pub(crate) catalog: Arc<LiveCatalog>,
}

/// Reads a whole error body, within the request's bounds and a size cap.
async fn read_all(body: &HttpBodyBox, budget: &mut Budget, config: &AdapterConfig) -> Vec<u8> {
    let mut bytes = Vec::new();
    while bytes.len() < 1 << 20 {
        let Ok(wait) = budget.next_wait(config, Instant::now()) else {
            break;
        };
        match body.next_chunk(wait).await {
            ROk(RSome(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes
}

impl DeepSeek {
    /// The key a chat request sends: the stored one, else the environment's.
    fn api_key(&self) -> Result<String, LlmFailure> {
        let name = &self.config.api_key_env;
        let stored = match self.ctx.get::<CredentialsService>(CREDENTIALS_SERVICE) {
            Ok(Some(credentials)) => credentials.get(RString::from(name.as_str())).into_option(),
            _ => None,
        };
        match stored {
            Some(stored) => check_api_key(&self.config, Some(stored.as_str())),
            None => check_api_key(&self.config, std::env::var(name).ok().as_deref()),
        }
    }

    /// Starts discovering the endpoint's models unless it was done with the current key.
    /// Without a usable key there is nothing to do: no chat request could be sent either, and
    /// asking anyway would only earn a 401 warning on every keyless start.
    pub(crate) fn discover(&self) {
        if let Ok(key) = self.api_key() {
            Discoverer {
                config: self.config.clone(),
                http: self.http.clone(),
                ctx: self.ctx.clone(),
                catalog: self.catalog.clone(),
            }
            .start(&key);
        }
    }

    async fn open(
        &self,
        request: &Json<GenerateRequest>,
        history: &HistoryBox,
    ) -> Result<Stream, LlmFailure> {
        let bad = |error: dsh_plugin_api::DecodeError| {
            LlmFailure::new(
                FailureCode::InvalidRequest,
                format!("llm-deepseek: bad request: {error}"),
            )
        };
        let mut request = request.decode().map_err(bad)?;
        request.messages = read_history(history).map_err(bad)?;
        let key = self.api_key()?;
        let images = crate::images::read_images(&self.ctx, &self.config, &request).await?;
        let wire = match images.is_empty() {
            true => build_request(&self.config, &request, &key, &HeaderIds::default())?,
            false => {
                let read = |attachment: &dsh_protocol::ImageAttachment| {
                    images
                        .get(&attachment.attachment_id)
                        .cloned()
                        .ok_or_else(|| {
                            LlmFailure::new(
                                FailureCode::Other("ATTACHMENT_NOT_FOUND".into()),
                                format!("the image {} was not read", attachment.attachment_id),
                            )
                        })
                };
                let ids = HeaderIds::default();
                build_request_with_images(&self.config, &request, &key, &ids, &read)?
            }
        };
        let headers: RVec<HttpHeader> = wire
            .headers
            .iter()
            .map(|(name, value)| HttpHeader {
                name: name.as_str().into(),
                value: value.as_str().into(),
            })
            .collect();
        // The deadline and the progress timeout count from here, the head included.
        let mut budget = Budget::new(Instant::now());
        let sending = HttpRequest {
            method: "POST".into(),
            url: wire.url.as_str().into(),
            headers,
            body: RVec::from(wire.body_bytes()),
            head_timeout_ms: budget.next_wait(&self.config, Instant::now())?,
        };
        let response = match self.http.send(sending).await {
            ROk(response) => response,
            RErr(error) if error.kind == HttpErrorKind::Timeout => {
                return Err(budget.timed_out(&self.config));
            }
            RErr(error) => {
                let failure = transport_failure(&self.config);
                return Err(LlmFailure {
                    message: format!("{}: {error}", failure.message),
                    ..failure
                });
            }
        };
        if !(200..300).contains(&response.status) {
            let headers: Vec<(String, String)> = response
                .headers
                .iter()
                .map(|header| (header.name.to_string(), header.value.to_string()))
                .collect();
            let body = read_all(&response.body, &mut budget, &self.config).await;
            return Err(map_http_error(response.status, &headers, &body));
        }
        let state = State {
            decoder: ResponseStream::new(),
            pending: VecDeque::new(),
            ended: false,
            budget,
        };
        Ok(Stream {
            body: Arc::new(response.body),
            state: Arc::new(tokio::sync::Mutex::new(state)),
            config: self.config.clone(),
        })
    }
}

impl Adapter for DeepSeek {
    fn provider(&self) -> RString {
        RString::from(self.config.provider.as_str())
    }

    fn models(&self) -> Json<Vec<CatalogModel>> {
        // A key set since the last discovery (the web settings) is noticed here; the answer
        // is the catalog as it stands, never a wait.
        self.discover();
        // Each entry says which efforts the adapter maps for it (the page's effort choice).
        let current = self.catalog.current();
        let Ok(mut models) = current.decode() else {
            return current;
        };
        for model in &mut models {
            model.reasoning = crate::catalog::resolve_model(&self.config, &model.id).reasoning;
        }
        Json::encode(&models)
    }

    fn stream(
        &self,
        request: Json<GenerateRequest>,
        history: HistoryBox,
    ) -> FfiFuture<StreamOutcome> {
        let adapter = self.clone();
        async move {
            match adapter.open(&request, &history).await {
                Ok(stream) => ROk(ChunkStream_TO::from_value(stream, TD_Opaque)),
                Err(failure) => RErr(Json::encode(&failure)),
            }
        }
        .into_ffi()
    }
}

struct State {
    decoder: ResponseStream,
    pending: VecDeque<StreamChunk>,
    ended: bool,
    budget: Budget,
}

/// The chunks of one response, read from the body as the caller asks for them.
struct Stream {
    body: Arc<HttpBodyBox>,
    state: Arc<tokio::sync::Mutex<State>>,
    config: Arc<AdapterConfig>,
}

impl Stream {
    async fn next_chunk(&self) -> Result<Option<StreamChunk>, LlmFailure> {
        let mut state = self.state.lock().await;
        loop {
            if let Some(chunk) = state.pending.pop_front() {
                return Ok(Some(chunk));
            }
            if state.ended {
                return Ok(None);
            }
            let wait = state.budget.next_wait(&self.config, Instant::now())?;
            match self.body.next_chunk(wait).await {
                ROk(RSome(bytes)) => {
                    // Counted before decoding: an endless answer stops at the cap, whatever
                    // it is made of.
                    state.budget.count(bytes.len(), &self.config)?;
                    let progress = state.decoder.push(&bytes)?;
                    if !progress.chunks.is_empty() {
                        state.budget.progressed(Instant::now());
                    }
                    state.pending.extend(progress.chunks);
                    // After [DONE] the rest of the body does not matter.
                    state.ended = state.decoder.is_done();
                }
                ROk(RNone) => {
                    state.ended = true;
                    state.decoder.finish()?;
                }
                RErr(error) if error.kind == HttpErrorKind::Timeout => {
                    return Err(state.budget.timed_out(&self.config));
                }
                RErr(error) => {
                    let failure = stream_transport_failure(&self.config);
                    return Err(LlmFailure {
                        message: format!("{}: {error}", failure.message),
                        ..failure
                    });
                }
            }
        }
    }
}

impl ChunkStream for Stream {
    fn next(&self) -> FfiFuture<NextChunk> {
        let stream = Stream {
            body: self.body.clone(),
            state: self.state.clone(),
            config: self.config.clone(),
        };
        async move {
            match stream.next_chunk().await {
                Ok(Some(chunk)) => ROk(RSome(Json::encode(&chunk))),
                Ok(None) => ROk(RNone),
                Err(failure) => RErr(Json::encode(&failure)),
            }
        }
        .into_ffi()
    }
}

pub(crate) struct DeepSeekPlugin;

impl Plugin for DeepSeekPlugin {
    const NAME: &'static str = "llm-deepseek";
    const INJECT: &'static [&'static str] = &[LLM_SERVICE, HTTP_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_credentials_seam::CREDENTIALS_SERVICE,
        dsh_attachments_seam::ATTACHMENTS_SERVICE,
    ];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let base_from_env = std::env::var(BASE_URL_ENV).ok();
        let config =
            AdapterConfig::resolve(&config.0, base_from_env.as_deref()).map_err(|error| {
                PluginError {
                    kind: dsh_plugin_api::ErrorKind::Config,
                    message: format!("invalid config: {error}").into(),
                    path: RSome("$".into()),
                }
            })?;
        let llm = ctx.inject::<LlmService>(LLM_SERVICE)?;
        let http = ctx.inject::<HttpService>(HTTP_SERVICE)?;
        let adapter = DeepSeek {
            catalog: Arc::new(LiveCatalog::new(config.models.clone())),
            config: Arc::new(config),
            http,
            ctx: ctx.clone(),
        };
        let discovering = adapter.clone();
        let registration = llm
            .register(Adapter_TO::from_value(adapter, TD_Opaque))
            .into_result()
            .map_err(|failure| {
                let failure = failure
                    .decode()
                    .map_or_else(|error| error.to_string(), |failure| failure.to_string());
                PluginError::plugin(failure)
            })?;
        // Off the request path: a turn never waits for it, and a failure only warns.
        discovering.discover();
        // The registration lives as long as this fiber: unloading drops it, which unregisters.
        ctx.on_dispose(move || drop(registration))
    }
}

// The first is the library's own (a row naming `llm-deepseek`); the second a row names as
// `llm-deepseek/llm-providers`.
dsh_plugin_api::export_plugins!(DeepSeekPlugin, crate::providers::ProvidersPlugin);
