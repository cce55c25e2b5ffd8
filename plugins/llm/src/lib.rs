//! Plugin `llm`: provides `llm`, the model seam. Adapters (DeepSeek, any OpenAI-compatible
//! endpoint, replay) register under their provider route and get a registration that removes
//! them when dropped; `stream` runs every call through the `llm/stream` waterfall, whose
//! innermost default checks a session's request against its log, fills in the history it
//! refers to, and asks the adapter of the request's provider. Nothing can change the request
//! after that check, and no adapter reads a session.

use dsh_plugin_api::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_llm_seam::{
    AdapterBox, History, History_TO, HistoryBox, LLM_ADAPTERS_UPDATED, LLM_SERVICE, LLM_STREAM,
    Llm, Llm_TO, Registration, Registration_TO, RegistrationBox, StreamCall, StreamOutcome,
};
use dsh_plugin_api::Json;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, EmitEvent};
use dsh_protocol::{CatalogModel, FailureCode, GenerateRequest, LlmFailure, Message};
use dsh_sessions_seam::{DerivedViewBox, SessionBox};
use dsh_visible_check::RequestParts;

/// A failure as it crosses the seam.
fn failure(code: FailureCode, message: impl Into<String>) -> Json<LlmFailure> {
    Json::encode(&LlmFailure::new(code, message.into()))
}

struct Registry {
    ctx: Context,
    adapters: Mutex<HashMap<String, Arc<AdapterBox>>>,
    stream: Channel<WaterfallEvent<StreamCall, StreamOutcome>>,
    updated: Channel<EmitEvent<RString>>,
}

impl Registry {
    fn adapter(&self, provider: &str) -> Option<Arc<AdapterBox>> {
        lock(&self.adapters).get(provider).cloned()
    }
}

/// Removes its adapter when dropped (the registering plugin holds it until it unloads).
struct Held {
    registry: Weak<Registry>,
    provider: String,
    adapter: Weak<AdapterBox>,
}

impl Registration for Held {
    fn provider(&self) -> RString {
        RString::from(self.provider.as_str())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        let removed = {
            let mut adapters = lock(&registry.adapters);
            let ours = adapters.get(&self.provider).is_some_and(|current| {
                self.adapter
                    .upgrade()
                    .is_some_and(|mine| Arc::ptr_eq(current, &mine))
            });
            ours && adapters.remove(&self.provider).is_some()
        };
        if removed {
            let _ = registry
                .updated
                .emit(&RString::from(self.provider.as_str()));
        }
    }
}

struct Service(Arc<Registry>);

impl Llm for Service {
    fn register(&self, adapter: AdapterBox) -> RResult<RegistrationBox, Json<LlmFailure>> {
        let provider = adapter.provider().into_string();
        let adapter = Arc::new(adapter);
        {
            let mut adapters = lock(&self.0.adapters);
            if adapters.contains_key(&provider) {
                return RErr(failure(
                    FailureCode::DuplicateAdapter,
                    format!("an adapter for provider route `{provider}` is already registered"),
                ));
            }
            adapters.insert(provider.clone(), adapter.clone());
        }
        let _ = self.0.updated.emit(&RString::from(provider.as_str()));
        let held = Held {
            registry: Arc::downgrade(&self.0),
            provider,
            adapter: Arc::downgrade(&adapter),
        };
        ROk(Registration_TO::from_value(held, TD_Opaque))
    }

    fn stream(&self, request: Json<GenerateRequest>) -> FfiFuture<StreamOutcome> {
        let registry = self.0.clone();
        async move {
            // The request is read once, here, without building its text: its route picks the
            // adapter, and the innermost step checks these parts unless a listener passed
            // another call on.
            let parts = match RequestParts::read(request.text()) {
                Ok(parts) => parts,
                Err(error) => {
                    return RErr(failure(
                        FailureCode::InvalidRequest,
                        format!("llm: bad request: {error}"),
                    ));
                }
            };
            let call = RArc::new(StreamCall {
                provider: RString::from(parts.config.provider.as_str()),
                request,
            });
            let read = Mutex::new(Some((call.clone(), parts)));
            let inner_registry = registry.clone();
            let outcome = registry
                .stream
                .waterfall(call, move |call: RArc<StreamCall>| async move {
                    // The parts read above, if this is still that call (the first time).
                    let parts = lock(&read)
                        .take()
                        .filter(|(first, _)| std::ptr::eq::<StreamCall>(&**first, &*call))
                        .map(|(_, parts)| parts);
                    Ok(send(&inner_registry, &call, parts).await)
                })
                .await;
            match outcome {
                Ok(outcome) => outcome,
                Err(error) => RErr(failure(
                    FailureCode::Unknown,
                    format!("llm/stream: {error}"),
                )),
            }
        }
        .into_ffi()
    }

    fn providers(&self) -> RVec<RString> {
        let mut providers: Vec<String> = lock(&self.0.adapters).keys().cloned().collect();
        providers.sort();
        providers.into_iter().map(RString::from).collect()
    }

    fn models(&self, provider: RString) -> ROption<Json<Vec<CatalogModel>>> {
        match self.0.adapter(&provider) {
            Some(adapter) => RSome(adapter.models()),
            None => RNone,
        }
    }
}

/// The innermost step of `llm/stream`: the call's request (a listener may have answered
/// another, or runs this one again, as a retry does) checked against its session's log, then
/// handed with its history to the adapter of its route.
async fn send(
    registry: &Registry,
    call: &StreamCall,
    parts: Option<RequestParts>,
) -> StreamOutcome {
    // A request that refers to its session's history and matches its logged header text for
    // text leaves as its text: read whole, written out again and read by the adapter once more,
    // its system prompt and tool schemas were a sixth of a step against an instant model.
    let parts = parts.map_or_else(|| RequestParts::read(call.request.text()), Ok);
    if let Ok(parts) = parts
        && let Some(count) = parts.history.as_ref().map(|history| history.count)
        && let Some(session) =
            dsh_visible_check::check_unchanged(&registry.ctx, &parts, call.request.text()).await
    {
        return match registry.adapter(&call.provider) {
            Some(adapter) => {
                let history = SessionHistory::of(&session, count);
                adapter.stream(call.request.clone(), history).await
            }
            None => no_adapter(&call.provider),
        };
    }
    let mut request = match call.request.decode() {
        Ok(request) => request,
        Err(error) => {
            return RErr(failure(
                FailureCode::InvalidRequest,
                format!("llm: bad request: {error}"),
            ));
        }
    };
    let session = match dsh_visible_check::check_request(&registry.ctx, &request).await {
        Ok(session) => session,
        Err(refusal) => return RErr(failure(FailureCode::InvalidRequest, refusal.to_string())),
    };
    let history = history_of(&mut request, session);
    match registry.adapter(&call.provider) {
        Some(adapter) => adapter.stream(Json::encode(&request), history).await,
        None => no_adapter(&call.provider),
    }
}

fn no_adapter(provider: &str) -> StreamOutcome {
    RErr(failure(
        FailureCode::InvalidRequest,
        format!("llm: no adapter is registered for provider route `{provider}`"),
    ))
}

/// The history the adapter sends, taken out of the checked request: the session's derived
/// messages for a request that refers to them (read only if the adapter reads them), else the
/// request's own messages.
fn history_of(request: &mut GenerateRequest, session: Option<SessionBox>) -> HistoryBox {
    let reference = request.history.take();
    match (reference, session) {
        (Some(reference), Some(session)) => SessionHistory::of(&session, reference.count),
        _ => {
            let messages = std::mem::take(&mut request.messages);
            History_TO::from_ptr(
                RArc::new(InlineHistory(messages.iter().map(Json::encode).collect())),
                TD_Opaque,
            )
        }
    }
}

/// The first `count` derived messages of a session, at the snapshot the request was checked on.
struct SessionHistory {
    view: DerivedViewBox,
    count: u64,
}

impl SessionHistory {
    /// The first `count` derived messages of `session`, as the adapter reads them.
    fn of(session: &SessionBox, count: u64) -> HistoryBox {
        History_TO::from_ptr(
            RArc::new(SessionHistory {
                view: session.derive_messages(),
                count,
            }),
            TD_Opaque,
        )
    }
}

impl History for SessionHistory {
    fn count(&self) -> u64 {
        self.count
    }

    fn message(&self, index: u64) -> ROption<Json<Message>> {
        if index < self.count {
            self.view.message(index)
        } else {
            RNone
        }
    }
}

/// A request's own messages (a request outside any session).
struct InlineHistory(Vec<Json<Message>>);

impl History for InlineHistory {
    fn count(&self) -> u64 {
        self.0.len() as u64
    }

    fn message(&self, index: u64) -> ROption<Json<Message>> {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.0.get(index).cloned())
            .into()
    }
}

pub struct LlmPlugin;

impl Plugin for LlmPlugin {
    const NAME: &'static str = "llm";
    const OPTIONAL: &'static [&'static str] = &[dsh_sessions_seam::SESSIONS_SERVICE];
    const PROVIDES: &'static [&'static str] = &[LLM_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let registry = Arc::new(Registry {
            ctx: ctx.clone(),
            adapters: Mutex::new(HashMap::new()),
            stream: ctx.channel(&LLM_STREAM)?,
            updated: ctx.channel(&LLM_ADAPTERS_UPDATED)?,
        });
        ctx.provide(
            LLM_SERVICE,
            Llm_TO::from_value(Service(registry), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(LlmPlugin);
