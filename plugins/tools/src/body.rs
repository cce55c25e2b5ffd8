//! The parts of one call that reach other plugins: the approval service for an `ask`, and the
//! tool body itself, run under the fused cancellation signal and the tool's timeout.

use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::RArc;
use dsh_approval_seam::{APPROVAL_SERVICE, ApprovalService};
use dsh_plugin_api::Json;
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_protocol::{ApprovalOutcome, ApprovalRequest, ToolReply};
use dsh_tools_core::{AskAnswer, ToolFailure, ToolOutcome, parse_arguments};
use dsh_tools_seam::CallView;

use crate::cancel::Fused;
use crate::reply::reply_from_outcome;
use crate::service::Shared;

/// Puts an `ask` to the approval service: no service composed, no session to audit it in, or
/// an answer outside the four outcomes all refuse (fail-closed).
pub(crate) async fn ask_approval(
    shared: &Shared,
    view: &CallView,
    reason: Option<&str>,
) -> AskAnswer {
    if view.session.is_empty() {
        return AskAnswer::NoAgent;
    }
    let Ok(Some(approval)) = shared.ctx.get::<ApprovalService>(APPROVAL_SERVICE) else {
        return AskAnswer::NoService;
    };
    let request = ApprovalRequest {
        id: String::new(),
        session: view.session.to_string(),
        tool_name: view.name.to_string(),
        call_id: Some(view.call_id.to_string()).filter(|id| !id.is_empty()),
        reason: reason
            .map(str::to_owned)
            .filter(|reason| !reason.is_empty()),
    };
    let outcome = approval
        .request(Json::encode(&request))
        .await
        .decode()
        .unwrap_or(ApprovalOutcome::Unavailable);
    AskAnswer::Answered(outcome)
}

/// The innermost step of `tools/execute`: resolve the tool again, check the arguments, run the
/// body under the fused signal and the tool's timeout. Answers a reply.
pub(crate) async fn run_body(
    shared: Arc<Shared>,
    view: RArc<CallView>,
    cancel: Arc<CancelBox>,
) -> Result<Json<ToolReply>, dsh_plugin_api::PluginError> {
    let arguments = parse_arguments(&view.arguments);
    let (tool, timeout_ms) = match shared.checked_tool(&view.scope, &view.name, &arguments) {
        Ok(found) => found,
        Err(failure) => return Ok(reply_from_outcome(&ToolOutcome::failure(failure))),
    };
    let fused = Fused::new(Some(cancel));
    let mut body = std::pin::pin!(tool.execute((*view).clone(), fused.boxed()));
    let limit = async {
        match timeout_ms {
            Some(millis) => shared.ctx.sleep(Duration::from_millis(millis)).await,
            None => std::future::pending::<()>().await,
        }
    };
    let caller = fused.clone();
    let stopped = async move {
        match &caller.caller {
            Some(signal) => signal.cancelled().await,
            None => std::future::pending::<()>().await,
        }
    };
    let failure = match first_of(body.as_mut(), first_of(limit, stopped)).await {
        Either::Left(reply) => return Ok(reply),
        Either::Right(Either::Left(())) => ToolFailure::timeout(timeout_ms.unwrap_or_default()),
        Either::Right(Either::Right(())) => ToolFailure::aborted(),
    };
    // The body sees the fused signal fire and gets a bounded grace to stop cleanly (bash
    // terminates its process group with SIGTERM first); after it, it is dropped.
    fused.own.fire();
    let grace = shared.ctx.sleep(Duration::from_millis(BODY_STOP_GRACE_MS));
    let _ = first_of(body.as_mut(), grace).await;
    Ok(reply_from_outcome(&ToolOutcome::failure(failure)))
}

/// How long a cancelled or timed-out body may take to stop before it is dropped.
const BODY_STOP_GRACE_MS: u64 = 5_000;
