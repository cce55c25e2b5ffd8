//! The DeepSeek chat-completions protocol (OpenAI-compatible), as pure logic: adapter settings
//! and their validation, the model catalog, building the HTTP request for a call (URL, headers,
//! JSON body with reasoning passback, raw tool-call arguments and images as data URLs),
//! decoding the SSE response over arbitrary byte splits, translating its payloads into the
//! harness's stream chunks, mapping HTTP errors, `Retry-After` and request ids to failures, and
//! reading an endpoint's `GET /models` list into the catalog.
//! A `compat` switch turns the DeepSeek-only fields and headers off for any other
//! OpenAI-compatible endpoint.
//!
//! It does no I/O: no HTTP client, no async runtime, no clock beyond `SystemTime::now` for a
//! `Retry-After` date, no environment reads (the caller passes `DEEPSEEK_BASE_URL` and the
//! key in). The bounds of a response (its bytes, its deadline, its progress: `Budget`) are
//! decided here with the time passed in. Sending the request, the timers, cancellation and the
//! plugin registration on the `llm` service belong to the code that wires this crate to the
//! host's HTTP service; the message and chunk vocabulary belongs to `dsh-llm-api`.

mod base64;
mod budget;
mod catalog;
mod config;
mod discovery;
mod errors;
mod images;
mod live_catalog;
mod plugin;
mod providers;
mod request;
mod response;
mod serialize;
mod settings;
mod sse;
mod stream;
mod translate;
mod wire;

pub use budget::Budget;
pub use catalog::{PROVIDER_DISPLAY_NAME, list_models, resolve_model};
pub use config::{
    AdapterConfig, AppIdentity, BASE_URL_ENV, Compat, DEFAULT_API_KEY_ENV, DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_REQUEST_IMAGE_BYTES, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RESPONSE_MS,
    DEFAULT_MAX_TOKENS, DEFAULT_PROVIDER, DEFAULT_STREAM_IDLE_TIMEOUT_MS,
    DEFAULT_STREAM_PROGRESS_TIMEOUT_MS, MAX_TIMER_DELAY_MS, PUBLIC_BASE_URL, ReasoningEffort,
    Thinking, default_models,
};
pub use discovery::{
    DISCOVERY_TIMEOUT_MS, DiscoveryError, MAX_DISCOVERED_MODELS, MAX_MODEL_LIST_BYTES,
    discovery_headers, merge_discovered, models_url, parse_model_list,
};
pub use errors::{
    aborted_failure, deadline_failure, http_error_code, idle_timeout_failure, map_http_error,
    map_http_error_at, no_body_failure, no_progress_failure, retry_after_ms,
    stream_transport_failure, too_large_failure, transport_failure,
};
pub use request::{
    HeaderIds, WireRequest, build_request, build_request_with_images, check_api_key,
};
pub use response::{WireChunk, WireErrorBody, WireUsage};
pub use serialize::ImageReader;
pub use settings::{AdapterSettings, CompatPreset, CompatSetting, ConfigError};
pub use sse::{DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseEvent, SseItem};
pub use stream::{Progress, ResponseStream};
pub use translate::{DONE, StreamTranslator, map_finish_reason, map_usage, stream_closed};
pub use wire::{
    ChatRequest, ImageUrl, StreamOptions, ThinkingToggle, UserContent, UserPart, WireFunction,
    WireFunctionCall, WireMessage, WireTool, WireToolCall,
};
