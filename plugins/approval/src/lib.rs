//! Plugin `approval`: provides `approval`, fail-closed. Policy `never` (the default under
//! `DSH_PERMISSION_MODE=danger-full-access`) rejects every ask before any answerer is
//! consulted; policy `ask` puts it to the `approval/request` chain, whose innermost default is
//! `unavailable` (no one to ask, as in the headless runner). Anything but the four outcomes is
//! `unavailable`, and only `allowed-once` lets a call through. Each ask is audited in its
//! session: `approval/asked`, then `approval/decided`. With an explicit `DSH_PERMISSION_MODE`,
//! each new agent's log starts with the preset: `permission/preset`, `sandbox/mode`,
//! `approval/policy`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agent_seam::{AGENT_SESSION_START, AgentNotice};
use dsh_plugin_api::Channel;
use dsh_plugin_api::prelude::*;
use dsh_session_seam::{NewEventRecord, append_or_report, open_live};
use dsh_tools_seam::{APPROVAL, APPROVAL_REQUEST, Approval, Approval_TO, ApprovalAsk};
use serde_json::{Value, json};

const OUTCOMES: [&str; 4] = ["allowed-once", "rejected", "cancelled", "unavailable"];

/// Config of `approval`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ApprovalConfig {
    /// `ask` or `never`; unset: `never` under `DSH_PERMISSION_MODE=danger-full-access`, else
    /// `ask`.
    pub policy: Option<String>,
}

struct Service {
    ctx: Context,
    never: bool,
    request: Channel<WaterfallEvent<ApprovalAsk, RString>>,
    next_id: AtomicU64,
}

impl Service {
    async fn audit(&self, session: &str, kind: &str, data: &Value) {
        append_or_report(&self.ctx, "approval", session, kind, &data.to_string()).await;
    }

    async fn decide(self: Arc<Self>, mut ask: ApprovalAsk) -> RString {
        if ask.id.is_empty() {
            let n = self.next_id.fetch_add(1, Ordering::Relaxed);
            ask.id = format!("approval-{}-{n}", ask.call_id).as_str().into();
        }
        let mut asked = json!({"id": ask.id.as_str(), "toolName": ask.tool_name.as_str()});
        if !ask.call_id.is_empty() {
            asked["callId"] = json!(ask.call_id.as_str());
        }
        if !ask.reason.is_empty() {
            asked["reason"] = json!(ask.reason.as_str());
        }
        self.audit(&ask.session, "approval/asked", &asked).await;
        let outcome = if self.never {
            "rejected".to_owned()
        } else {
            let answered = self
                .request
                .waterfall(RArc::new(ask.clone()), |_| async {
                    Ok(RString::from("unavailable"))
                })
                .await;
            match answered {
                Ok(outcome) if OUTCOMES.contains(&outcome.as_str()) => outcome.into_string(),
                _ => "unavailable".to_owned(),
            }
        };
        self.audit(
            &ask.session,
            "approval/decided",
            &json!({"id": ask.id.as_str(), "outcome": outcome}),
        )
        .await;
        RString::from(outcome)
    }
}

struct Handle(Arc<Service>);

impl Approval for Handle {
    fn request(&self, ask: ApprovalAsk) -> FfiFuture<RString> {
        self.0.clone().decide(ask).into_ffi()
    }

    fn policy(&self) -> RString {
        RString::from(if self.0.never { "never" } else { "ask" })
    }
}

pub struct ApprovalPlugin;

impl Plugin for ApprovalPlugin {
    const NAME: &'static str = "approval";
    const PROVIDES: &'static [&'static str] = &[APPROVAL];
    type Config = ApprovalConfig;

    async fn apply(ctx: Context, config: ApprovalConfig) -> Result<(), PluginError> {
        let never = match config.policy.as_deref() {
            Some("never") => true,
            Some("ask") => false,
            Some(other) => {
                return Err(PluginError::new(
                    dsh_plugin_api::ErrorKind::Config,
                    format!("policy: `{other}` is not ask or never"),
                ));
            }
            None => {
                std::env::var("DSH_PERMISSION_MODE").is_ok_and(|mode| mode == "danger-full-access")
            }
        };
        if let Ok(preset) = std::env::var("DSH_PERMISSION_MODE") {
            log_preset_at_start(&ctx, preset, never)?;
        }
        let service = Service {
            ctx: ctx.clone(),
            never,
            request: ctx.channel(&APPROVAL_REQUEST)?,
            next_id: AtomicU64::new(1),
        };
        ctx.provide(
            APPROVAL,
            Approval_TO::from_value(Handle(Arc::new(service)), TD_Opaque),
        )
    }
}

/// The presets `DSH_PERMISSION_MODE` names; each is also its sandbox mode.
const PRESETS: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];

/// With an explicit preset, each new agent's log starts with it, as the reference's does:
/// `permission/preset`, `sandbox/mode`, `approval/policy`, before anything is queued.
fn log_preset_at_start(ctx: &Context, preset: String, never: bool) -> Result<(), PluginError> {
    if !PRESETS.contains(&preset.as_str()) {
        ctx.log(
            dsh_plugin_api::LogLevel::Warn,
            &format!(
                "DSH_PERMISSION_MODE=`{preset}` is not one of {}; workspace-write applies",
                PRESETS.join(", ")
            ),
        );
        return Ok(());
    }
    let listener_ctx = ctx.clone();
    ctx.on_emit(&AGENT_SESSION_START, move |notice: &AgentNotice| {
        let started: Value = serde_json::from_str(&notice.data).unwrap_or(Value::Null);
        if started["source"] != "startup" {
            return;
        }
        let policy = if never { "never" } else { "ask" };
        let events = [
            ("permission/preset", json!({"preset": preset})),
            ("sandbox/mode", json!({"mode": preset})),
            ("approval/policy", json!({"policy": policy})),
        ];
        let appended = open_live(&listener_ctx, &notice.agent).and_then(|session| {
            let batch: Vec<NewEventRecord> = events
                .iter()
                .map(|(kind, data)| NewEventRecord::new(kind, &data.to_string()))
                .collect();
            session
                .append(RVec::from(batch))
                .into_result()
                .map(|_| ())
                .map_err(|error| error.to_string())
        });
        if let Err(error) = appended {
            listener_ctx.log(
                dsh_plugin_api::LogLevel::Error,
                &format!(
                    "approval: the permission preset of `{}` was not logged: {error}",
                    notice.agent
                ),
            );
        }
    })
}

dsh_plugin_api::export_plugins!(ApprovalPlugin);
