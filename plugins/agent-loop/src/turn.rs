//! One turn, as ARCHITECTURE §7 draws it: `turn/start`; the turn's input claimed (its own
//! messages and its inbox's); steps while something is owed (see the `step` module); on a
//! completed step, input that arrived meanwhile or an `agent/turn-stopping` continuation
//! keeps it going; `turn/end` always, whatever happened before it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dsh_agents_seam::TurnInboxBox;
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::lock;
use dsh_protocol::{
    AbortCause, MessageSource, PreStepDecision, PromptDecision, PromptSubmit, StepEndEvent,
    StepProposal, StepStartEvent, TokenUsage, TurnEndEvent, TurnEndReason, TurnOutcome,
    TurnStartEvent, TurnStopping,
};
use dsh_protocol::{Message, Role};
use dsh_sessions_seam::{SessionBox, SessionError};

use crate::Deps;
use crate::error::LoopError;
use crate::log::Log;
use crate::prompt::Memory;

/// What a turn's requests go to, and where its tools run.
pub(crate) struct Route {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) cwd: String,
    pub(crate) scope: Vec<String>,
}

/// The running turn's cancellation: the flag and the cause it was fired with.
pub(crate) struct Cancel {
    pub(crate) flag: Arc<CancelFlag>,
    pub(crate) cause: Mutex<AbortCause>,
}

impl Cancel {
    pub(crate) fn new() -> Self {
        Self {
            flag: CancelFlag::new(),
            cause: Mutex::new(AbortCause::User),
        }
    }

    /// Fires with `cause`; the first cause wins.
    pub(crate) fn fire(&self, cause: AbortCause) {
        if !self.flag.is_fired() {
            *lock(&self.cause) = cause;
        }
        self.flag.fire();
    }

    pub(crate) fn aborted(&self) -> TurnEndReason {
        TurnEndReason::Aborted {
            reason: lock(&self.cause).clone(),
        }
    }
}

/// What the turn reports besides its end.
#[derive(Default)]
pub(crate) struct Tally {
    /// The step whose `step/start` is logged and `step/end` not yet (0: none); shared with
    /// the guard that closes the log when the turn's future is dropped mid-way.
    pub(crate) open_step: Arc<AtomicU64>,
    /// The last step that closed (0: none), for `agent/error`.
    pub(crate) last_step: u64,
    pub(crate) output: String,
    pub(crate) usage: TokenUsage,
}

/// Where a turn gets its input: its own messages, and the inbox of its session.
pub(crate) struct Input {
    pub(crate) messages: Vec<Message>,
    pub(crate) inbox: Option<TurnInboxBox>,
}

impl Input {
    /// Claims the inbox: every next-step message, and one next-turn message at a turn
    /// boundary.
    fn claim(&self, turn: u64, turn_boundary: bool) -> Result<Vec<Message>, LoopError> {
        let Some(inbox) = &self.inbox else {
            return Ok(Vec::new());
        };
        decode_claim(inbox.claim(turn, turn_boundary))
    }

    /// After a step that would end the turn: what was steered into it (an injected message
    /// waits for the agent's next turn instead).
    fn claim_steered(&self, turn: u64) -> Result<Vec<Message>, LoopError> {
        let Some(inbox) = &self.inbox else {
            return Ok(Vec::new());
        };
        decode_claim(inbox.claim_steered(turn))
    }
}

fn decode_claim(
    claimed: abi_stable::std_types::RResult<
        dsh_plugin_api::Json<Vec<Message>>,
        dsh_agents_seam::AgentsError,
    >,
) -> Result<Vec<Message>, LoopError> {
    claimed
        .into_result()
        .map_err(|error| LoopError::Inbox(error.to_string()))?
        .decode()
        .map_err(|error| LoopError::Inbox(error.to_string()))
}

const NO_MODEL: &str = "no model is configured: pass --model PROVIDER/MODEL, configure a model row, or export DEEPSEEK_API_KEY for DeepSeek";

/// Runs turn `turn` of `session` after its `turn/start`: the steps, until the turn ends.
pub(crate) async fn steps(
    deps: &Deps,
    session: &SessionBox,
    route: &Route,
    turn: u64,
    input: &mut Input,
    mut memory: Memory,
    (cancel, tally): (&Cancel, &mut Tally),
) -> Result<TurnEndReason, LoopError> {
    let log = Log { session };
    if route.provider.is_empty() {
        return Ok(TurnEndReason::error("NO_MODEL", NO_MODEL));
    }
    let id = session.id().into_string();
    let mut pending = input.claim(turn, true)?;
    for (index, mut message) in std::mem::take(&mut input.messages).into_iter().enumerate() {
        if message.id.is_empty() {
            message.id = match index {
                0 => format!("{id}-t{turn}-input"),
                _ => format!("{id}-t{turn}-input{index}"),
            };
        }
        message.role = Role::User;
        pending.push(message);
    }
    if pending.is_empty() {
        // Woken for a message that was gone before the claim: the turn has nothing to ask, so
        // it closes without a step (and without a pre-step for a step that never opens).
        return Ok(TurnEndReason::Completed);
    }
    let submit = PromptSubmit {
        session: id.clone(),
        turn,
        cwd: route.cwd.clone(),
        messages: pending.clone(),
    };
    match deps.hooks.prompt_submit(submit).await? {
        PromptDecision::Reject { reason } => {
            let reason = reason.unwrap_or_else(|| "rejected by agent/prompt-submit".to_owned());
            return Ok(TurnEndReason::Blocked {
                reason: Some(reason),
            });
        }
        PromptDecision::Accept { contexts } => {
            for (index, mut context) in contexts.into_iter().enumerate() {
                if context.id.is_empty() {
                    context.id = format!("{id}-t{turn}-prompt-ctx{index}");
                }
                context.role = Role::User;
                if matches!(&context.source, MessageSource::Other(value) if value.is_null()) {
                    context.source = MessageSource::plugin();
                }
                pending.push(context);
            }
        }
    }
    for step in 1..=deps.max_steps {
        if cancel.flag.is_fired() {
            return Ok(cancel.aborted());
        }
        let proposal = StepProposal {
            session: id.clone(),
            turn,
            step,
        };
        if let PreStepDecision::Reject { reason } = deps.hooks.pre_step(proposal).await? {
            let reason = reason.unwrap_or_else(|| "rejected by agent/pre-step".to_owned());
            return Ok(TurnEndReason::Blocked {
                reason: Some(reason),
            });
        }
        if step > 1 {
            // Steering: what arrived for the next step enters now.
            pending.extend(input.claim(turn, false)?);
        }
        log.append(&StepStartEvent { turn, step })?;
        tally.open_step.store(step, Ordering::Relaxed);
        let ran = crate::step::run(
            deps,
            session,
            route,
            (turn, step),
            cancel,
            tally,
            &mut memory,
            std::mem::take(&mut pending),
        )
        .await;
        // `step/end` is written whatever happened inside the step, so the log never keeps a
        // step open under a closed turn.
        let closed = log.append(&StepEndEvent { turn, step });
        tally.last_step = step;
        tally.open_step.store(0, Ordering::Relaxed);
        let end = ran?;
        closed?;
        match end {
            // Input steered in while this step ran owes the model another step, even though
            // nothing else does (an injected one waits for the next turn).
            Some(TurnEndReason::Completed) => {
                let mut more = input.claim_steered(turn)?;
                if more.is_empty() {
                    more.extend(keep_going(deps, session, turn).await?);
                }
                if more.is_empty() {
                    // A turn-stopping listener may steer instead of answering (the reference's
                    // hooks do): what it queued keeps the turn going, claimed as steering is.
                    more = input.claim_steered(turn)?;
                }
                if more.is_empty() {
                    return Ok(TurnEndReason::Completed);
                }
                pending = more;
            }
            Some(end) => return Ok(end),
            None => {}
        }
    }
    Ok(TurnEndReason::error(
        "MAX_STEPS",
        format!(
            "the turn reached its limit of {} steps (agent-loop `maxSteps`)",
            deps.max_steps
        ),
    ))
}

/// Asks `agent/turn-stopping` whether a completed turn goes on: a listener's message becomes
/// the next step's input.
async fn keep_going(
    deps: &Deps,
    session: &SessionBox,
    turn: u64,
) -> Result<Option<Message>, LoopError> {
    let stopping = TurnStopping {
        session: session.id().into_string(),
        turn,
        reason: TurnEndReason::Completed,
    };
    let Some(continuation) = deps.hooks.turn_stopping(stopping).await? else {
        return Ok(None);
    };
    let mut message = continuation.message;
    if message.id.is_empty() {
        message.id = format!("{}-t{turn}-continue", session.id());
    }
    message.role = Role::User;
    if matches!(&message.source, MessageSource::Other(value) if value.is_null()) {
        message.source = MessageSource::plugin();
    }
    Ok(Some(message))
}

/// Opens turn `turn` in the log; the guard closes it if the turn's future is dropped first.
pub(crate) fn open<'s>(log: &Log<'s>, turn: u64, tally: &Tally) -> Result<OpenTurn<'s>, LoopError> {
    log.append(&TurnStartEvent { turn })?;
    Ok(OpenTurn {
        log: Log {
            session: log.session,
        },
        turn,
        open_step: tally.open_step.clone(),
        closed: false,
    })
}

/// Closes the log of a turn whose future is dropped before it ended (its owner unloaded
/// mid-turn): the open step gets its `step/end` and the turn `turn/end` `aborted`
/// (`disposed`), so the log does not keep an open turn the loop could have closed. What the
/// log refuses here (a call still unanswered) is left to the crash-repair closers.
pub(crate) struct OpenTurn<'s> {
    log: Log<'s>,
    turn: u64,
    open_step: Arc<AtomicU64>,
    closed: bool,
}

impl OpenTurn<'_> {
    /// The durability checkpoint before the turn's end: `turn/end` is shown to every client
    /// the moment it is appended, so the turn's events must be on disk before it says how the
    /// turn went. A store that cannot write them ends the turn with [`STORE_WRITE_FAILED`]
    /// instead of `reason`: a client is never told `completed` about a turn that is in memory
    /// only. (A turn dropped while this runs is still closed by `Drop`.)
    pub(crate) async fn checkpoint(&self, reason: TurnEndReason) -> TurnEndReason {
        match self.log.session.flush().await.into_result() {
            Ok(()) => reason,
            Err(error) => unstored(&reason, &error),
        }
    }

    /// Closes the turn with `reason` (after [`Self::checkpoint`]); answers the reason the turn
    /// ends with (a refused close is an error of its own). The flush after `turn/end` makes
    /// the end itself durable before the outcome is answered: with the checkpoint, two
    /// flushes a turn, none more a step.
    pub(crate) async fn close(mut self, reason: TurnEndReason) -> TurnEndReason {
        self.closed = true;
        let closed = self.log.append(&TurnEndEvent {
            turn: self.turn,
            reason: reason.clone(),
        });
        let flushed = self.log.session.flush().await.into_result();
        match (closed, flushed) {
            (Ok(_), Ok(())) => reason,
            (Err(error), _) => error.reason(),
            // Already the storage failure, said once.
            (_, Err(_)) if is_unstored(&reason) => reason,
            // The events were stored but `turn/end` was not (the disk filled in between):
            // shown with `reason`, so only the outcome can still say it.
            (_, Err(error)) => unstored(&reason, &error),
        }
    }
}

/// The code of a turn whose events the session store could not write.
pub(crate) const STORE_WRITE_FAILED: &str = "STORE_WRITE_FAILED";

/// The end of a turn whose log could not be made durable: the store's failure (naming the
/// file and the error), and the end the turn would have had.
fn unstored(reason: &TurnEndReason, error: &SessionError) -> TurnEndReason {
    let would = match reason.failure() {
        Some(failure) => format!("error {}: {}", failure.code, failure.message),
        None => reason.kind().to_owned(),
    };
    TurnEndReason::error(
        STORE_WRITE_FAILED,
        format!(
            "the session store could not write the turn's events, so they are not stored: \
             {error} (the turn would have ended {would})"
        ),
    )
}

fn is_unstored(reason: &TurnEndReason) -> bool {
    reason
        .failure()
        .is_some_and(|failure| failure.code.as_str() == STORE_WRITE_FAILED)
}

impl Drop for OpenTurn<'_> {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        let turn = self.turn;
        let step = self.open_step.load(Ordering::Relaxed);
        if step > 0 {
            let _ = self.log.append(&StepEndEvent { turn, step });
        }
        let _ = self.log.append(&TurnEndEvent {
            turn,
            reason: TurnEndReason::Aborted {
                reason: AbortCause::Disposed,
            },
        });
    }
}

/// The outcome of a turn that ended with `reason`.
pub(crate) fn outcome(
    session: &str,
    turn: u64,
    reason: TurnEndReason,
    tally: Tally,
) -> TurnOutcome {
    TurnOutcome {
        session_id: session.to_owned(),
        turn,
        reason,
        output: tally.output,
        usage: tally.usage,
    }
}
