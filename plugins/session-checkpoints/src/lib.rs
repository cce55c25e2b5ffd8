//! Plugin `session-checkpoints`: the durability checkpoints of a conversation. It flushes the
//! session's log (a `session/flush` dispatch, which the store answers by writing and syncing
//! what is queued; nothing queued costs nothing) at three points:
//!
//! - on `agent/pre-step`, before its hooks run, so the previous step's results are on disk
//!   before anything else happens (a crash in a hook cannot turn a finished tool into one
//!   whose outcome is unknown);
//! - on `agent/request`, after every other listener has shaped the request and just before it
//!   goes to the model, so the log holds everything the model is about to be asked. When all
//!   the log gained since the last checkpoint is the step's own `step/start` marker (every
//!   step after a tool step: its results were synced at the pre-step), the model is asked
//!   nothing new and the flush is skipped; a crash then loses only the marker, and recovery
//!   closes the turn the same way with or without it;
//! - on `tools/execute`, before a top-level tool body runs, so that after a crash the log says
//!   truthfully whether a tool had started (`tool/call` on disk) and recovery can tell
//!   `TOOL_NOT_STARTED` from `TOOL_OUTCOME_UNKNOWN`.
//!
//! It is a row of its own, as in the reference (its session-checkpoint-policy plugin): a
//! composition that does not want synchronous durability (a throwaway run, a benchmark that
//! measures the harness without its fsyncs) leaves it out, and the batch timer of the store
//! still writes everything a moment later.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RArc, RSome, RString};
use dsh_agents_seam::{AGENT_PRE_STEP, AGENT_REQUEST};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, LogLevel, ParallelEvent, lock};
use dsh_protocol::kinds::STEP_START;
use dsh_sessions_seam::{FlushRequest, SESSION_FLUSH, SESSIONS_SERVICE, open_live};
use dsh_tools_seam::TOOLS_EXECUTE;

/// A checkpoint that could not be made durable.
#[derive(Debug, thiserror::Error)]
#[error("session `{session}`: flush {point} failed: {error}")]
struct FlushFailed {
    session: String,
    point: String,
    error: PluginError,
}

impl From<FlushFailed> for PluginError {
    fn from(failed: FlushFailed) -> Self {
        PluginError::plugin(failed.to_string())
    }
}

/// Flush one session's log.
async fn flush(
    channel: &Channel<ParallelEvent<FlushRequest>>,
    session: &str,
    point: &str,
) -> Result<(), FlushFailed> {
    let request = RArc::new(FlushRequest {
        session: RSome(RString::from(session)),
    });
    channel
        .parallel(request)
        .await
        .map_err(|error| FlushFailed {
            session: session.to_owned(),
            point: point.to_owned(),
            error,
        })
}

/// Sessions past this many are forgotten at once: a forgotten session's next request is
/// flushed, which is always correct.
const REMEMBERED: usize = 256;

/// How many events of each live session the last checkpoint covered.
#[derive(Clone)]
struct Covered {
    ctx: Context,
    counts: Arc<Mutex<HashMap<String, u64>>>,
}

impl Covered {
    /// The session's event count now (`None` when it is not live here).
    fn count(&self, session: &str) -> Option<u64> {
        open_live(&self.ctx, session)
            .ok()
            .map(|live| live.event_count())
    }

    /// Flushes `session` and remembers the count read before the flush: everything up to it is
    /// on disk once the flush answers.
    async fn flush(
        &self,
        channel: &Channel<ParallelEvent<FlushRequest>>,
        session: &str,
        point: &str,
    ) -> Result<(), FlushFailed> {
        let count = self.count(session);
        flush(channel, session, point).await?;
        if let Some(count) = count {
            let mut counts = lock(&self.counts);
            if counts.len() >= REMEMBERED && !counts.contains_key(session) {
                counts.clear();
            }
            counts.insert(session.to_owned(), count);
        }
        Ok(())
    }

    /// Whether the log gained nothing since the last checkpoint but `step/start` markers.
    fn only_markers_since(&self, session: &str) -> bool {
        let Some(&covered) = lock(&self.counts).get(session) else {
            return false;
        };
        let Ok(live) = open_live(&self.ctx, session) else {
            return false;
        };
        let count = live.event_count();
        covered <= count
            && live
                .events(covered, count)
                .iter()
                .all(|record| record.kind.as_str() == STEP_START)
    }
}

pub struct CheckpointsPlugin;

impl Plugin for CheckpointsPlugin {
    const NAME: &'static str = "session-checkpoints";
    /// Read to tell a request that adds nothing to the log from one that does; without it,
    /// every checkpoint flushes.
    const OPTIONAL: &'static [&'static str] = &[SESSIONS_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let covered = Covered {
            ctx: ctx.clone(),
            counts: Arc::default(),
        };
        let on_pre_step = ctx.channel(&SESSION_FLUSH)?;
        let at_pre_step = covered.clone();
        // Prepended: the flush comes before every other pre-step listener, whatever order
        // the rows applied in.
        ctx.prepend().on_waterfall(&AGENT_PRE_STEP, move |next| {
            let (channel, covered) = (on_pre_step.clone(), at_pre_step.clone());
            async move {
                let step = next
                    .payload()
                    .decode()
                    .map_err(|error| PluginError::plugin(error.to_string()))?;
                covered
                    .flush(&channel, &step.session, "at the pre-step")
                    .await?;
                next.run().await
            }
        })?;
        let on_request = ctx.channel(&SESSION_FLUSH)?;
        let at_request = covered.clone();
        ctx.on_waterfall(&AGENT_REQUEST, move |next| {
            let (channel, covered) = (on_request.clone(), at_request.clone());
            async move {
                let request = next.payload();
                let session = request.session.clone();
                // Shaped by every listener first, then made durable right before it leaves.
                let shaped = next.run().await?;
                if !covered.only_markers_since(&session) {
                    covered
                        .flush(&channel, &session, "before the model request")
                        .await?;
                }
                Ok(shaped)
            }
        })?;
        let on_body = ctx.channel(&SESSION_FLUSH)?;
        let log = ctx.clone();
        ctx.on_waterfall(&TOOLS_EXECUTE, move |next| {
            let (channel, log, covered) = (on_body.clone(), log.clone(), covered.clone());
            async move {
                let call = next.payload();
                if !call.session.is_empty()
                    && let Err(error) = covered
                        .flush(&channel, &call.session, &format!("before `{}`", call.name))
                        .await
                {
                    // The body still runs: refusing it would turn a storage hiccup into a
                    // failed tool, and recovery already treats an unlogged call as not started.
                    log.log(LogLevel::Error, &error.to_string());
                }
                next.run().await
            }
        })?;
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(CheckpointsPlugin);
