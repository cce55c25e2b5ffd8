//! Approvals answered by the client: this agent is an answerer on `approval/request` for the
//! calls of its own sessions, put to the client as `session/request_permission`. Automation
//! mode offers the reference's one-shot choices (allow once, reject); editor mode adds allow
//! always and reject always, which hold for the rest of the session for the same tool on the
//! same subject (the command, the file, the search path). The rest of the chain runs beside
//! the question: a client attached to the host's socket that answers asks may answer first,
//! and the editor's question is then withdrawn (`first_answer`). A cancelled question is
//! `cancelled`, and so is one still out when its session's prompt is cancelled; a client that answers with an error or something unreadable, or a connection
//! already closing, leaves the ask to the rest of the chain, whose default is `unavailable`:
//! nothing is approved for want of an answer. A plan review (`exit_plan_mode`) is put with
//! the plan and the review's own two choices (`plan_review`).

use std::sync::Arc;

use dsh_approval_seam::APPROVAL_REQUEST;
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::{Json, Next, PluginError};
use dsh_protocol::{ApprovalOutcome, ApprovalRequest, ApprovalScope, ApprovalVerdict};

use crate::schema::{PermissionOption, PermissionOutcome, PermissionRequest, PermissionResponse};
use crate::server::{AcpSession, Mode, Server};
use crate::updates::ToolCallUpdate;
use crate::wire::CallError;

const ALLOW_ONCE: PermissionOption = PermissionOption {
    option_id: "allow-once",
    name: "Allow once",
    kind: "allow_once",
};
const ALLOW_ALWAYS: PermissionOption = PermissionOption {
    option_id: "allow-always",
    name: "Allow always",
    kind: "allow_always",
};
const REJECT_ONCE: PermissionOption = PermissionOption {
    option_id: "reject-once",
    name: "Reject",
    kind: "reject_once",
};
const REJECT_ALWAYS: PermissionOption = PermissionOption {
    option_id: "reject-always",
    name: "Reject always",
    kind: "reject_always",
};

/// Registers the answerer; it goes with the fiber. It goes first on the chain, so the rest of
/// it (the host's other clients, then the default) runs beside the editor's question rather
/// than before it.
pub(crate) fn listen(server: &Arc<Server>) -> Result<(), PluginError> {
    let answering = server.clone();
    server.ctx.prepend().on_waterfall(
        &APPROVAL_REQUEST,
        move |next: Next<Json<ApprovalRequest>, Json<ApprovalVerdict>>| {
            let server = answering.clone();
            async move {
                let Ok(ask) = next.payload().decode() else {
                    return next.run().await;
                };
                let (Some(session), Some(call_id)) = (
                    server.session(&ask.session),
                    ask.call_id.clone().filter(|id| !id.is_empty()),
                ) else {
                    return next.run().await;
                };
                if server.is_closed() {
                    return next.run().await;
                }
                first_answer(&server, &session, &ask, call_id, next).await
            }
        },
    )
}

type Verdict = Result<Json<ApprovalVerdict>, PluginError>;

/// Whether the rest of the chain answered: anything but `unavailable`, which is what it says
/// when nobody there answers.
fn answered(verdict: &Verdict) -> bool {
    verdict
        .as_ref()
        .ok()
        .and_then(|verdict| verdict.decode().ok())
        .is_some_and(|verdict| verdict.outcome != ApprovalOutcome::Unavailable)
}

/// The output of `future` if it is ready at its first poll.
async fn poll_once<F: Future + Unpin>(mut future: F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

/// The first answer to `ask`, from the editor or from a client attached to the host's socket
/// (the rest of the chain, run beside the editor's question). What the rest settles at once (a
/// call a client allowed for the session, or nobody there who answers) is known before the
/// editor is asked; an answer from there withdraws the editor's question; an editor that gives
/// no usable answer leaves the ask to the rest.
async fn first_answer(
    server: &Arc<Server>,
    session: &Arc<AcpSession>,
    ask: &ApprovalRequest,
    call_id: String,
    next: Next<Json<ApprovalRequest>, Json<ApprovalVerdict>>,
) -> Verdict {
    let mut others = std::pin::pin!(next.run());
    let mut editor = std::pin::pin!(ask_client(server, session, ask, call_id));
    let others_said = match poll_once(others.as_mut()).await {
        Some(verdict) if answered(&verdict) => return verdict,
        Some(verdict) => verdict,
        None => match first_of(editor.as_mut(), others.as_mut()).await {
            Either::Left(Some(verdict)) => return Ok(Json::encode(&verdict)),
            Either::Left(None) => return others.await,
            // Returning drops the editor's question, which withdraws it.
            Either::Right(verdict) if answered(&verdict) => return verdict,
            Either::Right(verdict) => verdict,
        },
    };
    match editor.await {
        Some(verdict) => Ok(Json::encode(&verdict)),
        None => others_said,
    }
}

/// What the client answered, or `None` when it gave no usable answer.
async fn ask_client(
    server: &Arc<Server>,
    session: &Arc<AcpSession>,
    ask: &ApprovalRequest,
    call_id: String,
) -> Option<ApprovalVerdict> {
    if ask.tool_name == crate::plan_review::TOOL {
        return ask_review(server, session, ask, call_id).await;
    }
    let editor = server.mode == Mode::Editor;
    let subject = editor.then(|| session.editor.subject_of(&call_id, &ask.tool_name));
    if let Some(subject) = &subject
        && let Some(outcome) = session.editor.ruled(subject)
    {
        return Some(ApprovalVerdict {
            outcome,
            scope: (outcome == ApprovalOutcome::AllowedOnce).then_some(ApprovalScope::Session),
            note: None,
        });
    }
    let (tool_call, options) = match editor {
        true => (
            session.editor.call_view(&call_id),
            vec![ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS],
        ),
        false => (
            ToolCallUpdate {
                tool_call_id: call_id,
                ..ToolCallUpdate::default()
            },
            vec![ALLOW_ONCE, REJECT_ONCE],
        ),
    };
    let request = PermissionRequest {
        session_id: session.id.clone(),
        tool_call,
        options,
    };
    let asked = server
        .wire
        .request(
            &session.id,
            crate::schema::methods::SESSION_REQUEST_PERMISSION,
            request,
        )
        .await;
    let answer: PermissionResponse = match asked {
        Ok(answer) => answer,
        // The prompt was cancelled while the question was out.
        Err(CallError::Withdrawn) => return Some(ApprovalVerdict::of(ApprovalOutcome::Cancelled)),
        Err(_) => return None,
    };
    let chosen = match answer.outcome {
        PermissionOutcome::Cancelled => {
            return Some(ApprovalVerdict::of(ApprovalOutcome::Cancelled));
        }
        PermissionOutcome::Selected { option_id } => option_id,
    };
    let (outcome, always) = match chosen.as_str() {
        "allow-once" => (ApprovalOutcome::AllowedOnce, false),
        "allow-always" if editor => (ApprovalOutcome::AllowedOnce, true),
        "reject-always" if editor => (ApprovalOutcome::Rejected, true),
        // Anything else (reject-once, an option never offered) rejects.
        _ => (ApprovalOutcome::Rejected, false),
    };
    if always && let Some(subject) = subject {
        session.editor.rule(subject, outcome);
    }
    Some(ApprovalVerdict {
        outcome,
        scope: (always && outcome == ApprovalOutcome::AllowedOnce)
            .then_some(ApprovalScope::Session),
        note: None,
    })
}

/// A plan review (`plan_review`): the plan and its two choices, in either mode.
async fn ask_review(
    server: &Arc<Server>,
    session: &Arc<AcpSession>,
    ask: &ApprovalRequest,
    call_id: String,
) -> Option<ApprovalVerdict> {
    let request = PermissionRequest {
        session_id: session.id.clone(),
        tool_call: crate::plan_review::call_view(ask, call_id),
        options: Vec::from(crate::plan_review::OPTIONS),
    };
    let asked: Result<PermissionResponse, CallError> = server
        .wire
        .request(
            &session.id,
            crate::schema::methods::SESSION_REQUEST_PERMISSION,
            request,
        )
        .await;
    match asked {
        Ok(answer) => Some(crate::plan_review::verdict(answer.outcome)),
        Err(CallError::Withdrawn) => Some(ApprovalVerdict::of(ApprovalOutcome::Cancelled)),
        Err(_) => None,
    }
}
