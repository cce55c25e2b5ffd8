//! `dsh-llm-seam`: the model seam across the plugin ABI. The `llm` service (an adapter registry
//! keyed by provider route, and `stream`), the adapters that plugins register with it, the
//! chunk streams they return, and the `llm/stream` waterfall every stream call goes through.
//!
//! Requests, chunks, catalogs and failures are `dsh-protocol` values crossing as [`Json`]. A
//! chunk is serialized once, by the adapter that produced it, and that text is what the loop
//! logs (`assistant/chunk`); the loop parses it once to assemble the message.
//!
//! An adapter gets the history it must send beside the request, as a [`History`] it reads by
//! index: the `llm` service's innermost `llm/stream` step checks a session's request against
//! its log and hands over the history the request refers to (the log's derived messages, read
//! only if the adapter puts them on a wire), so no adapter reads a session.
//!
//! [`mount_replay`] puts a recorded log in the model's place (the runners' `--replay FILE`).
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

mod replay;

pub use replay::{REPLAY_PLUGIN, ReplayError, ReplayOptions, mount_replay, mount_replay_with};

use abi_stable::std_types::RArc;
use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use abi_stable::{StableAbi, sabi_trait};
use async_ffi::FfiFuture;
use dsh_plugin_api::DecodeError;
use dsh_plugin_api::{EmitEvent, Json, WaterfallEvent};
use dsh_protocol::{CatalogModel, GenerateRequest, LlmFailure, Message, StreamChunk};

/// Service key of the model seam.
pub const LLM_SERVICE: &str = "llm";

/// `llm/stream`: wraps every stream call; the innermost default checks and completes the
/// request and asks the adapter of its provider. A listener that answers without calling
/// `next` replaces the model (the replay adapter plugs in here).
pub const LLM_STREAM: WaterfallEvent<StreamCall, StreamOutcome> = WaterfallEvent::new("llm/stream");

/// `llm/adapters-updated`: the set of routes changed (emit; payload: the provider name).
pub const LLM_ADAPTERS_UPDATED: EmitEvent<RString> = EmitEvent::new("llm/adapters-updated");

/// One stream call as the waterfall sees it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct StreamCall {
    /// The provider route (`deepseek-official`, ...).
    pub provider: RString,
    pub request: Json<GenerateRequest>,
}

/// A stream of chunks, or the failure that prevented it.
pub type StreamOutcome = RResult<ChunkStreamBox, Json<LlmFailure>>;

/// The next chunk of a stream: `RNone` ends it; an error is the failure that cut it
/// (transport, timeout, a stream closed early, a malformed one).
pub type NextChunk = RResult<ROption<Json<StreamChunk>>, Json<LlmFailure>>;

/// The chunks of one model attempt, in order.
#[sabi_trait]
pub trait ChunkStream: Send + Sync {
    fn next(&self) -> FfiFuture<NextChunk>;
}
pub type ChunkStreamBox = ChunkStream_TO<'static, RBox<()>>;

/// The history a request sends after its system prompt, in order.
#[sabi_trait]
pub trait History: Send + Sync {
    fn count(&self) -> u64;
    /// Message `index`, `None` past the end.
    fn message(&self, index: u64) -> ROption<Json<Message>>;
}
pub type HistoryBox = History_TO<'static, RArc<()>>;

/// Every message of `history`, parsed.
pub fn read_history(history: &HistoryBox) -> Result<Vec<Message>, DecodeError> {
    (0..history.count())
        .map(|index| match history.message(index) {
            ROption::RSome(message) => message.decode(),
            ROption::RNone => Err(DecodeError {
                what: "history",
                message: format!("message {index} of {} is missing", history.count()),
            }),
        })
        .collect()
}

/// A model provider route.
#[sabi_trait]
pub trait Adapter: Send + Sync {
    fn provider(&self) -> RString;
    /// The model catalog.
    fn models(&self) -> Json<Vec<CatalogModel>>;
    /// Streams `request`, whose history is `history`: read the messages from `history` alone
    /// (the request's own `messages` are empty; a request of a session still names the history
    /// reference `history` was checked against, which an adapter has no use for).
    fn stream(
        &self,
        request: Json<GenerateRequest>,
        history: HistoryBox,
    ) -> FfiFuture<StreamOutcome>;
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
    /// (`DUPLICATE_ADAPTER`).
    fn register(&self, adapter: AdapterBox) -> RResult<RegistrationBox, Json<LlmFailure>>;
    /// Streams a request through `llm/stream`.
    fn stream(&self, request: Json<GenerateRequest>) -> FfiFuture<StreamOutcome>;
    fn providers(&self) -> RVec<RString>;
    /// The catalog of `provider`, if it is registered.
    fn models(&self, provider: RString) -> ROption<Json<Vec<CatalogModel>>>;
}
pub type LlmService = Llm_TO<'static, RBox<()>>;
