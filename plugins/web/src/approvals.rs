//! Approvals answered in the browser. The web plugin is an answerer on `approval/request`: while
//! a page is connected, an ask waits for a person's answer (`approval.respond`; the first answer
//! wins, the card of every tab then shows it decided, through the logged `approval/decided`);
//! with no page connected, or after a bounded wait, it defers to the rest of the chain, whose
//! default is `unavailable`: nothing is ever approved for want of an answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_approval_seam::APPROVAL_REQUEST;
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::{Context, Json, Next, PluginError, lock};
use dsh_protocol::{AnswerReceipt, ApprovalAnswer, ApprovalOutcome, ApprovalRequest};
use tokio::sync::oneshot;

use crate::live::Hub;

/// How long an ask waits for a person before it is `unavailable`.
const ANSWER_WAIT: Duration = Duration::from_secs(15 * 60);

/// The asks waiting for an answer, by approval id.
#[derive(Default)]
pub(crate) struct Pending(Mutex<HashMap<String, oneshot::Sender<ApprovalOutcome>>>);

impl Pending {
    /// A person's answer; only `allowed-once` and `rejected` are theirs to give.
    pub(crate) fn answer(&self, answer: ApprovalAnswer) -> Result<AnswerReceipt, String> {
        if !matches!(
            answer.outcome,
            ApprovalOutcome::AllowedOnce | ApprovalOutcome::Rejected
        ) {
            return Err(format!(
                "`{}` is not an answer a person gives: allowed-once or rejected",
                answer.outcome.as_str()
            ));
        }
        let waiting = lock(&self.0).remove(&answer.approval_id);
        let accepted = waiting.is_some_and(|sender| sender.send(answer.outcome).is_ok());
        Ok(AnswerReceipt { accepted })
    }
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
        move |next: Next<Json<ApprovalRequest>, Json<ApprovalOutcome>>| {
            let (hub, pending, sleeper) = (hub.clone(), pending.clone(), sleeper.clone());
            async move {
                let Ok(ask) = next.payload().decode() else {
                    return next.run().await;
                };
                if hub.connection_count() == 0 || ask.id.is_empty() {
                    return next.run().await;
                }
                let (sender, receiver) = oneshot::channel();
                lock(&pending.0).insert(ask.id.clone(), sender);
                // The ask is already logged (approval/asked): every page following the session
                // shows its card from the log; this only waits for the first answer.
                let answered = first_of(receiver, sleeper.sleep(ANSWER_WAIT)).await;
                lock(&pending.0).remove(&ask.id);
                match answered {
                    Either::Left(Ok(outcome)) => Ok(Json::encode(&outcome)),
                    Either::Left(Err(_)) | Either::Right(()) => next.run().await,
                }
            }
        },
    )
}
