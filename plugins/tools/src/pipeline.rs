//! One step's calls through the guarded pipeline, as `dsh-tools-core` lays it out: log
//! `tool/call`, freeze the arguments, `tools/pre-execute`, the ask answer, the guards; on allow
//! `tools/execute` around the body (resolve again, check arguments, run with the fused
//! cancellation signal and the tool's timeout); `tools/post-execute`; the content finalizer
//! exactly once; `tool/result` citing the call's seq; `tools/result`. Every failure anywhere
//! becomes an error result: this never fails.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RArc, RString};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::{Json, lock};
use dsh_protocol::{
    AdditionalContext, CallReport, ContentBlock, Message, PostDecision, PreDecision, StepReport,
    ToolCallEvent,
};
use dsh_sessions_seam::{
    NewEventRecord, SESSIONS_SERVICE, SessionBox, SessionExt, SessionsService,
};
use dsh_tools_core::{
    CallStages, Concurrency, Gate, OutcomeSeal, Prepared, ToolFailure, ToolOutcome,
    apply_post_decision, parse_arguments, result_event, run_staged,
};
use dsh_tools_seam::{CallView, PostView, ResultView, StepCalls};
use serde_json::Value;

use crate::body::{ask_approval, run_body};
use crate::code_dispatch;
use crate::reply::{outcome_from_reply, outcome_summary};
use crate::service::{Shared, scope_of};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// One call on its way through.
struct Call {
    view: CallView,
    arguments: Value,
    /// Seq of its `tool/call` event (0 when no session logs it).
    seq: u64,
}

/// A call that passed policy.
struct Ticket {
    call: Call,
    seal: OutcomeSeal,
}

/// A call with an outcome, waiting to commit in model order.
struct Settled {
    call: Call,
    seal: OutcomeSeal,
    outcome: ToolOutcome,
    /// Whether `tools/post-execute` still gets a say (not for failures of the pipeline itself).
    post: bool,
}

/// What run_step reports per call.
struct Committed {
    call_id: String,
    is_error: bool,
    /// For a Code Mode sub-call: what the program gets back.
    content: Vec<ContentBlock>,
    value: Option<Value>,
    seq: u64,
    /// Whether its result reached the session log (always true outside a session).
    logged: bool,
    concludes_turn: bool,
}

struct Stages {
    shared: Arc<Shared>,
    /// The `run_code` call these calls run inside (`None`: a model step).
    parent: Option<Arc<str>>,
    session: Option<Arc<SessionBox>>,
    cancel: Arc<CancelBox>,
    contexts: Arc<Mutex<Vec<Message>>>,
}

/// Runs the calls of `step` (Code Mode sub-calls of `parent` when given); answers what they
/// came to.
pub(crate) async fn run_step(
    shared: Arc<Shared>,
    step: StepCalls,
    cancel: CancelBox,
    parent: Option<Arc<str>>,
) -> StepReport {
    let session = open_session(&shared, &step.session).await;
    let contexts = Arc::new(Mutex::new(Vec::new()));
    let calls: Vec<Call> = step
        .calls
        .iter()
        .map(|call| Call {
            view: CallView {
                session: step.session.clone(),
                scope: step.scope.clone(),
                turn: step.turn,
                step: step.step,
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                cwd: step.cwd.clone(),
            },
            arguments: parse_arguments(&call.arguments),
            seq: 0,
        })
        .collect();
    let limit = shared.max_parallel;
    let stages = Stages {
        shared,
        parent,
        session,
        cancel: Arc::new(cancel),
        contexts: contexts.clone(),
    };
    let committed = run_staged(calls, limit, stages).await;
    let additional: Vec<Message> = std::mem::take(&mut *lock(&contexts));
    StepReport {
        results: committed
            .iter()
            .map(|entry| CallReport {
                call_id: entry.call_id.clone(),
                is_error: entry.is_error,
                seq: entry.seq,
                logged: entry.logged,
                content: entry.content.clone(),
                value: entry.value.clone(),
            })
            .collect(),
        additional_contexts: additional
            .into_iter()
            .map(|message| AdditionalContext {
                content: message.content,
                source: Some(message.source),
            })
            .collect(),
        concludes_turn: committed.iter().any(|entry| entry.concludes_turn),
    }
}

async fn open_session(shared: &Shared, id: &RString) -> Option<Arc<SessionBox>> {
    if id.is_empty() {
        return None;
    }
    let sessions = match shared.ctx.get::<SessionsService>(SESSIONS_SERVICE) {
        Ok(Some(sessions)) => sessions,
        Ok(None) => {
            shared.ctx.log(
                dsh_plugin_api::LogLevel::Warn,
                &format!("tools: no `sessions` service: the calls of session `{id}` go unlogged"),
            );
            return None;
        }
        Err(error) => {
            shared
                .ctx
                .log(dsh_plugin_api::LogLevel::Warn, &format!("tools: {error}"));
            return None;
        }
    };
    match sessions.open(id.clone()).await.into_result() {
        Ok(session) => Some(Arc::new(session)),
        Err(error) => {
            shared.ctx.log(
                dsh_plugin_api::LogLevel::Warn,
                &format!("tools: session `{id}` cannot be opened: {error}"),
            );
            None
        }
    }
}

/// Appends one event; answers its seq (0 when unlogged or refused, which is reported).
fn append(shared: &Shared, session: Option<&Arc<SessionBox>>, record: NewEventRecord) -> u64 {
    let Some(session) = session else {
        return 0;
    };
    let kind = record.kind.clone();
    match session.append_one(record) {
        Ok(seq) => seq,
        Err(error) => {
            shared.ctx.log(
                dsh_plugin_api::LogLevel::Error,
                &format!(
                    "tools: `{kind}` could not be logged in session `{}`: {error}",
                    session.id()
                ),
            );
            0
        }
    }
}

fn pipeline_failure(message: String) -> ToolOutcome {
    ToolOutcome::failure(ToolFailure::pipeline(message))
}

/// The seal of the tool the call resolves now (its finalizer runs once, whatever happens).
fn seal_for(shared: &Shared, view: &CallView) -> OutcomeSeal {
    match shared.tool(&view.scope, &view.name) {
        Some(tool) => OutcomeSeal::new(Some(Box::new(move |outcome: &ToolOutcome| {
            let finalized = tool.finalize_content(outcome_summary(outcome));
            finalized
                .into_option()
                .and_then(|content| content.decode().ok())
        }))),
        None => OutcomeSeal::without_finalizer(),
    }
}

impl CallStages<Call> for Stages {
    type Ticket = Ticket;
    type Settled = Settled;
    type Output = Committed;
    type Prepare = BoxFuture<Prepared<Ticket, Settled>>;
    type Dispatch = BoxFuture<Settled>;
    type Commit = BoxFuture<Committed>;

    fn classify(&mut self, _index: usize, call: &Call) -> Concurrency {
        // The spec is cloned under the lock and asked outside it: a per-call classifier is the
        // tool plugin's code, which may call back into this service.
        let spec = {
            let registry = lock(&self.shared.registry);
            registry
                .get(&scope_of(&call.view.scope), &call.view.name)
                .map(|tool| tool.spec().clone())
        };
        spec.map_or(Concurrency::Exclusive, |spec| {
            spec.concurrency_for(&call.arguments)
        })
    }

    fn prepare(&mut self, _index: usize, mut call: Call) -> Self::Prepare {
        let shared = self.shared.clone();
        let session = self.session.clone();
        let cancel = self.cancel.clone();
        let parent = self.parent.clone();
        Box::pin(async move {
            let record = match &parent {
                Some(parent) => code_dispatch::start_record(parent, &call.view, &call.arguments),
                None => NewEventRecord::of(&ToolCallEvent {
                    turn: call.view.turn,
                    step: call.view.step,
                    call_id: call.view.call_id.to_string(),
                    name: call.view.name.to_string(),
                    arguments: call.view.arguments.to_string(),
                }),
            };
            call.seq = append(&shared, session.as_ref(), record);
            let seal = seal_for(&shared, &call.view);
            if session.is_some() && call.seq == 0 {
                // No durable record of the call: running it would be a side effect the log
                // could never account for.
                let message = format!(
                    "`{}` was not run: its tool/call could not be logged",
                    call.view.name
                );
                return Prepared::Settled(Settled {
                    call,
                    seal,
                    outcome: pipeline_failure(message),
                    post: false,
                });
            }
            if cancel.is_cancelled() {
                let outcome = ToolOutcome::failure(ToolFailure::aborted_before_dispatch());
                return Prepared::Settled(Settled {
                    call,
                    seal,
                    outcome,
                    post: false,
                });
            }
            // The first gate: a call of a tool this scope cannot see (`UNKNOWN_TOOL`) or whose
            // arguments break its schema (`INVALID_ARGS`) goes no further, so hooks, approval
            // and guards only ever see calls that could run.
            if let Err(failure) =
                shared.checked_tool(&call.view.scope, &call.view.name, &call.arguments)
            {
                return Prepared::Settled(Settled {
                    call,
                    seal,
                    outcome: ToolOutcome::failure(failure),
                    post: true,
                });
            }
            let decided = shared
                .pre_execute
                .waterfall(RArc::new(call.view.clone()), |_| async {
                    Ok(Json::encode(&PreDecision::Allow))
                })
                .await;
            let decision = match decided {
                Ok(decision) => decision.decode().map_err(|error| {
                    format!(
                        "tools/pre-execute answered an invalid decision `{decision:?}`: {error}"
                    )
                }),
                Err(error) => Err(format!("tools/pre-execute failed: {error}")),
            };
            let decision = match decision {
                Ok(decision) => decision,
                Err(message) => {
                    return Prepared::Settled(Settled {
                        call,
                        seal,
                        outcome: pipeline_failure(message),
                        post: false,
                    });
                }
            };
            let gate = match &decision {
                PreDecision::Ask { reason } => {
                    let answer = ask_approval(&shared, &call.view, reason.as_deref()).await;
                    Gate::resolve_ask(&call.view.name, reason.as_deref(), answer)
                }
                other => Gate::from_pre_decision(other).unwrap_or(Gate::Allow),
            };
            match gate.then_guards(|| shared.guard_denial(&call.view)) {
                Gate::Allow => Prepared::Dispatch(Ticket { call, seal }),
                Gate::Deny(failure) => Prepared::Settled(Settled {
                    call,
                    seal,
                    outcome: ToolOutcome::failure(failure),
                    post: true,
                }),
            }
        })
    }

    fn dispatch(&mut self, _index: usize, ticket: Ticket) -> Self::Dispatch {
        let shared = self.shared.clone();
        let cancel = self.cancel.clone();
        Box::pin(async move {
            let Ticket { call, seal } = ticket;
            // Cancelled while its gates ran (an approval can take a while): it never starts.
            if cancel.is_cancelled() {
                return Settled {
                    call,
                    seal,
                    outcome: ToolOutcome::failure(ToolFailure::aborted_before_dispatch()),
                    post: false,
                };
            }
            // The durability checkpoint before the body (its `tool/call` on disk) is the
            // `session-checkpoints` row's `tools/execute` listener.
            let body_shared = shared.clone();
            let executed = shared
                .execute
                .waterfall(RArc::new(call.view.clone()), move |view: RArc<CallView>| {
                    run_body(body_shared, view, cancel)
                })
                .await;
            let outcome = match executed {
                Ok(reply) => outcome_from_reply(&call.view.name, &reply),
                Err(error) => pipeline_failure(format!("tools/execute failed: {error}")),
            };
            Settled {
                call,
                seal,
                outcome,
                post: true,
            }
        })
    }

    fn commit(&mut self, _index: usize, settled: Settled) -> Self::Commit {
        let shared = self.shared.clone();
        let session = self.session.clone();
        let contexts = self.contexts.clone();
        let parent = self.parent.clone();
        Box::pin(async move {
            let Settled {
                call,
                seal,
                mut outcome,
                post,
            } = settled;
            if post {
                outcome = post_execute(&shared, &call, outcome).await;
            }
            let finished = seal.finish(outcome);
            let message_id = format!("tool-result-{}-{}", call.view.call_id, call.seq);
            let data = result_event(
                call.view.turn,
                call.view.step,
                message_id,
                &call.view.call_id,
                &finished,
            );
            let cites: &[u64] = if call.seq > 0 { &[call.seq] } else { &[] };
            let record = NewEventRecord::of(&data).citing(cites);
            let result = Json::from_text(record.data.clone());
            // A sub-call's outcome goes to the program, and into the log as
            // `tool/code-dispatch`; the `tool/result` record is only what `tools/result`
            // listeners (instruction discovery, hooks) read.
            let (seq, content, value) = match &parent {
                Some(parent) => {
                    let record = code_dispatch::settled_record(
                        &shared,
                        parent,
                        &call.view,
                        &call.arguments,
                        &finished,
                    )
                    .await;
                    (
                        append(&shared, session.as_ref(), record),
                        finished.content().to_vec(),
                        finished.outcome().value().cloned(),
                    )
                }
                None => (append(&shared, session.as_ref(), record), Vec::new(), None),
            };
            let view = ResultView {
                call: call.view.clone(),
                result,
                seq,
            };
            if let Err(error) = shared.result.emit(&view) {
                shared.ctx.log(
                    dsh_plugin_api::LogLevel::Warn,
                    &format!("tools/result: {error}"),
                );
            }
            lock(&contexts).extend(finished.additional_contexts().iter().cloned());
            Committed {
                call_id: call.view.call_id.to_string(),
                is_error: finished.is_error(),
                content,
                value,
                seq,
                logged: session.is_none() || seq > 0,
                concludes_turn: finished.concludes_turn(),
            }
        })
    }
}

async fn post_execute(shared: &Shared, call: &Call, outcome: ToolOutcome) -> ToolOutcome {
    let view = PostView {
        call: call.view.clone(),
        outcome: outcome_summary(&outcome),
    };
    let decided = shared
        .post_execute
        .waterfall(RArc::new(view), |_| async {
            Ok(Json::encode(&PostDecision::accept()))
        })
        .await;
    let decision = match decided {
        Ok(decision) => decision.decode().map_err(|error| {
            format!("tools/post-execute answered an invalid decision `{decision:?}`: {error}")
        }),
        Err(error) => Err(format!("tools/post-execute failed: {error}")),
    };
    match decision {
        Ok(decision) => {
            let name = call.view.name.to_string();
            let tool = shared.tool(&call.view.scope, &name);
            apply_post_decision(outcome, decision, move |value| {
                let rendered =
                    tool.and_then(|tool| tool.render(Json::encode(&value)).into_option());
                let Some(rendered) = rendered else {
                    return Err(ToolFailure::pipeline(format!(
                        "tools/post-execute replaced the value of `{name}` with one its output renderer cannot render"
                    )));
                };
                let content: Vec<ContentBlock> = rendered.decode().map_err(|error| {
                    ToolFailure::pipeline(format!(
                        "the renderer of `{name}` answered invalid content: {error}"
                    ))
                })?;
                Ok(ToolOutcome::success(value, content))
            })
        }
        Err(message) => pipeline_failure(message),
    }
}
