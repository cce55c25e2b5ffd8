//! Plugin `compaction`: keeps a session within its model's context window. Before each step
//! (`agent/pre-step`), when the next request would carry more than `threshold` (0.8) of the
//! window, the surface's oldest span is replaced by a summary the session's own model writes,
//! keeping a tail of about `keep` (0.16) of the window verbatim and never separating a tool
//! call from its result; the summary request reuses the conversation's system prompt, tools and
//! history, so the provider serves it from the cached prefix. When the provider answers
//! `CONTEXT_WINDOW_EXCEEDED` anyway (`agent/request-error`), the session is compacted down to
//! its newest call and result and the step retried once. Each compaction logs the reference's `compaction/start`,
//! `compaction/summary`, a `user/message` with a `replace` surface op and `compaction/end`, so
//! every reader of the log sees the summary. A failed summary leaves the log as it was and ends
//! the turn: blocked before a step, `error` after an overflow. The window is the latest
//! `request/context`'s (the model catalog's), or the row's `contextWindow`. `/compact [focus]`
//! compacts an idle session at once, below the threshold too. Old tool results over 8,192 code
//! points are pruned to their head and tail in batches (see `prune`). The service
//! `compaction` answers a session's token meter and compacts on demand.

mod command;
mod compact;
mod plan;
mod prune;
mod service;
mod summarize;
mod surface;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENT_PRE_STEP, AGENT_REQUEST_ERROR};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, lock};
use dsh_protocol::{FailureCode, PreStepDecision, RequestErrorDecision};

use crate::compact::{CompactError, Keep, Settings, compact};

/// Config of `compaction`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct CompactionConfig {
    /// Compact when the next request would carry more than this share of the window.
    pub threshold: f64,
    /// The share of the window kept verbatim after the summary.
    pub keep: f64,
    /// The summary request's output cap (tokens).
    pub max_summary_tokens: u64,
    /// The window to assume instead of the model catalog's (tokens).
    pub context_window: Option<u64>,
    /// Prune old tool results over `pruneOver` code points to `pruneHead` + a marker +
    /// `pruneTail`, once `pruneAfter` answers follow them, in batches of `pruneBatchTokens`.
    pub prune: bool,
    pub prune_over: usize,
    pub prune_head: usize,
    pub prune_tail: usize,
    pub prune_after: usize,
    pub prune_batch_tokens: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            threshold: 0.8,
            keep: 0.16,
            max_summary_tokens: 8_192,
            context_window: None,
            prune: true,
            prune_over: 8_192,
            prune_head: 4_096,
            prune_tail: 1_024,
            prune_after: 2,
            prune_batch_tokens: 8_192,
        }
    }
}

pub struct CompactionPlugin;

impl Plugin for CompactionPlugin {
    const NAME: &'static str = "compaction";
    const OPTIONAL: &'static [&'static str] = &[
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_llm_seam::LLM_SERVICE,
        dsh_agents_seam::AGENTS_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[dsh_compaction_seam::COMPACTION_SERVICE];
    type Config = CompactionConfig;

    async fn apply(ctx: Context, config: CompactionConfig) -> Result<(), PluginError> {
        let fraction = |value: f64, field: &str| {
            if value > 0.0 && value < 1.0 {
                Ok(value)
            } else {
                Err(PluginError {
                    kind: dsh_plugin_api::ErrorKind::Config,
                    message: format!("invalid config: {field} `{value}` must lie between 0 and 1")
                        .into(),
                    path: abi_stable::std_types::RSome(format!("$.{field}").as_str().into()),
                })
            }
        };
        let settings = Settings {
            threshold: fraction(config.threshold, "threshold")?,
            keep: fraction(config.keep, "keep")?,
            max_summary_tokens: config.max_summary_tokens.max(1),
            context_window: config.context_window,
        };
        if config.prune_head + config.prune_tail >= config.prune_over {
            return Err(PluginError {
                kind: dsh_plugin_api::ErrorKind::Config,
                message: "invalid config: pruneHead + pruneTail must be less than pruneOver".into(),
                path: abi_stable::std_types::RSome("$.pruneOver".into()),
            });
        }
        let pruning = config.prune.then_some(prune::Pruning {
            over: config.prune_over,
            head: config.prune_head,
            tail: config.prune_tail,
            after: config.prune_after,
            batch: config.prune_batch_tokens,
        });
        // A session compacts once at a time; a step that comes while it does goes on.
        let running: Arc<Mutex<HashSet<String>>> = Arc::default();
        let trackers = Arc::new(surface::Trackers::default());
        let forget = trackers.clone();
        ctx.on_emit(&dsh_sessions_seam::SESSION_DISPOSED, move |id| {
            forget.forget(id.as_str())
        })?;
        let (before, busy, watched) = (ctx.clone(), running.clone(), trackers.clone());
        ctx.on_waterfall(&AGENT_PRE_STEP, move |next| {
            let (ctx, busy, trackers) = (before.clone(), busy.clone(), watched.clone());
            let proposal = next.payload().decode();
            async move {
                let Ok(proposal) = proposal else {
                    return next.run().await;
                };
                let Ok(live) = dsh_sessions_seam::open_live(&ctx, &proposal.session) else {
                    return next.run().await;
                };
                if let Some(rule) = &pruning {
                    prune_due(&ctx, &trackers, &live, rule);
                }
                let over = trackers
                    .pressure(&live, settings.context_window)
                    .is_some_and(|(tokens, window)| {
                        tokens as f64 > window as f64 * settings.threshold
                    });
                if !over || !lock(&busy).insert(proposal.session.clone()) {
                    return next.run().await;
                }
                let done = compact(
                    &ctx,
                    &settings,
                    &proposal.session,
                    Some(proposal.turn),
                    Keep::Share,
                    None,
                    &trackers,
                )
                .await;
                lock(&busy).remove(&proposal.session);
                match done {
                    Ok(()) => next.run().await,
                    // Over the threshold with nothing to shadow: the step goes on, and an
                    // overflow, if it comes, is the provider's to say.
                    Err(error @ (CompactError::NothingToCompact | CompactError::NoWindow)) => {
                        ctx.log(
                            LogLevel::Debug,
                            &format!("session `{}`: {error}", proposal.session),
                        );
                        next.run().await
                    }
                    Err(error) => Ok(Json::encode(&PreStepDecision::Reject {
                        reason: Some(error.to_string()),
                    })),
                }
            }
        })?;
        command::answer(&ctx, settings, running.clone(), trackers.clone())?;
        let service = service::Service {
            ctx: ctx.clone(),
            settings,
            busy: running.clone(),
            trackers: trackers.clone(),
        };
        ctx.provide(
            dsh_compaction_seam::COMPACTION_SERVICE,
            dsh_compaction_seam::Compaction_TO::from_value(
                service,
                abi_stable::sabi_trait::TD_Opaque,
            ),
        )?;
        let (after, busy, trackers) = (ctx.clone(), running, trackers);
        ctx.on_waterfall(&AGENT_REQUEST_ERROR, move |next| {
            let (ctx, busy, trackers) = (after.clone(), busy.clone(), trackers.clone());
            let failed = next.payload().decode();
            async move {
                let Ok(failed) = failed else {
                    return next.run().await;
                };
                // Compact on the first overflow of a step only: a second one fails loud.
                if failed.failure.code != FailureCode::ContextWindowExceeded || failed.failures > 1
                {
                    return next.run().await;
                }
                if !lock(&busy).insert(failed.session.clone()) {
                    return next.run().await;
                }
                let done = compact(
                    &ctx,
                    &settings,
                    &failed.session,
                    Some(failed.turn),
                    Keep::Least,
                    None,
                    &trackers,
                )
                .await;
                lock(&busy).remove(&failed.session);
                match done {
                    Ok(()) => Ok(Json::encode(&RequestErrorDecision::Retry)),
                    Err(error) => {
                        ctx.log(
                            LogLevel::Warn,
                            &format!("session `{}`: {error}", failed.session),
                        );
                        Ok(Json::encode(&RequestErrorDecision::Fail))
                    }
                }
            }
        })
    }
}

/// Rewrites the results of `session` that are due for pruning, in one batch.
fn prune_due(
    ctx: &Context,
    trackers: &surface::Trackers,
    live: &dsh_sessions_seam::SessionBox,
    rule: &prune::Pruning,
) {
    let due = trackers.prunable(live, rule);
    if due.is_empty() {
        return;
    }
    let batch = prune::batch(live, &due, rule);
    if let Err(error) = live.append(batch.into()).into_result() {
        ctx.log(
            LogLevel::Warn,
            &format!("session `{}`: pruning old tool results: {error}", live.id()),
        );
    }
}

dsh_plugin_api::export_plugins!(CompactionPlugin);
