//! `dsh-user-questions-seam`: questions for a person across the plugin ABI. The
//! `user_questions` service puts an ask to the `questions/request` waterfall, the answerer
//! chain (a web page today; an ACP client or a terminal later): the first listener that answers
//! wins, and the innermost default answers `unavailable`, so with no one to ask the caller
//! learns so at once instead of waiting.
//!
//! Asks and verdicts are `dsh-protocol` values crossing as [`Json`].
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::RBox;
use async_ffi::FfiFuture;
use dsh_plugin_api::{Json, WaterfallEvent};
use dsh_protocol::{QuestionRequest, QuestionVerdict};

/// Service key of the user-questions service.
pub const USER_QUESTIONS_SERVICE: &str = "user_questions";

/// `questions/request`: the answerer chain; the first listener that answers a verdict wins.
pub const QUESTIONS_REQUEST: WaterfallEvent<Json<QuestionRequest>, Json<QuestionVerdict>> =
    WaterfallEvent::new("questions/request");

/// The user-questions service.
#[sabi_trait]
pub trait UserQuestions: Send + Sync {
    /// Puts `request` to the answerers, logging `question/asked` and `question/answered` in
    /// its session (an empty id is given one).
    fn ask(&self, request: Json<QuestionRequest>) -> FfiFuture<Json<QuestionVerdict>>;
}
pub type UserQuestionsService = UserQuestions_TO<'static, RBox<()>>;
