//! Fakes of the loop's seams: a session backed by the real log rules (`dsh-session-log`), a
//! model that plays scripted attempts, a tool registry that answers every call, and hooks with
//! canned answers that record what they were asked.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RErr, RNone, ROk, ROption, RResult, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::AgentRequest;
use dsh_llm_seam::{
    AdapterBox, ChunkStream, ChunkStream_TO, Llm, Llm_TO, LlmService, NextChunk, RegistrationBox,
    StreamOutcome,
};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::{Json, SeamError, Service, lock};
use dsh_protocol::{
    AssembledPrompt, CallReport, CatalogModel, ContentBlock, Continuation, FailureCode,
    FinishReason, GenerateRequest, LlmFailure, Message, MessageSource, PreStepDecision,
    PromptRequest, RequestErrorDecision, RequestFailure, StepProposal, StepReport, StreamChunk,
    ToolGuidance, ToolResultEvent, ToolSchema, TurnStopping,
};
use dsh_session_log::{NewEvent, SessionLog, TypeRegistry, parse_lossless};
use dsh_sessions_seam::{
    CreateSession, DerivedView, DerivedView_TO, DerivedViewBox, EventRecord, NewEventRecord,
    Session, Session_TO, SessionBox, SessionError, SessionErrorKind, SessionExt, Sessions,
    Sessions_TO, SessionsService,
};
use dsh_tools_seam::{
    GuardBox, RegistrationBox as ToolRegistration, StepCalls, ToolBox, Tools, Tools_TO,
    ToolsService,
};

use crate::hooks::{BoxFuture, Hooks, Prompt};

/// One session's log, with the rules of the real one.
pub(crate) struct FakeSession {
    id: String,
    log: Mutex<SessionLog>,
    /// Flushes fail as a full disk makes the store's fail.
    pub(crate) unwritable: std::sync::atomic::AtomicBool,
    /// The log's length at each flush, in order.
    pub(crate) flushed_at: Mutex<Vec<usize>>,
}

impl FakeSession {
    pub(crate) fn new(id: &str) -> Arc<Self> {
        Arc::new(Self {
            id: id.to_owned(),
            log: Mutex::new(SessionLog::new(Arc::new(TypeRegistry::new()))),
            unwritable: std::sync::atomic::AtomicBool::new(false),
            flushed_at: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn boxed(self: &Arc<Self>) -> SessionBox {
        Session_TO::from_value(Shared(self.clone()), TD_Opaque)
    }

    /// The logged event types, in order.
    pub(crate) fn kinds(&self) -> Vec<String> {
        lock(&self.log)
            .events()
            .iter()
            .map(|event| event.kind.clone())
            .collect()
    }

    /// The data of every event of `kind`.
    pub(crate) fn data_of(&self, kind: &str) -> Vec<serde_json::Value> {
        lock(&self.log)
            .events()
            .iter()
            .filter(|event| event.kind == kind)
            .map(|event| event.data.clone())
            .collect()
    }
}

struct Shared(Arc<FakeSession>);

fn record(id: &str, event: &dsh_session_log::SessionEvent) -> RArc<EventRecord> {
    RArc::new(EventRecord {
        session: id.into(),
        seq: event.seq,
        kind: event.kind.as_str().into(),
        time: event.time,
        json: serde_json::to_string(event).unwrap_or_default().into(),
    })
}

impl Session for Shared {
    fn id(&self) -> RString {
        self.0.id.as_str().into()
    }

    fn agent_preset(&self) -> ROption<RString> {
        ROption::RNone
    }

    fn event_count(&self) -> u64 {
        lock(&self.0.log).len() as u64
    }

    fn append(
        &self,
        batch: RVec<NewEventRecord>,
    ) -> RResult<RVec<RArc<EventRecord>>, SessionError> {
        let mut log = lock(&self.0.log);
        let mut committed = RVec::new();
        for new in batch.iter() {
            let rejected = |message: String| SessionError::new(SessionErrorKind::Rejected, message);
            let data = match parse_lossless(&new.data) {
                Ok(data) => data,
                Err(error) => return RErr(rejected(error.to_string())),
            };
            let mut event = NewEvent::new(new.kind.as_str(), data, 0);
            if let RSome(op) = &new.surface_op {
                match op.decode() {
                    Ok(op) => event.surface_op = Some(op),
                    Err(error) => return RErr(rejected(error.to_string())),
                }
            }
            if let RSome(seqs) = &new.source_event_seqs {
                event = event.with_sources(seqs.to_vec());
            }
            match log.append(event) {
                Ok(event) => committed.push(record(&self.0.id, &event)),
                Err(error) => return RErr(rejected(error.to_string())),
            }
        }
        ROk(committed)
    }

    fn events(&self, from: u64, to: u64) -> RVec<RArc<EventRecord>> {
        lock(&self.0.log)
            .events()
            .iter()
            .filter(|event| (from..to).contains(&event.seq))
            .map(|event| record(&self.0.id, event))
            .collect()
    }

    fn derive_messages(&self) -> DerivedViewBox {
        DerivedView_TO::from_value(View(lock(&self.0.log).derive_messages()), TD_Opaque)
    }

    fn flush(&self) -> FfiFuture<RResult<(), SessionError>> {
        lock(&self.0.flushed_at).push(lock(&self.0.log).len());
        let flushed = if self.0.unwritable.load(Ordering::Relaxed) {
            RErr(SessionError::new(
                SessionErrorKind::Storage,
                "session flush failed: append to s1/session.jsonl: No space left on device",
            ))
        } else {
            ROk(())
        };
        std::future::ready(flushed).into_ffi()
    }
}

struct View(dsh_session_log::DerivedMessages);

impl DerivedView for View {
    fn message_count(&self) -> u64 {
        self.0.len() as u64
    }

    fn message(&self, index: u64) -> ROption<Json<Message>> {
        let found = usize::try_from(index)
            .ok()
            .and_then(|index| self.0.get(index));
        match found {
            Some(message) => RSome(Json::from_text(message.to_value().to_string())),
            None => RNone,
        }
    }

    fn hash(&self) -> u64 {
        self.0.hash()
    }
}

/// A `sessions` service holding one session.
struct OneSession(Arc<FakeSession>);

impl Sessions for OneSession {
    fn create(&self, _request: CreateSession) -> FfiFuture<RResult<SessionBox, SessionError>> {
        std::future::ready(ROk(self.0.boxed())).into_ffi()
    }

    fn open(&self, id: RString) -> FfiFuture<RResult<SessionBox, SessionError>> {
        let opened = if id.as_str() == self.0.id {
            ROk(self.0.boxed())
        } else {
            RErr(SessionError::new(
                SessionErrorKind::NotFound,
                "no such session",
            ))
        };
        std::future::ready(opened).into_ffi()
    }

    fn fork(
        &self,
        _source: RString,
        _prefix_len: u64,
        _child: ROption<RString>,
    ) -> FfiFuture<RResult<SessionBox, SessionError>> {
        std::future::ready(RErr(SessionError::new(
            SessionErrorKind::Invalid,
            "no forks",
        )))
        .into_ffi()
    }

    fn live(&self) -> RVec<RString> {
        RVec::from(vec![RString::from(self.0.id.as_str())])
    }

    fn register_type(&self, _kind: RString, _required: bool) -> RResult<(), SessionError> {
        ROk(())
    }

    fn close(&self, _id: RString) -> FfiFuture<RResult<(), SessionError>> {
        std::future::ready(ROk(())).into_ffi()
    }

    fn view(&self, _id: RString) -> FfiFuture<RResult<SessionBox, SessionError>> {
        std::future::ready(RErr(SessionError::new(
            SessionErrorKind::NotFound,
            "no stored sessions",
        )))
        .into_ffi()
    }
}

pub(crate) fn sessions(session: &Arc<FakeSession>) -> Service<SessionsService> {
    Service::local(Sessions_TO::from_value(
        OneSession(session.clone()),
        TD_Opaque,
    ))
}

/// What one scripted model attempt does.
#[derive(Clone)]
pub(crate) enum Scripted {
    /// These chunks, then the end of the stream.
    Chunks(Vec<StreamChunk>),
    /// These chunks, then a failure mid-stream.
    Breaks(Vec<StreamChunk>, LlmFailure),
    /// These chunks, then no more, ever (a hang a cancel must cut).
    Hangs(Vec<StreamChunk>),
}

/// One text answer.
pub(crate) fn text(answer: &str) -> Scripted {
    Scripted::Chunks(vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: dsh_protocol::BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: answer.to_owned(),
        },
        StreamChunk::BlockEnd {
            index: 0,
            block: ContentBlock::text(answer),
        },
        StreamChunk::finish(FinishReason::Stop),
    ])
}

/// One tool call.
pub(crate) fn call(id: &str, name: &str) -> Scripted {
    let block = ContentBlock::tool_call(id, name, "{}");
    Scripted::Chunks(vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: dsh_protocol::BlockType::ToolCall,
        },
        StreamChunk::BlockEnd { index: 0, block },
        StreamChunk::finish(FinishReason::ToolCalls),
    ])
}

pub(crate) fn transport() -> LlmFailure {
    LlmFailure::new(
        FailureCode::StreamClosed,
        "the stream closed without [DONE]",
    )
}

/// A model that plays its script, one attempt per request, and keeps the requests.
pub(crate) struct FakeModel {
    script: Mutex<VecDeque<Scripted>>,
    pub(crate) requests: Mutex<Vec<GenerateRequest>>,
}

impl FakeModel {
    pub(crate) fn new(script: Vec<Scripted>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into()),
            requests: Mutex::new(Vec::new()),
        })
    }
}

struct Playback {
    chunks: Mutex<VecDeque<StreamChunk>>,
    then: Option<LlmFailure>,
    hangs: bool,
}

impl ChunkStream for Playback {
    fn next(&self) -> FfiFuture<NextChunk> {
        let next = lock(&self.chunks).pop_front();
        match next {
            Some(chunk) => std::future::ready(ROk(RSome(Json::encode(&chunk)))).into_ffi(),
            None if self.hangs => std::future::pending().into_ffi(),
            None => {
                let end = match &self.then {
                    Some(failure) => RErr(Json::encode(failure)),
                    None => ROk(RNone),
                };
                std::future::ready(end).into_ffi()
            }
        }
    }
}

struct ModelService(Arc<FakeModel>);

impl Llm for ModelService {
    fn register(&self, _adapter: AdapterBox) -> RResult<RegistrationBox, Json<LlmFailure>> {
        RErr(Json::encode(&LlmFailure::new(
            FailureCode::Unknown,
            "no adapters",
        )))
    }

    fn stream(&self, request: Json<GenerateRequest>) -> FfiFuture<StreamOutcome> {
        if let Ok(request) = request.decode() {
            lock(&self.0.requests).push(request);
        }
        let attempt = lock(&self.0.script).pop_front();
        let (chunks, then, hangs) = match attempt {
            Some(Scripted::Chunks(chunks)) => (chunks, None, false),
            Some(Scripted::Breaks(chunks, failure)) => (chunks, Some(failure), false),
            Some(Scripted::Hangs(chunks)) => (chunks, None, true),
            None => {
                let failure = LlmFailure::new(FailureCode::Unknown, "the script ran out");
                return std::future::ready(RErr(Json::encode(&failure))).into_ffi();
            }
        };
        let playback = Playback {
            chunks: Mutex::new(chunks.into()),
            then,
            hangs,
        };
        std::future::ready(ROk(ChunkStream_TO::from_value(playback, TD_Opaque))).into_ffi()
    }

    fn providers(&self) -> RVec<RString> {
        RVec::from(vec![RString::from("fake")])
    }

    fn models(&self, _provider: RString) -> ROption<Json<Vec<CatalogModel>>> {
        RNone
    }
}

pub(crate) fn llm(model: &Arc<FakeModel>) -> Service<LlmService> {
    Service::local(Llm_TO::from_value(ModelService(model.clone()), TD_Opaque))
}

/// A registry of one tool, `noop`, whose every call succeeds (and is logged as the real
/// pipeline logs it, so the next request's history holds the result).
pub(crate) struct FakeTools {
    pub(crate) session: Arc<FakeSession>,
    pub(crate) steps: AtomicUsize,
}

impl Tools for FakeTools {
    fn register(
        &self,
        _owner: RString,
        _scope: RString,
        _tool: ToolBox,
    ) -> RResult<ToolRegistration, SeamError> {
        RErr(SeamError::failed("fake registry"))
    }

    fn guard(&self, _owner: RString, _guard: GuardBox) -> ToolRegistration {
        dsh_tools_seam::Registration_TO::from_value(Nothing, TD_Opaque)
    }

    fn restrict(
        &self,
        _owner: RString,
        _scope: RVec<RString>,
        _restriction: Json<dsh_protocol::Restriction>,
    ) -> RResult<ToolRegistration, SeamError> {
        RErr(SeamError::failed("fake registry"))
    }

    fn schemas(&self, _scope: RVec<RString>) -> RResult<Json<Vec<ToolSchema>>, SeamError> {
        let noop = ToolSchema::new(
            "noop",
            "Does nothing.",
            &serde_json::json!({"type": "object"}),
        );
        ROk(Json::encode(&vec![noop]))
    }

    fn guidance(&self, _scope: RVec<RString>) -> Json<Vec<ToolGuidance>> {
        Json::encode(&Vec::new())
    }

    fn run_step(&self, step: StepCalls, _cancel: CancelBox) -> FfiFuture<Json<StepReport>> {
        self.steps.fetch_add(1, Ordering::Relaxed);
        let session = self.session.boxed();
        let mut results = Vec::new();
        for call in step.calls.iter() {
            let message = dsh_tools_core::tool_result_message(
                format!("r-{}", call.call_id),
                &call.call_id,
                vec![ContentBlock::text("ok")],
                false,
            );
            let event = ToolResultEvent {
                turn: step.turn,
                step: step.step,
                message,
                error: None,
                meta: None,
            };
            let seq = session.log(&event).unwrap_or(0);
            results.push(CallReport {
                call_id: call.call_id.to_string(),
                is_error: false,
                seq,
                logged: seq > 0,
                content: Vec::new(),
                value: None,
            });
        }
        let report = StepReport {
            results,
            additional_contexts: Vec::new(),
            concludes_turn: false,
        };
        std::future::ready(Json::encode(&report)).into_ffi()
    }
}

/// A registration of nothing.
struct Nothing;

impl dsh_tools_seam::Registration for Nothing {
    fn describe(&self) -> RString {
        RString::from("nothing")
    }
}

pub(crate) fn tools(session: &Arc<FakeSession>) -> Service<ToolsService> {
    let fake = FakeTools {
        session: session.clone(),
        steps: AtomicUsize::new(0),
    };
    Service::local(Tools_TO::from_value(fake, TD_Opaque))
}

/// Hooks with canned answers.
#[derive(Default)]
pub(crate) struct FakeHooks {
    /// `agent/pre-step` refuses step `n` (1-based) with this reason.
    pub(crate) reject_step: Option<(u64, String)>,
    /// `agent/request-error` retries this many failures, then gives up.
    pub(crate) retries: AtomicUsize,
    /// `agent/turn-stopping` keeps the turn going once with this text.
    pub(crate) continue_with: Mutex<Option<String>>,
    /// The system prompt assembled (none: the row's prompt applies).
    pub(crate) system: Option<String>,
    pub(crate) errors: Mutex<Vec<LlmFailure>>,
}

impl Hooks for FakeHooks {
    fn pre_step(
        &self,
        step: StepProposal,
    ) -> BoxFuture<'_, Result<PreStepDecision, crate::error::LoopError>> {
        let decision = match &self.reject_step {
            Some((at, reason)) if *at == step.step => PreStepDecision::Reject {
                reason: Some(reason.clone()),
            },
            _ => PreStepDecision::Enter,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }

    fn request(
        &self,
        request: AgentRequest,
    ) -> BoxFuture<'_, Result<Json<GenerateRequest>, crate::error::LoopError>> {
        Box::pin(std::future::ready(Ok(request.request)))
    }

    fn request_error(&self, _failure: RequestFailure) -> BoxFuture<'_, RequestErrorDecision> {
        let retry = self
            .retries
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        let decision = match retry {
            true => RequestErrorDecision::Retry,
            false => RequestErrorDecision::Fail,
        };
        Box::pin(std::future::ready(decision))
    }

    fn turn_stopping(
        &self,
        _stopping: TurnStopping,
    ) -> BoxFuture<'_, Result<Option<Continuation>, crate::error::LoopError>> {
        let continuation = lock(&self.continue_with).take().map(|text| Continuation {
            message: Message::user("", vec![ContentBlock::text(text)], MessageSource::plugin()),
        });
        Box::pin(std::future::ready(Ok(continuation)))
    }

    fn prompt(
        &self,
        _request: PromptRequest,
    ) -> BoxFuture<'_, Result<Prompt, crate::error::LoopError>> {
        let prompt = match &self.system {
            Some(system) => Prompt::Assembled(Json::encode(&AssembledPrompt {
                system: system.clone(),
                contexts: Vec::new(),
            })),
            None => Prompt::Missing,
        };
        Box::pin(std::future::ready(Ok(prompt)))
    }

    fn error(&self, _session: &str, _turn: u64, _step: u64, error: &LlmFailure) {
        lock(&self.errors).push(error.clone());
    }
}
