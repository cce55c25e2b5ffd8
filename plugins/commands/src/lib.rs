//! Plugin `commands`: provides `commands`. A message that is a single text starting with `/`
//! runs a command instead of reaching the model: the run is logged as `command/run` and
//! `command/done` (neither is model input) and the outcome is the person's to read. Commands
//! belong to the plugins that answer them on `commands/run`; this one answers `/help`,
//! `/model PROVIDER/MODEL`, `/permission PRESET` and `/export [FILE]` itself, and `compaction`
//! answers `/compact [focus]`.

mod builtin;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RArc, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_commands_seam::{COMMANDS_LIST, COMMANDS_RUN, COMMANDS_SERVICE, Commands, Commands_TO};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, WaterfallEvent};
use dsh_protocol::{
    CommandDoneEvent, CommandInvocation, CommandOutcome, CommandRunEvent, CommandSpec, command_line,
};
use dsh_sessions_seam::{NewEventRecord, open_live};

struct Runner {
    ctx: Context,
    run: Channel<WaterfallEvent<Json<CommandInvocation>, Json<CommandOutcome>>>,
    list: Channel<WaterfallEvent<Json<()>, Json<Vec<CommandSpec>>>>,
    next_id: AtomicU64,
}

impl Runner {
    async fn catalog(&self) -> Vec<CommandSpec> {
        let mut all = self
            .list
            .waterfall(RArc::new(Json::encode(&())), |_| async {
                Ok(Json::encode(&Vec::<CommandSpec>::new()))
            })
            .await
            .ok()
            .and_then(|specs| specs.decode().ok())
            .unwrap_or_default();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.dedup_by(|a, b| a.name == b.name);
        all
    }

    async fn execute(&self, session: String, text: String) -> CommandOutcome {
        let Some((name, args)) = command_line(&text) else {
            return CommandOutcome::error(format!("`{text}` is not a command line (/name args)"));
        };
        let Ok(live) = open_live(&self.ctx, &session) else {
            return CommandOutcome::error(format!("session `{session}` is not live here"));
        };
        let command_id = format!(
            "{session}-command-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let run = NewEventRecord::of(&CommandRunEvent {
            command_id: command_id.clone(),
            name: name.clone(),
            args: (!args.is_empty()).then(|| args.clone()),
            source: "user".to_owned(),
        });
        if let Err(error) = live.append(vec![run].into()).into_result() {
            return CommandOutcome::error(format!("command/run not logged: {error}"));
        }
        let invocation = CommandInvocation {
            command_id: command_id.clone(),
            session: session.clone(),
            name: name.clone(),
            args,
        };
        let outcome = if name == "help" {
            builtin::help(&self.catalog().await)
        } else {
            self.run
                .waterfall(RArc::new(Json::encode(&invocation)), move |_| async move {
                    Ok(Json::encode(&CommandOutcome::error(format!(
                        "unknown command `/{name}`: /help lists the commands"
                    ))))
                })
                .await
                .ok()
                .and_then(|outcome| outcome.decode().ok())
                .unwrap_or_else(|| CommandOutcome::error("the command's answer does not read"))
        };
        let done = NewEventRecord::of(&CommandDoneEvent {
            command_id,
            kind: outcome.kind,
            text: Some(outcome.text.clone()),
        });
        if let Err(error) = live.append(vec![done].into()).into_result() {
            return CommandOutcome::error(format!("command/done not logged: {error}"));
        }
        outcome
    }
}

struct Handle(Arc<Runner>);

impl Commands for Handle {
    fn run(&self, session: RString, text: RString) -> FfiFuture<Json<CommandOutcome>> {
        let runner = self.0.clone();
        async move {
            Json::encode(
                &runner
                    .execute(session.into_string(), text.into_string())
                    .await,
            )
        }
        .into_ffi()
    }

    fn list(&self) -> FfiFuture<Json<Vec<CommandSpec>>> {
        let runner = self.0.clone();
        async move { Json::encode(&runner.catalog().await) }.into_ffi()
    }
}

pub struct CommandsPlugin;

impl Plugin for CommandsPlugin {
    const NAME: &'static str = "commands";
    const OPTIONAL: &'static [&'static str] = &[
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_llm_seam::LLM_SERVICE,
        dsh_sessions_seam::SESSION_ARCHIVE_SERVICE,
    ];
    const PROVIDES: &'static [&'static str] = &[COMMANDS_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let runner = Arc::new(Runner {
            ctx: ctx.clone(),
            run: ctx.channel(&COMMANDS_RUN)?,
            list: ctx.channel(&COMMANDS_LIST)?,
            next_id: AtomicU64::new(1),
        });
        ctx.on_waterfall(&COMMANDS_LIST, |next| async move {
            let mut specs: Vec<CommandSpec> = next.run().await?.decode().unwrap_or_default();
            specs.extend(builtin::specs());
            Ok(Json::encode(&specs))
        })?;
        let owner = ctx.clone();
        ctx.on_waterfall(&COMMANDS_RUN, move |next| {
            let ctx = owner.clone();
            let call = next.payload().decode();
            async move {
                let Ok(call) = call else {
                    return next.run().await;
                };
                let outcome = match call.name.as_str() {
                    "model" => builtin::model(&ctx, &call),
                    "permission" => builtin::permission(&ctx, &call),
                    "export" => builtin::export(&ctx, &call).await,
                    _ => return next.run().await,
                };
                Ok(Json::encode(&outcome))
            }
        })?;
        ctx.provide(
            COMMANDS_SERVICE,
            Commands_TO::from_value(Handle(runner), TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(CommandsPlugin);
