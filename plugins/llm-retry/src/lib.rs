//! Plugin `llm-retry`: a listener on `agent/request-error` that retries transient model failures
//! (`EMPTY_RESPONSE`, `RATE_LIMIT`, `SERVER`, `TIMEOUT`, `TRANSPORT`, and `STREAM_CLOSED`: a
//! connection that dropped mid-answer) up to `maxRetries` times,
//! waiting 500 ms doubling to 10 s with 0.1 jitter, or the provider's `Retry-After` when it is
//! shorter than the cap. Each retry is logged in the session as `llm/retry` (before the wait)
//! and `llm/retry-started` (after it); the retried attempt stays in the same turn and step.
//! An answer cut off by the adapter's bounds (`RESPONSE_TOO_LARGE`, `DEADLINE_EXCEEDED`) is
//! not retried: the next attempt would cost as much and likely end the same way.

mod policy;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dsh_agents_seam::AGENT_REQUEST_ERROR;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{LlmRetryEvent, LlmRetryStartedEvent, RequestErrorDecision, RequestFailure};
use dsh_sessions_seam::{NewEventRecord, append_or_report};

use crate::policy::{Policy, is_transient};

/// Config of `llm-retry`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct RetryConfig {
    pub max_retries: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
    /// Spread of each wait, as a fraction of it (0.1: ±10 %).
    pub jitter: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 5,
            base_delay_ms: 500,
            max_delay_ms: 10_000,
            jitter: 0.1,
        }
    }
}

/// A number in [0, 1) for the jitter; no secret depends on it, the clock's nanoseconds do.
fn unit_noise() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    f64::from(nanos % 1_000_000) / 1_000_000.0
}

pub struct RetryPlugin;

impl Plugin for RetryPlugin {
    const NAME: &'static str = "llm-retry";
    const OPTIONAL: &'static [&'static str] = &[dsh_sessions_seam::SESSIONS_SERVICE];
    type Config = RetryConfig;

    async fn apply(ctx: Context, config: RetryConfig) -> Result<(), PluginError> {
        if !(0.0..=1.0).contains(&config.jitter) {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                format!("jitter: {} is not between 0 and 1", config.jitter),
            ));
        }
        let policy = Policy {
            max_retries: config.max_retries,
            base_delay_ms: config.base_delay_ms,
            max_delay_ms: config.max_delay_ms,
            jitter: config.jitter,
        };
        let listener_ctx = ctx.clone();
        ctx.on_waterfall(
            &AGENT_REQUEST_ERROR,
            move |next: Next<Json<RequestFailure>, Json<RequestErrorDecision>>| {
                let (ctx, policy) = (listener_ctx.clone(), policy.clone());
                async move {
                    let Ok(error) = next.payload().decode() else {
                        return next.run().await;
                    };
                    if !is_transient(&error.failure) || error.failures > policy.max_retries {
                        return next.run().await;
                    }
                    retry(&ctx, &policy, &error).await;
                    Ok(Json::encode(&RequestErrorDecision::Retry))
                }
            },
        )
    }
}

/// Logs the retry, waits its delay, and logs that it starts.
async fn retry(ctx: &Context, policy: &Policy, error: &RequestFailure) {
    let retry = error.failures;
    let delay = policy.delay_ms(retry, &error.failure, unit_noise());
    let retry_id = format!("{}-t{}-s{}-r{retry}", error.session, error.turn, error.step);
    let logged = LlmRetryEvent {
        retry_id: retry_id.clone(),
        turn: error.turn,
        step: error.step,
        provider: error.provider.clone(),
        mode: "normal".to_owned(),
        policy_key: policy.key(),
        retry,
        max_retries: Some(policy.max_retries),
        delay_ms: delay,
        failure: error.failure.clone(),
    };
    append_or_report(
        ctx,
        "llm-retry",
        &error.session,
        NewEventRecord::of(&logged),
    )
    .await;
    ctx.sleep(Duration::from_millis(delay)).await;
    let started = LlmRetryStartedEvent {
        retry_id,
        turn: error.turn,
        step: error.step,
        retry,
    };
    append_or_report(
        ctx,
        "llm-retry",
        &error.session,
        NewEventRecord::of(&started),
    )
    .await;
}

dsh_plugin_api::export_plugins!(RetryPlugin);
