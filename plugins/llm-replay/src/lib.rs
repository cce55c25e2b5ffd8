//! Plugin `llm-replay`: the model, replayed. It answers each model call of a session with the
//! next attempt recorded in a session log (see the `script` module for how a log becomes a
//! script, and the `entry` module for the `replay.override.json` that replaces or patches it:
//! chunks, a throw after a prefix, a hang), so recorded cases re-run without a network or a
//! key. Nested agents get their own recorded logs (`childFiles`), one per live session in the
//! order of their first calls; scripted strings may take text from the live request
//! (`{{fromRequest:<regex>}}`); `paceMs` delays each chunk.
//!
//! It plugs into the `llm/stream` waterfall and answers without calling `next`: no adapter is
//! asked, whatever provider the request names. Since it answers in the model's place, it
//! checks each request against its session's log as the `llm` service does.

mod entry;
mod playback;
mod script;
mod template;

use std::sync::Arc;

use abi_stable::std_types::{RErr, RString};
use dsh_llm_seam::{LLM_STREAM, StreamCall, StreamOutcome};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{FailureCode, GenerateRequest, LlmFailure};

use crate::playback::{Pace, answer};
use crate::script::Scripts;

/// Service published once the replay listens: its value is the replayed log's path.
pub const REPLAY_READY: &str = "llm_replay";

/// Row config of `llm-replay`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    /// The recorded session log (`session.jsonl`) whose attempts answer the requests.
    pub log: String,
    /// Overrides; default: `replay.override.json` beside the log, when it exists.
    #[serde(default)]
    pub overrides: Option<String>,
    /// The logs of nested agents (`session.1.jsonl`, ...), ordered with the log by their
    /// headers' `createdAt`; each live session binds to the next by the order of its first call.
    #[serde(default)]
    pub child_files: Vec<String>,
    /// Milliseconds to wait before each chunk (0: none).
    #[serde(default)]
    pub pace_ms: u64,
    /// Answer only requests that name this provider, passing every other one on (so a replay
    /// can run beside real models, as the web's offline demo does). Default: answer all.
    #[serde(default)]
    pub provider: Option<String>,
    /// Sessions past the last script start the scripts over instead of failing.
    #[serde(default)]
    pub repeat: bool,
    /// Answer session-title requests too. Default: they are passed on, so a recording of a
    /// conversation is not consumed by the title of the session replaying it (a row of its
    /// own, with its own log, answers titles).
    #[serde(default)]
    pub answer_titles: bool,
}

fn failure(code: FailureCode, message: impl Into<String>) -> Json<LlmFailure> {
    Json::encode(&LlmFailure::new(code, message.into()))
}

pub struct ReplayPlugin;

impl Plugin for ReplayPlugin {
    const NAME: &'static str = "llm-replay";
    const OPTIONAL: &'static [&'static str] = &[dsh_sessions_seam::SESSIONS_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        let scripts = Scripts::load(
            &config.log,
            config.overrides.as_deref(),
            &config.child_files,
        )
        .map_err(|error| PluginError::plugin(error.to_string()))?;
        let scripts = match config.repeat {
            true => scripts.repeating(),
            false => scripts,
        };
        dsh_plugin_api::tracing::info!(
            "replaying {} recorded answer(s) from {}",
            scripts.calls(),
            config.log
        );
        let scripts = Arc::new(scripts);
        let creations = scripts.clone();
        ctx.on_emit(&dsh_sessions_seam::SESSION_CREATED, move |id| {
            creations.session_created(id.as_str())
        })?;
        // Tells a runner that mounted this row that the replay is in place.
        ctx.provide(REPLAY_READY, RString::from(config.log.as_str()))?;
        let pace = Pace {
            ctx: ctx.clone(),
            millis: config.pace_ms,
        };
        let only = config.provider.map(Arc::new);
        let answer_titles = config.answer_titles;
        ctx.on_waterfall(&LLM_STREAM, move |next: Next<StreamCall, StreamOutcome>| {
            let scripts = scripts.clone();
            let pace = pace.clone();
            let only = only.clone();
            async move {
                let request: GenerateRequest = match next.payload().request.decode() {
                    Ok(request) => request,
                    Err(error) => {
                        return Ok(RErr(failure(
                            FailureCode::InvalidRequest,
                            format!("llm-replay: {error}"),
                        )));
                    }
                };
                let title = request.purpose == Some(dsh_protocol::Purpose::SessionTitle);
                if (title && !answer_titles)
                    || only
                        .as_deref()
                        .is_some_and(|provider| *provider != request.config.provider)
                {
                    return next.run().await;
                }
                Ok(answer(&scripts, &pace, request).await)
            }
        })
    }
}

dsh_plugin_api::export_plugins!(ReplayPlugin);
