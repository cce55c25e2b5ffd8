//! One-shot escalation: a `bash`, `write` or `edit` call whose arguments carry
//! `sandbox_permissions` (a mode) and a `justification` asks to run in that mode. Before the
//! call runs (`tools/pre-execute`), a mode strictly wider than the session's is put to a
//! person through the `approval` service; allowed once, the mode is granted to that call
//! alone, otherwise the call is refused naming the outcome. The session's own mode, or a
//! narrower one, needs no approval and is no error (the reference errs there).

use std::sync::Arc;

use dsh_approval_seam::{APPROVAL, ApprovalService};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{ApprovalOutcome, ApprovalRequest, PreDecision, SandboxMode};
use dsh_tools_seam::TOOLS_PRE_EXECUTE;

use crate::service::SandboxImpl;

/// The tools that take `sandbox_permissions`.
pub(crate) const ESCALATING_TOOLS: [&str; 3] = ["bash", "write", "edit"];

/// What a call asks for, read from its arguments.
enum Asked {
    Nothing,
    Invalid(String),
    Mode(SandboxMode, String),
}

/// The escalation fields of a call's arguments (its other fields are the tool's).
#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Escalation {
    #[serde(default)]
    sandbox_permissions: Option<serde_json::Value>,
    #[serde(default)]
    justification: Option<String>,
}

fn asked(arguments: &str) -> Asked {
    let Ok(Escalation {
        sandbox_permissions: Some(requested),
        justification,
    }) = serde_json::from_str::<Escalation>(arguments)
    else {
        return Asked::Nothing;
    };
    let justification = justification.unwrap_or_default().trim().to_owned();
    match requested.as_str().and_then(SandboxMode::parse) {
        Some(mode) => Asked::Mode(mode, justification),
        None => Asked::Invalid(format!(
            "sandbox_permissions: `{requested}` is not read-only, workspace-write or danger-full-access"
        )),
    }
}

/// Listens on `tools/pre-execute` for calls that ask for a wider mode.
pub(crate) fn listen(ctx: &Context, sandbox: Arc<SandboxImpl>) -> Result<(), PluginError> {
    let approvals = ctx.clone();
    ctx.on_waterfall(&TOOLS_PRE_EXECUTE, move |next| {
        let call = next.payload();
        let (sandbox, ctx) = (sandbox.clone(), approvals.clone());
        let request = match ESCALATING_TOOLS.contains(&call.name.as_str()) {
            true => asked(&call.arguments),
            false => Asked::Nothing,
        };
        let (session, call_id, tool) = (call.session.to_string(), call.call_id.to_string(), call.name.to_string());
        async move {
            let (mode, justification) = match request {
                Asked::Nothing => return next.run().await,
                Asked::Invalid(reason) => return Ok(Json::encode(&PreDecision::Deny { reason })),
                Asked::Mode(mode, justification) => (mode, justification),
            };
            let current = sandbox.mode_of(&session);
            if mode.rank() <= current.rank() {
                return next.run().await;
            }
            if justification.is_empty() {
                return Ok(Json::encode(&PreDecision::Deny {
                    reason: format!("sandbox_permissions `{}` needs a justification for the person who approves it", mode.as_str()),
                }));
            }
            let Ok(Some(approval)) = ctx.get::<ApprovalService>(APPROVAL) else {
                return Ok(Json::encode(&PreDecision::Deny {
                    reason: format!("running in {} needs approval, and no approval service runs", mode.as_str()),
                }));
            };
            let ask = ApprovalRequest {
                id: String::new(),
                session: session.clone(),
                tool_name: tool.clone(),
                call_id: Some(call_id.clone()),
                reason: Some(format!(
                    "{tool} asks to run in {} instead of {}: {justification}",
                    mode.as_str(),
                    current.as_str()
                )),
            };
            let outcome = approval
                .request(Json::encode(&ask))
                .await
                .decode()
                .unwrap_or(ApprovalOutcome::Unavailable);
            if outcome != ApprovalOutcome::AllowedOnce {
                return Ok(Json::encode(&PreDecision::Deny {
                    reason: format!(
                        "running in {} was not approved ({}); the call did not run",
                        mode.as_str(),
                        outcome.as_str()
                    ),
                }));
            }
            sandbox.grant(&session, &call_id, mode);
            next.run().await
        }
    })
}
