//! The model seam across the plugin ABI: the `llm` service (an adapter registry keyed by
//! provider route, and `stream`), the adapters that plugins register with it, the chunk
//! streams they return, and the `llm/stream` waterfall every stream call goes through.
//!
//! Requests, chunks and failures cross as the JSON of `dsh-llm-api`'s vocabulary: each chunk is
//! logged as JSON anyway (`assistant/chunk`), so it is serialized once, where it is produced.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::{EmitEvent, WaterfallEvent};

/// Service key of the model seam.
pub const LLM: &str = "llm";

/// `llm/stream`: wraps every stream call; the innermost default asks the adapter of the
/// request's provider. A listener that answers without calling `next` replaces the model
/// (the replay adapter plugs in here).
pub const LLM_STREAM: WaterfallEvent<StreamCall, StreamOutcome> = WaterfallEvent::new("llm/stream");

/// `llm/adapters-updated`: the set of routes changed (emit; payload: the provider name).
pub const LLM_ADAPTERS_UPDATED: EmitEvent<RString> = EmitEvent::new("llm/adapters-updated");

/// One stream call as the waterfall sees it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct StreamCall {
    /// The provider route (`deepseek-official`, ...).
    pub provider: RString,
    /// The `GenerateRequest` as JSON.
    pub request: RString,
}

/// A stream of chunks, or the failure (an `LlmFailure` as JSON) that prevented it.
pub type StreamOutcome = RResult<ChunkStreamBox, RString>;

/// The chunks of one model attempt, in order. `RNone` ends the stream; an `RErr` is an
/// `LlmFailure` (as JSON) that cut it (transport, timeout, closed or malformed stream).
#[sabi_trait]
pub trait ChunkStream: Send + Sync {
    fn next(&self) -> FfiFuture<RResult<ROption<RString>, RString>>;
}
pub type ChunkStreamBox = ChunkStream_TO<'static, RBox<()>>;

/// A model provider route.
#[sabi_trait]
pub trait Adapter: Send + Sync {
    fn provider(&self) -> RString;
    /// The model catalog (`[ModelInfo]` as JSON).
    fn models(&self) -> RString;
    fn stream(&self, request: RString) -> FfiFuture<StreamOutcome>;
}
pub type AdapterBox = Adapter_TO<'static, RBox<()>>;

/// Keeps an adapter registered; dropping it unregisters (hold it until your plugin unloads).
#[sabi_trait]
pub trait Registration: Send + Sync {
    fn provider(&self) -> RString;
}
pub type RegistrationBox = Registration_TO<'static, RBox<()>>;

/// The `llm` service.
#[sabi_trait]
pub trait Llm: Send + Sync {
    /// Registers an adapter under its provider route; a second adapter for a route is refused
    /// (`DUPLICATE_ADAPTER`, as `LlmFailure` JSON).
    fn register(&self, adapter: AdapterBox) -> RResult<RegistrationBox, RString>;
    /// Streams a `GenerateRequest` (JSON) through `llm/stream`.
    fn stream(&self, request: RString) -> FfiFuture<StreamOutcome>;
    fn providers(&self) -> RVec<RString>;
    /// The catalog of `provider` (JSON), if it is registered.
    fn models(&self, provider: RString) -> ROption<RString>;
}
pub type LlmService = Llm_TO<'static, RBox<()>>;
