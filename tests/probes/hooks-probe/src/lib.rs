//! Test plugin `hooks-probe`: answers hooks as its row says, so tests can drive the loop's and
//! the pipeline's refusals through the real binary: `rejectStep` refuses every step on
//! `agent/pre-step`, `preExecute` and `postExecute` are the decisions every call gets on
//! `tools/pre-execute` and `tools/post-execute`, and
//! `guard` registers a guard that denies calls whose arguments contain that text, and `steer`
//! queues a steering message on the session's `next-step` list after the first tool call;
//! `continueWith` keeps the first completed turn going once with that message.

use abi_stable::std_types::{RNone, ROption, RSome, RString};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_agents_seam::{
    AGENT_PRE_STEP, AGENT_TURN_STOPPING, AGENTS_SERVICE, AgentsExt, AgentsService,
};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::serde_json::Value;
use dsh_protocol::{
    ContentBlock, Continuation, Message, MessageSource, PluginSource, PostDecision, PreDecision,
    PreStepDecision,
};
use dsh_tools_seam::{
    CallView, Guard, TOOLS_POST_EXECUTE, TOOLS_PRE_EXECUTE, TOOLS_SERVICE, ToolsService, guard_box,
};

/// Row config of `hooks-probe`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct Config {
    pub reject_step: Option<String>,
    #[schemars(with = "Option<Value>")]
    pub pre_execute: Option<PreDecision>,
    #[schemars(with = "Option<Value>")]
    pub post_execute: Option<PostDecision>,
    pub guard: Option<String>,
    /// Queued on the session's `next-step` list after the first tool call: steering.
    pub steer: Option<String>,
    /// Answered (once) on `agent/turn-stopping`: the turn goes on with this message.
    pub continue_with: Option<String>,
}

struct Contains(String);

impl Guard for Contains {
    fn check(&self, call: &CallView) -> ROption<RString> {
        if call.arguments.contains(self.0.as_str()) {
            RSome(
                format!("hooks-probe guards against `{}`", self.0)
                    .as_str()
                    .into(),
            )
        } else {
            RNone
        }
    }
}

pub struct HooksProbe;

impl Plugin for HooksProbe {
    const NAME: &'static str = "hooks-probe";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[dsh_agents_seam::AGENTS_SERVICE];
    type Config = Config;

    async fn apply(ctx: Context, config: Config) -> Result<(), PluginError> {
        if let Some(reason) = config.reject_step {
            ctx.on_waterfall(&AGENT_PRE_STEP, move |_next| {
                let answer = Json::encode(&PreStepDecision::Reject {
                    reason: Some(reason.clone()),
                });
                async move { Ok(answer) }
            })?;
        }
        if let Some(decision) = config.pre_execute {
            let answer = Json::encode(&decision);
            ctx.on_waterfall(&TOOLS_PRE_EXECUTE, move |_next| {
                let answer = answer.clone();
                async move { Ok(answer) }
            })?;
        }
        if let Some(decision) = config.post_execute {
            let answer = Json::encode(&decision);
            ctx.on_waterfall(&TOOLS_POST_EXECUTE, move |_next| {
                let answer = answer.clone();
                async move { Ok(answer) }
            })?;
        }
        if let Some(text) = config.steer {
            let ctx_for_steer = ctx.clone();
            let sent = Arc::new(AtomicBool::new(false));
            ctx.on_waterfall(&TOOLS_POST_EXECUTE, move |next| {
                let (ctx, text, sent) = (ctx_for_steer.clone(), text.clone(), sent.clone());
                async move {
                    let post = next.payload();
                    if !sent.swap(true, Ordering::AcqRel)
                        && let Ok(Some(agents)) = ctx.get::<AgentsService>(AGENTS_SERVICE)
                    {
                        let message = Message::user(
                            "",
                            vec![ContentBlock::text(text)],
                            MessageSource::user(),
                        );
                        let _ = agents.steer(&post.call.session, &message);
                    }
                    next.run().await
                }
            })?;
        }
        if let Some(text) = config.continue_with {
            let answered = Arc::new(AtomicBool::new(false));
            ctx.on_serial(&AGENT_TURN_STOPPING, move |_stopping| {
                let (text, answered) = (text.clone(), answered.clone());
                async move {
                    if answered.swap(true, Ordering::AcqRel) {
                        return None;
                    }
                    let source = MessageSource::Plugin(PluginSource {
                        plugin: Some("hooks-probe".to_owned()),
                        ..PluginSource::default()
                    });
                    let message = Message::user("", vec![ContentBlock::text(text)], source);
                    Some(Json::encode(&Continuation { message }))
                }
            })?;
        }
        if let Some(text) = config.guard {
            let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
            let held = tools.guard(RString::from(ctx.row_id()), guard_box(Contains(text)));
            ctx.on_dispose(move || drop(held))?;
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(HooksProbe);
