//! One-shot escalation: a `bash`, `write` or `edit` call whose arguments carry
//! `sandbox_permissions` (a mode) and a `justification` asks to run in that mode. Before the
//! call runs (`tools/pre-execute`), a mode strictly wider than the session's is put to a
//! person through the `approval` service; allowed once, the mode is granted to that call
//! alone, otherwise the call is refused naming the outcome. The session's own mode, or a
//! narrower one, needs no approval and is no error (the reference errs there).
//!
//! A `write` or `edit` of a protected path (a repository's hooks or config, `.dsh`, `.claude`,
//! `.codex`, `.agents`, `.mcp.json`) is an escalation of its own, asked without the model
//! asking: those files decide what runs later, unconfined or unasked, so a person allows each
//! change, named by its path; with no one to ask the call is refused.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use dsh_approval_seam::{APPROVAL_SERVICE, ApprovalService};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{ApprovalOutcome, ApprovalRequest, PreDecision, SandboxMode, SandboxPolicy};
use dsh_tools_seam::TOOLS_PRE_EXECUTE;

use crate::service::SandboxImpl;

/// The tools that take `sandbox_permissions`.
pub(crate) const ESCALATING_TOOLS: [&str; 3] = ["bash", "write", "edit"];

/// What a call asks for, read from its arguments.
enum Asked {
    Nothing,
    Invalid(String),
    Mode(SandboxMode, String),
    /// A write of this protected path, which a person must allow.
    Protected(String),
}

/// The file a `write` or `edit` names.
#[derive(dsh_plugin_api::Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct FileArgument {
    #[serde(default)]
    file_path: Option<String>,
}

/// The path `file_path` (against `cwd`) names when it lies in one of `protected` (the
/// protected names of the session's project roots) and no writable root inside that one.
fn protected_target(
    policy: &SandboxPolicy,
    protected: &[String],
    cwd: &str,
    file_path: &str,
) -> Option<String> {
    let target = real_path(&Path::new(cwd).join(file_path));
    let real = |path: &str| real_path(Path::new(path));
    protected
        .iter()
        .map(|protected| real(protected))
        .filter(|protected| target.starts_with(protected))
        .find(|protected| {
            !policy
                .writable_roots
                .iter()
                .map(|root| real(root))
                .any(|root| root.starts_with(protected) && target.starts_with(&root))
        })
        .map(|_| target.display().to_string())
}

/// `path` with `.` and `..` folded and its longest existing prefix resolved, as the file tools
/// resolve a target that may not exist yet.
fn real_path(path: &Path) -> PathBuf {
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other.as_os_str()),
        }
    }
    let mut missing = Vec::new();
    let mut existing = folded.as_path();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return missing
                .iter()
                .rev()
                .fold(real, |path, name| path.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            _ => return folded,
        }
    }
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

/// The file tools whose target may be protected.
const FILE_TOOLS: [&str; 2] = ["write", "edit"];

/// Puts `reason` to a person through the `approval` service (none: `Unavailable`).
async fn ask(
    ctx: &Context,
    session: &str,
    call_id: &str,
    tool: &str,
    reason: String,
) -> ApprovalOutcome {
    let Ok(Some(approval)) = ctx.get::<ApprovalService>(APPROVAL_SERVICE) else {
        return ApprovalOutcome::Unavailable;
    };
    let ask = ApprovalRequest {
        id: String::new(),
        session: session.to_owned(),
        tool_name: tool.to_owned(),
        call_id: Some(call_id.to_owned()),
        reason: Some(reason),
    };
    approval
        .request(Json::encode(&ask))
        .await
        .decode()
        .unwrap_or(ApprovalOutcome::Unavailable)
}

/// Listens on `tools/pre-execute` for calls that ask for a wider mode.
pub(crate) fn listen(ctx: &Context, sandbox: Arc<SandboxImpl>) -> Result<(), PluginError> {
    let approvals = ctx.clone();
    ctx.on_waterfall(&TOOLS_PRE_EXECUTE, move |next| {
        let call = next.payload();
        let (sandbox, ctx) = (sandbox.clone(), approvals.clone());
        let mut request = match ESCALATING_TOOLS.contains(&call.name.as_str()) {
            true => asked(&call.arguments),
            false => Asked::Nothing,
        };
        if matches!(request, Asked::Nothing) && FILE_TOOLS.contains(&call.name.as_str()) {
            let policy = sandbox.policy_of(&call.session, &call.cwd, &call.call_id);
            if policy.mode == SandboxMode::WorkspaceWrite
                && let Ok(FileArgument { file_path: Some(path) }) =
                    serde_json::from_str::<FileArgument>(&call.arguments)
                && let Some(protected) =
                    protected_target(&policy, &sandbox.protected_by_name(&call.cwd), &call.cwd, &path)
            {
                request = Asked::Protected(protected);
            }
        }
        let (session, call_id, tool) = (call.session.to_string(), call.call_id.to_string(), call.name.to_string());
        async move {
            let (mode, justification) = match request {
                Asked::Nothing => return next.run().await,
                Asked::Invalid(reason) => return Ok(Json::encode(&PreDecision::Deny { reason })),
                Asked::Mode(mode, justification) => (mode, justification),
                Asked::Protected(path) => {
                    let reason = format!(
                        "{tool} asks to change {path}, which is protected (it decides what runs later)"
                    );
                    let outcome = ask(&ctx, &session, &call_id, &tool, reason).await;
                    if outcome != ApprovalOutcome::AllowedOnce {
                        return Ok(Json::encode(&PreDecision::Deny {
                            reason: format!(
                                "{path} is protected and the change was not approved ({}); the call did not run",
                                outcome.as_str()
                            ),
                        }));
                    }
                    sandbox.grant(&session, &call_id, SandboxMode::DangerFullAccess);
                    return next.run().await;
                }
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
            let reason = format!(
                "{tool} asks to run in {} instead of {}: {justification}",
                mode.as_str(),
                current.as_str()
            );
            let outcome = ask(&ctx, &session, &call_id, &tool, reason).await;
            if let Some(reason) = refusal(outcome, &tool, mode) {
                return Ok(Json::encode(&PreDecision::Deny { reason }));
            }
            sandbox.grant(&session, &call_id, mode);
            next.run().await
        }
    })
}

/// Why an escalation to `mode` that `outcome` did not allow refuses the call: the reference's
/// words for each outcome (its recorded `escalation-rejected` case pins the rejection), which
/// name the escalated action `command` for `bash` and `operation` for the file tools. `None`
/// when allowed.
fn refusal(outcome: ApprovalOutcome, tool: &str, mode: SandboxMode) -> Option<String> {
    let mode = mode.as_str();
    let subject = match tool {
        "bash" => "command",
        _ => "operation",
    };
    match outcome {
        ApprovalOutcome::AllowedOnce => None,
        ApprovalOutcome::Rejected => Some(format!(
            "the user rejected escalating this {subject} to \"{mode}\""
        )),
        ApprovalOutcome::Cancelled => Some(format!(
            "approval for escalating to \"{mode}\" was cancelled"
        )),
        ApprovalOutcome::Unavailable => Some(format!(
            "sandbox escalation to \"{mode}\" requires approval, but no approval channel is available"
        )),
    }
}
