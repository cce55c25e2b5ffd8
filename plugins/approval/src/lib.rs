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
use dsh_agents_seam::{AGENT_SESSION_START, AgentNotice};
use dsh_approval_seam::{APPROVAL_REQUEST, APPROVAL_SERVICE, Approval, Approval_TO};
use dsh_plugin_api::Channel;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{
    AgentNoticeData, ApprovalAskedEvent, ApprovalDecidedEvent, ApprovalOutcome, ApprovalPolicy,
    ApprovalPolicyEvent, ApprovalRequest, ApprovalVerdict, PermissionPreset, PermissionPresetEvent,
    SandboxModeEvent, SessionStartSource,
};
use dsh_sessions_seam::{LatestOf, NewEventRecord, append_or_report, open_live};

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
    /// Each session's latest `approval/policy`.
    policies: LatestOf<ApprovalPolicyEvent>,
    never: bool,
    request: Channel<WaterfallEvent<Json<ApprovalRequest>, Json<ApprovalVerdict>>>,
    next_id: AtomicU64,
}

impl Service {
    async fn decide(self: Arc<Self>, request: Json<ApprovalRequest>) -> ApprovalOutcome {
        // An ask that does not read is refused: there is nothing to put to anyone.
        let Ok(mut ask) = request.decode() else {
            return ApprovalOutcome::Unavailable;
        };
        if ask.id.is_empty() {
            let n = self.next_id.fetch_add(1, Ordering::Relaxed);
            ask.id = format!(
                "approval-{}-{n}",
                ask.call_id.as_deref().unwrap_or_default()
            );
        }
        let asked = ApprovalAskedEvent {
            id: ask.id.clone(),
            tool_name: ask.tool_name.clone(),
            call_id: ask.call_id.clone().filter(|id| !id.is_empty()),
            reason: ask.reason.clone().filter(|reason| !reason.is_empty()),
        };
        append_or_report(
            &self.ctx,
            "approval",
            &ask.session,
            NewEventRecord::of(&asked),
        )
        .await;
        let verdict = if self.session_policy(&ask.session) == ApprovalPolicy::Never {
            ApprovalVerdict::of(ApprovalOutcome::Rejected)
        } else {
            let answered = self
                .request
                .waterfall(RArc::new(Json::encode(&ask)), |_| async {
                    Ok(Json::encode(&ApprovalVerdict::of(
                        ApprovalOutcome::Unavailable,
                    )))
                })
                .await;
            // Anything but one of the four outcomes is `unavailable`: fail closed.
            answered
                .ok()
                .and_then(|verdict| verdict.decode().ok())
                .unwrap_or(ApprovalVerdict::of(ApprovalOutcome::Unavailable))
        };
        let outcome = verdict.outcome;
        let decided = ApprovalDecidedEvent {
            id: ask.id.clone(),
            outcome,
            scope: verdict
                .scope
                .filter(|_| outcome == ApprovalOutcome::AllowedOnce),
            note: verdict
                .note
                .filter(|_| outcome == ApprovalOutcome::Rejected),
        };
        append_or_report(
            &self.ctx,
            "approval",
            &ask.session,
            NewEventRecord::of(&decided),
        )
        .await;
        outcome
    }
}

struct Handle(Arc<Service>);

impl Approval for Handle {
    fn request(&self, request: Json<ApprovalRequest>) -> FfiFuture<Json<ApprovalOutcome>> {
        let service = self.0.clone();
        async move { Json::encode(&service.decide(request).await) }.into_ffi()
    }

    fn policy(&self) -> Json<ApprovalPolicy> {
        Json::encode(&self.0.policy())
    }

    fn session_policy(&self, session: RString) -> Json<ApprovalPolicy> {
        Json::encode(&self.0.session_policy(&session))
    }
}

impl Service {
    fn policy(&self) -> ApprovalPolicy {
        if self.never {
            ApprovalPolicy::Never
        } else {
            ApprovalPolicy::Ask
        }
    }

    /// The policy of `session`: its latest `approval/policy` (a preset chosen for it), else
    /// the row's. Read incrementally: asked at every request, it costs what was logged since.
    fn session_policy(&self, session: &str) -> ApprovalPolicy {
        open_live(&self.ctx, session)
            .ok()
            .and_then(|live| self.policies.of(&live))
            .map_or_else(|| self.policy(), |event| event.policy)
    }
}

pub struct ApprovalPlugin;

impl Plugin for ApprovalPlugin {
    const NAME: &'static str = "approval";
    const OPTIONAL: &'static [&'static str] = &[dsh_sessions_seam::SESSIONS_SERVICE];
    const PROVIDES: &'static [&'static str] = &[APPROVAL_SERVICE];
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
            policies: LatestOf::default(),
            never,
            request: ctx.channel(&APPROVAL_REQUEST)?,
            next_id: AtomicU64::new(1),
        };
        ctx.provide(
            APPROVAL_SERVICE,
            Approval_TO::from_value(Handle(Arc::new(service)), TD_Opaque),
        )
    }
}

/// With an explicit preset, each new top-level agent's log starts with it, as the reference's
/// does: `permission/preset`, `sandbox/mode`, `approval/policy`, before anything is queued. A
/// delegated child's policies are the delegation's (the subagents plugin logs them).
fn log_preset_at_start(ctx: &Context, preset: String, never: bool) -> Result<(), PluginError> {
    if PermissionPreset::parse(&preset).is_none() {
        ctx.log(
            dsh_plugin_api::LogLevel::Warn,
            &format!(
                "DSH_PERMISSION_MODE=`{preset}` is not one of read-only, workspace-write, danger-full-access, ask-every-command; workspace-write applies"
            ),
        );
        return Ok(());
    }
    let listener_ctx = ctx.clone();
    let policy = if never {
        ApprovalPolicy::Never
    } else {
        ApprovalPolicy::Ask
    };
    ctx.on_emit(&AGENT_SESSION_START, move |notice: &AgentNotice| {
        if !matches!(
            notice.data.decode(),
            Ok(AgentNoticeData::SessionStart {
                source: SessionStartSource::Startup,
                delegated: false,
            })
        ) {
            return;
        }
        let batch = vec![
            NewEventRecord::of(&PermissionPresetEvent {
                preset: preset.clone(),
            }),
            NewEventRecord::of(&SandboxModeEvent {
                mode: preset.clone(),
            }),
            NewEventRecord::of(&ApprovalPolicyEvent {
                policy,
                source: None,
            }),
        ];
        let appended = open_live(&listener_ctx, &notice.agent)
            .and_then(|session| session.append(RVec::from(batch)).into_result().map(|_| ()));
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
