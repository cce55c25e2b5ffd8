//! Plugin `llm-replay`: the model, replayed. It answers request *i* with the *i*-th model
//! attempt recorded in a session log (an attempt ends at its `finish` chunk; a retried attempt
//! is a separate one), so recorded cases re-run without a network or a key. A
//! `replay.override.json` beside the log replaces the recorded chunks entirely: entry *i*
//! answers request *i* with `{"kind":"chunks","chunks":[...]}` or `{"kind":"hang","readyFile":
//! "..."}` (create the file, then never yield, so a test can cancel).
//!
//! It plugs into the `llm/stream` waterfall and answers without calling `next`: no adapter is
//! asked, whatever provider the request names.

mod script;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, RNone, ROk, ROption, RResult, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_llm_api::{FailureCode, GenerateRequest, LlmFailure};
use dsh_llm_seam::{ChunkStream, ChunkStream_TO, LLM_STREAM, StreamCall, StreamOutcome};
use dsh_plugin_api::prelude::*;

use crate::script::{Answer, Script};

/// Service published once the replay listens: its value is the replayed log's path.
pub const REPLAY_READY: &str = "llm_replay";

/// Row config of `llm-replay`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// The recorded session log (`session.jsonl`) whose attempts answer the requests.
    pub log: String,
    /// Overrides; default: `replay.override.json` beside the log, when it exists.
    #[serde(default)]
    pub overrides: Option<String>,
}

fn failure_json(message: String) -> RString {
    let failure = LlmFailure::new(FailureCode::Unknown, message);
    RString::from(serde_json::to_string(&failure).unwrap_or_else(|_| failure.to_string()))
}

/// One recorded attempt, played back chunk by chunk.
struct Playback {
    chunks: Arc<Vec<String>>,
    next: AtomicUsize,
}

impl ChunkStream for Playback {
    fn next(&self) -> FfiFuture<RResult<ROption<RString>, RString>> {
        let index = self.next.fetch_add(1, Ordering::AcqRel);
        let chunk = self.chunks.get(index).cloned();
        async move {
            ROk(match chunk {
                Some(chunk) => RSome(RString::from(chunk)),
                None => RNone,
            })
        }
        .into_ffi()
    }
}

/// A hang: the stream never yields (the caller cancels by dropping it).
struct Hang;

impl ChunkStream for Hang {
    fn next(&self) -> FfiFuture<RResult<ROption<RString>, RString>> {
        std::future::pending().into_ffi()
    }
}

pub struct ReplayPlugin;

impl Plugin for ReplayPlugin {
    const NAME: &'static str = "llm-replay";
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let script = Arc::new(
            Script::load(&config.log, config.overrides.as_deref()).map_err(PluginError::plugin)?,
        );
        dsh_plugin_api::tracing::info!(
            "replaying {} recorded answer(s) from {}",
            script.len(),
            config.log
        );
        // Tells a runner that mounted this row that the replay is in place.
        ctx.provide(REPLAY_READY, RString::from(config.log.as_str()))?;
        let requests = Arc::new(AtomicUsize::new(0));
        let check_ctx = ctx.clone();
        ctx.on_waterfall(&LLM_STREAM, move |next: Next<StreamCall, StreamOutcome>| {
            let index = requests.fetch_add(1, Ordering::AcqRel);
            let script = script.clone();
            let ctx = check_ctx.clone();
            async move {
                let call = next.payload();
                // Replay answers in the model's place, so the request is checked here.
                match serde_json::from_str::<GenerateRequest>(&call.request) {
                    Ok(request) => {
                        if let Err(violation) =
                            dsh_visible_check::check_request(&ctx, &request).await
                        {
                            return Ok(RErr(failure_json(violation)));
                        }
                    }
                    Err(error) => {
                        return Ok(RErr(failure_json(format!(
                            "llm-replay: the request is not a GenerateRequest: {error}"
                        ))));
                    }
                }
                Ok(match script.answer(index) {
                    Some(Answer::Chunks(chunks)) => ROk(ChunkStream_TO::from_value(
                        Playback {
                            chunks,
                            next: AtomicUsize::new(0),
                        },
                        TD_Opaque,
                    )),
                    Some(Answer::Hang(ready)) => {
                        if let Some(ready) = ready
                            && let Err(error) = std::fs::write(&ready, b"")
                        {
                            return Ok(RErr(failure_json(format!(
                                "llm-replay: cannot create {ready}: {error}"
                            ))));
                        }
                        ROk(ChunkStream_TO::from_value(Hang, TD_Opaque))
                    }
                    None => RErr(failure_json(format!(
                        "llm-replay: request {} has no recorded answer ({} recorded)",
                        index + 1,
                        script.len()
                    ))),
                })
            }
        })
    }
}

dsh_plugin_api::export_plugins!(ReplayPlugin);
