//! Approvals answered in the browser. The web plugin is an answerer on `approval/request`: while
//! a page is connected, an ask waits for a person's answer (`approval.respond`; the first answer
//! wins, the card of every tab then shows it decided, through the logged `approval/decided`);
//! with no page connected, or after a bounded wait, it defers to the rest of the chain, whose
//! default is `unavailable`: nothing is ever approved for want of an answer.
//!
//! An allowing answer may reach further than its call: `session` allows the same call (tool and
//! arguments) for the rest of the session without asking again; `always` also writes an allow
//! rule for it to the user's settings (see `Api::respond`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_approval_seam::APPROVAL_REQUEST;
use dsh_client_protocol::{AnswerReceipt, ApprovalAnswer};
use dsh_plugin_api::{Context, Json, Next, PluginError, lock};
use dsh_protocol::{
    ApprovalOutcome, ApprovalRequest, ApprovalScope, ApprovalVerdict, ToolCallEvent,
};
use dsh_sessions_seam::open_live;

use crate::live::Hub;
use crate::waiting::Board;

/// How long an ask waits for a person before it is `unavailable`.
const ANSWER_WAIT: Duration = Duration::from_secs(15 * 60);

/// The call an ask is about: its session, tool and arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AskedCall {
    pub(crate) session: String,
    pub(crate) tool: String,
    pub(crate) arguments: String,
}

/// An answer the page may not give.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    #[error("`{0}` is not an answer a person gives: allowed-once or rejected")]
    Outcome(String),
    #[error("this ask names no call, so it can only be answered once")]
    NoCall,
}

/// The asks waiting for an answer, by approval id (each with the call it is about, when it
/// names one), and the calls allowed for their session.
#[derive(Default)]
pub(crate) struct Pending {
    waiting: Arc<Board<Option<AskedCall>, ApprovalVerdict>>,
    allowed: Mutex<HashSet<AskedCall>>,
}

impl Pending {
    /// A person's answer; only `allowed-once` and `rejected` are theirs to give. Answers the
    /// receipt and, for an accepted `always`, the call to write a rule for.
    pub(crate) fn answer(
        &self,
        answer: ApprovalAnswer,
    ) -> Result<(AnswerReceipt, Option<AskedCall>), AnswerError> {
        if !matches!(
            answer.outcome,
            ApprovalOutcome::AllowedOnce | ApprovalOutcome::Rejected
        ) {
            return Err(AnswerError::Outcome(answer.outcome.as_str().to_owned()));
        }
        let scope = answer
            .scope
            .filter(|_| answer.outcome == ApprovalOutcome::AllowedOnce);
        if scope.is_some_and(|scope| scope != ApprovalScope::Once)
            && self
                .waiting
                .look(&answer.approval_id, Option::is_none)
                .unwrap_or(false)
        {
            return Err(AnswerError::NoCall);
        }
        // A note goes with a refusal only (a plan review's "keep planning"); trimmed, an empty
        // one is none.
        let note = answer
            .note
            .map(|note| note.trim().to_owned())
            .filter(|note| !note.is_empty() && answer.outcome == ApprovalOutcome::Rejected);
        let verdict = ApprovalVerdict {
            outcome: answer.outcome,
            scope,
            note,
        };
        let refused = AnswerReceipt {
            accepted: false,
            rule: None,
        };
        let Some((call, true)) = self.waiting.settle(&answer.approval_id, verdict) else {
            return Ok((refused, None));
        };
        if matches!(scope, Some(ApprovalScope::Session | ApprovalScope::Always))
            && let Some(call) = &call
        {
            lock(&self.allowed).insert(call.clone());
        }
        let always = (scope == Some(ApprovalScope::Always))
            .then_some(call)
            .flatten();
        Ok((
            AnswerReceipt {
                accepted: true,
                rule: None,
            },
            always,
        ))
    }
}

/// The tool call `call_id` of `session`, from its log.
fn asked_call(ctx: &Context, ask: &ApprovalRequest) -> Option<AskedCall> {
    let call_id = ask.call_id.as_deref().filter(|id| !id.is_empty())?;
    let session = open_live(ctx, &ask.session).ok()?;
    let events = session.events(0, session.event_count());
    let call = events
        .iter()
        .rev()
        .filter_map(|record| record.decode::<ToolCallEvent>()?.ok())
        .find(|call| call.call_id == call_id)?;
    Some(AskedCall {
        session: ask.session.clone(),
        tool: call.name,
        arguments: call.arguments,
    })
}

/// Listens on `approval/request` as the browser's answerer.
pub(crate) fn answer_asks(
    ctx: &Context,
    hub: Arc<Hub>,
    pending: Arc<Pending>,
) -> Result<(), PluginError> {
    let sleeper = ctx.clone();
    ctx.on_waterfall(
        &APPROVAL_REQUEST,
        move |next: Next<Json<ApprovalRequest>, Json<ApprovalVerdict>>| {
            let (hub, pending, ctx) = (hub.clone(), pending.clone(), sleeper.clone());
            async move {
                let Ok(ask) = next.payload().decode() else {
                    return next.run().await;
                };
                let call = asked_call(&ctx, &ask);
                if let Some(call) = &call
                    && lock(&pending.allowed).contains(call)
                {
                    return Ok(Json::encode(&ApprovalVerdict {
                        outcome: ApprovalOutcome::AllowedOnce,
                        scope: Some(ApprovalScope::Session),
                        note: None,
                    }));
                }
                if hub.answerer_count() == 0 || ask.id.is_empty() {
                    return next.run().await;
                }
                // The ask is already logged (approval/asked): every page following the session
                // shows its card from the log; this only waits for the first answer.
                let waiting = pending.waiting.clone();
                match waiting
                    .wait(&ctx, ask.id.clone(), call, ANSWER_WAIT, hub.no_answerers())
                    .await
                {
                    Some(verdict) => Ok(Json::encode(&verdict)),
                    None => next.run().await,
                }
            }
        },
    )
}

/// The allow rule that covers `call` exactly: `bash(<command>)`, `write(<path>)`, or the
/// tool's name for a tool whose arguments a rule cannot name.
pub(crate) fn rule_for(call: &AskedCall) -> String {
    let arguments: serde_json::Value =
        serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
    let field = match call.tool.as_str() {
        "bash" => Some("command"),
        "read" | "write" | "edit" => Some("file_path"),
        "glob" | "grep" => Some("path"),
        _ => None,
    };
    match field.and_then(|field| arguments[field].as_str()) {
        Some(subject) => format!("{}({subject})", call.tool),
        None => call.tool.clone(),
    }
}
