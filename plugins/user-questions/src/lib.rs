//! Plugin `user-questions`: provides `user_questions` and registers the `ask_user_question`
//! tool. An ask goes to the `questions/request` answerer chain (the web page is one answerer);
//! its innermost default is `unavailable`, so with no one to ask (headless) the call fails at
//! once and tells the model to go on and state its question in its answer. A delegated child
//! (its latest `approval/policy` says `source: delegation`) is refused before anyone is asked:
//! its parent owns it, and the question belongs in the child's result.
//!
//! Each ask is kept in its session as two plugin events, registered ignorable so a session
//! stays readable without this plugin: `question/asked`, then `question/answered` (also when
//! the call is cancelled while it waits, so no page shows a question still open).
//!
//! It does not draw or collect answers itself: that is each answerer's job.

mod tool;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, ErrorKind};
use dsh_protocol::{
    ApprovalPolicyEvent, ContentBlock, EventData, OutcomeSummary, QuestionAnsweredEvent,
    QuestionAskedEvent, QuestionRequest, QuestionVerdict, ToolDecl, ToolReply,
};
use dsh_sessions_seam::{
    LatestOf, NewEventRecord, SESSIONS_SERVICE, SessionsService, append_or_report, open_live,
};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};
use dsh_user_questions_seam::{
    QUESTIONS_REQUEST, USER_QUESTIONS_SERVICE, UserQuestions, UserQuestions_TO,
};

/// What a delegated child's policy says about who set it.
const DELEGATION: &str = "delegation";

/// Config of `user-questions`: nothing to set yet.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct UserQuestionsConfig {}

struct Service {
    ctx: Context,
    request: Channel<WaterfallEvent<Json<QuestionRequest>, Json<QuestionVerdict>>>,
    /// Each session's latest `approval/policy`, to tell a delegated child.
    policies: LatestOf<ApprovalPolicyEvent>,
    next_id: AtomicU64,
}

impl Service {
    /// Whether `session` is a child its parent owns.
    fn delegated(&self, session: &str) -> bool {
        open_live(&self.ctx, session)
            .ok()
            .and_then(|live| self.policies.of(&live))
            .is_some_and(|policy| policy.source.as_deref() == Some(DELEGATION))
    }

    async fn log(&self, session: &str, record: NewEventRecord) {
        append_or_report(&self.ctx, "user-questions", session, record).await;
    }

    /// Puts `ask` to the answerers until one answers or `stop` resolves (then `cancelled`),
    /// logging both ends.
    async fn ask(
        &self,
        mut ask: QuestionRequest,
        stop: impl Future<Output = ()>,
    ) -> QuestionVerdict {
        if ask.id.is_empty() {
            let n = self.next_id.fetch_add(1, Ordering::Relaxed);
            let call = ask.call_id.as_deref().unwrap_or_default();
            ask.id = format!("question-{call}-{n}");
        }
        let asked = QuestionAskedEvent {
            id: ask.id.clone(),
            call_id: ask.call_id.clone().filter(|id| !id.is_empty()),
            questions: ask.questions.clone(),
        };
        self.log(&ask.session, NewEventRecord::of(&asked)).await;
        let (id, session) = (ask.id.clone(), ask.session.clone());
        let answering = self
            .request
            .waterfall(RArc::new(Json::encode(&ask)), |_| async {
                Ok(Json::encode(&QuestionVerdict::Unavailable))
            });
        let verdict = match first_of(answering, stop).await {
            // A verdict that does not read counts as no answer.
            Either::Left(answered) => answered
                .ok()
                .and_then(|verdict| verdict.decode().ok())
                .unwrap_or(QuestionVerdict::Unavailable),
            Either::Right(()) => QuestionVerdict::Cancelled,
        };
        let answered = QuestionAnsweredEvent {
            id,
            verdict: verdict.clone(),
        };
        self.log(&session, NewEventRecord::of(&answered)).await;
        verdict
    }
}

struct Handle(Arc<Service>);

impl UserQuestions for Handle {
    fn ask(&self, request: Json<QuestionRequest>) -> FfiFuture<Json<QuestionVerdict>> {
        let service = self.0.clone();
        async move {
            let verdict = match request.decode() {
                Ok(ask) => service.ask(ask, std::future::pending()).await,
                Err(_) => QuestionVerdict::Unavailable,
            };
            Json::encode(&verdict)
        }
        .into_ffi()
    }
}

struct AskTool(Arc<Service>);

impl Tool for AskTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&tool::decl())
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let service = self.0.clone();
        async move {
            if service.delegated(&call.session) {
                return Json::encode(&tool::failure(tool::DELEGATED, "DELEGATED_CALLER"));
            }
            let questions = match tool::parse(&call.arguments) {
                Ok(questions) => questions,
                Err(error) => {
                    return Json::encode(&tool::failure(&error.to_string(), "INVALID_ARGUMENTS"));
                }
            };
            let ask = QuestionRequest {
                id: String::new(),
                session: call.session.to_string(),
                call_id: Some(call.call_id.to_string()).filter(|id| !id.is_empty()),
                questions: questions.clone(),
            };
            let verdict = service.ask(ask, cancel.cancelled()).await;
            Json::encode(&tool::reply(&questions, &verdict))
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

pub struct UserQuestionsPlugin;

impl Plugin for UserQuestionsPlugin {
    const NAME: &'static str = "user-questions";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, SESSIONS_SERVICE];
    const PROVIDES: &'static [&'static str] = &[USER_QUESTIONS_SERVICE];
    type Config = UserQuestionsConfig;

    async fn apply(ctx: Context, _config: UserQuestionsConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let sessions = ctx.inject::<SessionsService>(SESSIONS_SERVICE)?;
        for kind in [QuestionAskedEvent::KIND, QuestionAnsweredEvent::KIND] {
            sessions
                .register_type(RString::from(kind), false)
                .into_result()
                .map_err(|error| {
                    PluginError::new(ErrorKind::Plugin, format!("`{kind}`: {error}"))
                })?;
        }
        let service = Arc::new(Service {
            ctx: ctx.clone(),
            request: ctx.channel(&QUESTIONS_REQUEST)?,
            policies: LatestOf::default(),
            next_id: AtomicU64::new(1),
        });
        ctx.provide(
            USER_QUESTIONS_SERVICE,
            UserQuestions_TO::from_value(Handle(service.clone()), TD_Opaque),
        )?;
        let registration = tools
            .register(
                RString::from(ctx.row_id()),
                RString::new(),
                tool_box(AskTool(service)),
            )
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        ctx.on_dispose(move || drop(registration))
    }
}

dsh_plugin_api::export_plugins!(UserQuestionsPlugin);
