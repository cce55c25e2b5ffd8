//! The loop against fakes of its seams: what a turn logs and answers, step by step.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "unit tests drive the loop on a runtime of their own"
)]

mod fakes;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RNone, ROk, RResult, RSome, RString, RVec};
use dsh_agents_seam::{TurnInbox, TurnInbox_TO, TurnRequest};
use dsh_plugin_api::{Json, lock};
use dsh_protocol::{
    AbortCause, ContentBlock, FailureCode, Message, MessageSource, StreamChunk, TurnEndReason,
    TurnOutcome,
};

use self::fakes::{FakeHooks, FakeModel, FakeSession, Scripted, call, text, transport};
use crate::{Deps, Running};

const SESSION: &str = "s1";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
}

fn deps(session: &Arc<FakeSession>, model: &Arc<FakeModel>, hooks: FakeHooks) -> Arc<Deps> {
    Arc::new(Deps {
        sessions: fakes::sessions(session),
        llm: fakes::llm(model),
        tools: Some(fakes::tools(session)),
        hooks: Arc::new(hooks),
        system: "the row's prompt".to_owned(),
        max_steps: 5,
    })
}

fn task(words: &str) -> Message {
    Message::user("", vec![ContentBlock::text(words)], MessageSource::user())
}

fn request(input: Vec<Message>) -> TurnRequest {
    TurnRequest {
        session: SESSION.into(),
        input: Json::encode(&input),
        inbox: RNone,
        provider: "fake".into(),
        model: "m".into(),
        cwd: "/work".into(),
        scope: RVec::new(),
    }
}

/// Runs one turn of `script` on a fresh session; answers the outcome and the session.
fn turn(
    script: Vec<Scripted>,
    hooks: FakeHooks,
) -> (TurnOutcome, Arc<FakeSession>, Arc<FakeModel>) {
    let session = FakeSession::new(SESSION);
    let model = FakeModel::new(script);
    let deps = deps(&session, &model, hooks);
    let outcome = runtime().block_on(crate::run_turn(
        deps,
        Running::default(),
        request(vec![task("do it")]),
    ));
    (outcome, session, model)
}

#[test]
fn a_turn_that_gets_an_answer_logs_every_step_and_completes() {
    let (outcome, session, model) = turn(vec![text("hello")], FakeHooks::default());
    assert_eq!(outcome.reason, TurnEndReason::Completed);
    assert_eq!(outcome.output, "hello");
    assert_eq!(outcome.turn, 1);
    assert_eq!(
        session.kinds(),
        [
            "turn/start",
            "step/start",
            "user/message",
            "request/header",
            "request/context",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "step/end",
            "turn/end"
        ]
    );
    // The request went by reference to the logged history, with the row's system prompt.
    let requests = lock(&model.requests);
    let history = requests[0].history.as_ref().expect("a history reference");
    assert_eq!(history.count, 1);
    assert!(requests[0].messages.is_empty());
    assert_eq!(requests[0].system.as_deref(), Some("the row's prompt"));
    assert_eq!(requests[0].tools[0].name, "noop");
}

#[test]
fn the_turns_events_are_flushed_before_its_end_is_shown() {
    let (outcome, session, _model) = turn(vec![text("hello")], FakeHooks::default());
    assert_eq!(outcome.reason, TurnEndReason::Completed);
    let logged = session.kinds().len();
    // The checkpoint saw every event but `turn/end`; the last flush saw `turn/end` too.
    assert_eq!(
        lock(&session.flushed_at).as_slice(),
        [logged - 1, logged],
        "{:?}",
        session.kinds()
    );
}

#[test]
fn a_store_that_cannot_write_ends_the_turn_with_its_error_not_completed() {
    let session = FakeSession::new(SESSION);
    session
        .unwritable
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let model = FakeModel::new(vec![text("hello")]);
    let hooks = Arc::new(FakeHooks::default());
    let deps = Arc::new(Deps {
        sessions: fakes::sessions(&session),
        llm: fakes::llm(&model),
        tools: Some(fakes::tools(&session)),
        hooks: hooks.clone(),
        system: String::new(),
        max_steps: 5,
    });
    let outcome = runtime().block_on(crate::run_turn(
        deps,
        Running::default(),
        request(vec![task("do it")]),
    ));
    let failure = outcome.reason.failure().expect("an error end");
    assert_eq!(failure.code.as_str(), crate::turn::STORE_WRITE_FAILED);
    // Reported to `agent/error` as any failed turn is.
    assert_eq!(
        lock(&hooks.errors).as_slice(),
        std::slice::from_ref(failure)
    );
    assert!(
        failure.message.contains("No space left on device")
            && failure.message.contains("would have ended completed"),
        "{}",
        failure.message
    );
    // What clients were shown as the turn's end is that error, never `completed`.
    let ends = session.data_of("turn/end");
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["reason"]["kind"], "error");
    assert_eq!(ends[0]["reason"]["error"]["code"], "STORE_WRITE_FAILED");
}

#[test]
fn tool_calls_owe_the_model_another_step() {
    let (outcome, session, model) =
        turn(vec![call("c1", "noop"), text("done")], FakeHooks::default());
    assert_eq!(outcome.reason, TurnEndReason::Completed);
    assert_eq!(outcome.output, "done");
    assert_eq!(session.data_of("step/start").len(), 2);
    assert_eq!(session.data_of("tool/result").len(), 1);
    // The second request sees the call and its result: user, assistant, tool result.
    let requests = lock(&model.requests);
    assert_eq!(requests[1].history.as_ref().map(|h| h.count), Some(3));
    // The header did not change, so it was logged once.
    assert_eq!(session.data_of("request/header").len(), 1);
}

#[test]
fn a_rejected_pre_step_ends_the_turn_blocked_without_the_step() {
    let hooks = FakeHooks {
        reject_step: Some((1, "not now".to_owned())),
        ..FakeHooks::default()
    };
    let (outcome, session, model) = turn(vec![text("never asked")], hooks);
    assert_eq!(
        outcome.reason,
        TurnEndReason::Blocked {
            reason: Some("not now".to_owned())
        }
    );
    assert_eq!(session.kinds(), ["turn/start", "turn/end"]);
    assert!(lock(&model.requests).is_empty());
}

#[test]
fn a_stream_that_closes_early_is_retried_in_the_same_step() {
    let prefix = vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: dsh_protocol::BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: "hal".to_owned(),
        },
    ];
    let hooks = FakeHooks {
        retries: AtomicUsize::new(1),
        ..FakeHooks::default()
    };
    let (outcome, session, model) = turn(
        vec![Scripted::Breaks(prefix, transport()), text("whole")],
        hooks,
    );
    assert_eq!(outcome.reason, TurnEndReason::Completed);
    assert_eq!(outcome.output, "whole");
    assert_eq!(lock(&model.requests).len(), 2);
    assert_eq!(session.data_of("step/start").len(), 1, "one step");
    // The failed attempt is in the log as its chunks and an error finish; only the retried
    // one became a message.
    let finishes: Vec<_> = session
        .data_of("assistant/chunk")
        .into_iter()
        .filter(|data| data["chunk"]["type"] == "finish")
        .map(|data| data["chunk"]["reason"]["kind"].clone())
        .collect();
    assert_eq!(finishes, ["error", "stop"]);
    let messages = session.data_of("assistant/message");
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["message"]["content"][0]["text"], "whole");
}

#[test]
fn a_failure_nobody_retries_ends_the_turn_with_its_code_and_keeps_what_arrived() {
    let prefix = vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: dsh_protocol::BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: "half an answer".to_owned(),
        },
    ];
    let hooks = FakeHooks::default();
    let session = FakeSession::new(SESSION);
    let model = FakeModel::new(vec![Scripted::Breaks(prefix, transport())]);
    let hooks = Arc::new(hooks);
    let deps = Arc::new(Deps {
        sessions: fakes::sessions(&session),
        llm: fakes::llm(&model),
        tools: Some(fakes::tools(&session)),
        hooks: hooks.clone(),
        system: String::new(),
        max_steps: 5,
    });
    let outcome = runtime().block_on(crate::run_turn(
        deps,
        Running::default(),
        request(vec![task("go")]),
    ));
    let failure = outcome.reason.failure().expect("an error end");
    assert_eq!(failure.code, FailureCode::StreamClosed);
    // Reported to `agent/error` before the turn closed.
    assert_eq!(lock(&hooks.errors).len(), 1);
    let messages = session.data_of("assistant/message");
    assert_eq!(messages[0]["interrupted"], true);
    assert_eq!(
        messages[0]["message"]["content"][0]["text"],
        "half an answer"
    );
    assert_eq!(session.kinds().last().map(String::as_str), Some("turn/end"));
}

#[test]
fn a_cancel_mid_stream_ends_the_turn_aborted_with_its_cause() {
    let prefix = vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: dsh_protocol::BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: "thinking aloud".to_owned(),
        },
    ];
    let session = FakeSession::new(SESSION);
    let model = FakeModel::new(vec![Scripted::Hangs(prefix)]);
    let deps = deps(&session, &model, FakeHooks::default());
    let running = Running::default();
    let outcome = runtime().block_on(async {
        let turn = crate::run_turn(deps, running.clone(), request(vec![task("go")]));
        let cancel = async {
            // The turn registers itself, asks the model, and hangs on the stream's next chunk;
            // then it is cancelled as the `agent_loop` service would cancel it.
            while lock(&model.requests).is_empty() || lock(&running).is_empty() {
                tokio::task::yield_now().await;
            }
            let turn = lock(&running).get(SESSION).cloned().expect("registered");
            turn.fire(AbortCause::Parent);
        };
        let (outcome, ()) = tokio::join!(turn, cancel);
        outcome
    });
    assert_eq!(
        outcome.reason,
        TurnEndReason::Aborted {
            reason: AbortCause::Parent
        }
    );
    let messages = session.data_of("assistant/message");
    assert_eq!(messages[0]["interrupted"], true);
    assert_eq!(
        messages[0]["message"]["content"][0]["text"],
        "thinking aloud"
    );
}

#[test]
fn a_continuation_from_turn_stopping_is_the_next_steps_input() {
    let hooks = FakeHooks {
        continue_with: Mutex::new(Some("and once more".to_owned())),
        ..FakeHooks::default()
    };
    let (outcome, session, _) = turn(vec![text("first"), text("second")], hooks);
    assert_eq!(outcome.reason, TurnEndReason::Completed);
    assert_eq!(outcome.output, "second");
    let inputs = session.data_of("user/message");
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[1]["source"]["kind"], "plugin");
    assert_eq!(inputs[1]["content"][0]["text"], "and once more");
}

#[test]
fn a_turn_without_a_model_ends_no_model_without_a_step() {
    let session = FakeSession::new(SESSION);
    let model = FakeModel::new(Vec::new());
    let deps = deps(&session, &model, FakeHooks::default());
    let mut request = request(vec![task("go")]);
    request.provider = RString::new();
    let outcome = runtime().block_on(crate::run_turn(deps, Running::default(), request));
    assert_eq!(
        outcome
            .reason
            .failure()
            .map(|failure| failure.code.to_string()),
        Some("NO_MODEL".to_owned())
    );
    assert_eq!(session.kinds(), ["turn/start", "turn/end"]);
}

/// An inbox that hands out its messages and records the claims.
struct Inbox {
    next_turn: Mutex<Vec<Message>>,
    /// Each claim: its turn and which (`boundary`, `step` or `steered`).
    claims: Arc<Mutex<Vec<(u64, &'static str)>>>,
}

impl TurnInbox for Inbox {
    fn claim(
        &self,
        turn: u64,
        turn_boundary: bool,
    ) -> RResult<Json<Vec<Message>>, dsh_agents_seam::AgentsError> {
        let which = if turn_boundary { "boundary" } else { "step" };
        lock(&self.claims).push((turn, which));
        let claimed = match turn_boundary {
            true => std::mem::take(&mut *lock(&self.next_turn)),
            false => Vec::new(),
        };
        ROk(Json::encode(&claimed))
    }

    fn claim_steered(
        &self,
        turn: u64,
    ) -> RResult<Json<Vec<Message>>, dsh_agents_seam::AgentsError> {
        lock(&self.claims).push((turn, "steered"));
        ROk(Json::encode(&Vec::<Message>::new()))
    }
}

#[test]
fn the_turn_claims_its_inbox_once_open_and_at_every_step_boundary() {
    let session = FakeSession::new(SESSION);
    let model = FakeModel::new(vec![call("c1", "noop"), text("done")]);
    let deps = deps(&session, &model, FakeHooks::default());
    let claims = Arc::new(Mutex::new(Vec::new()));
    let inbox = Inbox {
        next_turn: Mutex::new(vec![Message::user(
            "inbox-1",
            vec![ContentBlock::text("from the inbox")],
            MessageSource::user(),
        )]),
        claims: claims.clone(),
    };
    let mut request = request(Vec::new());
    request.inbox = RSome(TurnInbox_TO::from_value(inbox, TD_Opaque));
    let outcome = runtime().block_on(crate::run_turn(deps, Running::default(), request));
    assert_eq!(outcome.reason, TurnEndReason::Completed);
    // Once open (with the next-turn message), before step 2; after the last step and after
    // `agent/turn-stopping` (whose listeners may steer) only what was steered in.
    assert_eq!(
        *lock(&claims),
        [(1, "boundary"), (1, "step"), (1, "steered"), (1, "steered")]
    );
    let inputs = session.data_of("user/message");
    assert_eq!(inputs[0]["content"][0]["text"], "from the inbox");
    // The claim came after `turn/start`, as the turn flow says.
    assert_eq!(session.kinds()[0], "turn/start");
}
