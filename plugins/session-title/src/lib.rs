//! Plugin `session-title`: the title of a session, in its log (`session/title`, the latest
//! wins; the web page and the session list show it).
//!
//! The fallback: when the first human message (a `user/message` whose source is `user`, with
//! visible text) of a session without a title is logged, it appends the message's first
//! `fallbackMaxWords` words within `fallbackMaxBytes` UTF-8 bytes, cleaned of escapes and
//! controls, with `messageSeqs` naming that message and `source: {"kind":"fallback"}`, right
//! after the batch that carried the message (where the reference's fallback lands).
//!
//! The model title (row config `llm`, off unless `enabled`): a fresh top-level session's first
//! human message is also titled once by a model, as the reference's
//! `session-title-first-prompt-llm` provider does. When the session's first request header is
//! logged, `session/title-llm-request` records the whole request (the first message framed as
//! JSON, the recorded instruction, `maxTokens`), which goes through the `llm` service with
//! purpose `session-title`, thinking off and `timeoutMs` to answer, on the session's own route
//! or `llm.route`. The answer's first line with words, unwrapped of quotes, labels and marks,
//! cleaned and cut at `maxTitleBytes`, becomes a `session/title` with
//! `source: {"kind":"provider","provider":"session-title-first-prompt-llm","model":{..}}`. It
//! runs beside the turn and never holds it up; a failure, a timeout or an answer without a
//! title leaves the fallback and logs a warning saying why. A subagent's session, a loaded or
//! forked one, and a session a person renamed first are not titled by model.
//!
//! Modules: `config` (the row), `schedule` (when), `provider` (one model title), `request`
//! (what is sent and logged), `model` (the call), `answer` (reading the title out of the
//! answer), `normalize` (any title's text), `log` (reading and appending titles).
//!
//! Not built yet: renames through this plugin (the web plugin logs them itself), retitling
//! from later messages (the reference's all-prompts provider) and an explicit refresh.

mod answer;
mod config;
mod log;
mod model;
mod normalize;
mod provider;
mod request;
mod schedule;

use std::sync::Arc;

use abi_stable::std_types::RString;
use dsh_plugin_api::prelude::*;
use dsh_sessions_seam::{EventRecord, SESSION_DISPOSED, SESSION_EVENT};

pub use config::{ConfigError, LlmTitleConfig, RouteConfig, TitleConfig};

use crate::schedule::Titler;

pub struct TitlePlugin;

impl Plugin for TitlePlugin {
    const NAME: &'static str = "session-title";
    const OPTIONAL: &'static [&'static str] = &[
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_llm_seam::LLM_SERVICE,
    ];
    type Config = TitleConfig;

    async fn apply(ctx: Context, config: TitleConfig) -> Result<(), PluginError> {
        config.check()?;
        let titler = Arc::new(Titler::new(config));
        let forget = titler.clone();
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            forget.forget(id.as_str());
        })?;
        let listener_ctx = ctx.clone();
        ctx.on_emit(&SESSION_EVENT, move |record: &EventRecord| {
            titler.on_event(&listener_ctx, record);
        })?;
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(TitlePlugin);
