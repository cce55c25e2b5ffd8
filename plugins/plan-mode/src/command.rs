//! `/plan [off | message]`, answered on `commands/run` and declared on `commands/list`. Bare
//! `/plan` turns plan mode on, `/plan off` turns it off, anything else turns it on and sends the
//! text as the person's message (the next step's when a turn runs, else a turn of its own).
//! The change is logged at once as `plan/mode`; when the model was already asked something in
//! this session, a short notice is put in its inbox too, so the next request says the mode
//! changed in the conversation as well as in the prompt.

use std::sync::Arc;

use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_commands_seam::{COMMANDS_LIST, COMMANDS_RUN};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{
    CommandInvocation, CommandOutcome, CommandSpec, ContentBlock, Message, MessageSource,
    PluginSource,
};

use crate::state::{self, Modes};

pub(crate) const COMMAND: &str = "plan";

fn spec() -> CommandSpec {
    CommandSpec {
        name: COMMAND.to_owned(),
        description: "Plan before changing anything: read-only tools until you approve the plan (/plan off leaves).".to_owned(),
        usage: Some("[off | message]".to_owned()),
    }
}

/// The notice the model gets when the person changes the mode mid-conversation.
fn notice(active: bool) -> Message {
    let text = match active {
        true => "The person switched this session to plan mode.",
        false => "The person switched this session out of plan mode.",
    };
    let source = MessageSource::Plugin(PluginSource {
        plugin: Some("plan-mode".to_owned()),
        form: Some("notice".to_owned()),
        ..PluginSource::default()
    });
    Message::user("", vec![ContentBlock::text(text)], source)
}

fn run(ctx: &Context, modes: &Modes, call: &CommandInvocation) -> CommandOutcome {
    let args = call.args.trim();
    let wanted = args != "off";
    let agents = ctx.get::<AgentsService>(AGENTS_SERVICE).ok().flatten();
    if modes.active(ctx, &call.session) != wanted {
        let told = state::model_was_asked(ctx, &call.session);
        if let Err(error) = state::set(ctx, &call.session, wanted) {
            return CommandOutcome::error(format!("plan mode was not changed: {error}"));
        }
        if told && let Some(agents) = &agents {
            // The prompt says it too; a failed notice only loses the conversation's echo of it.
            let _ = agents.inject(&call.session, &notice(wanted));
        }
    } else if args.is_empty() || args == "off" {
        return CommandOutcome::success(match wanted {
            true => "Plan mode is already on. /plan off leaves it.",
            false => "Plan mode is already off.",
        });
    }
    if !wanted {
        return CommandOutcome::success("Plan mode off: the agent may change things again.");
    }
    if !args.is_empty() {
        let Some(agents) = agents else {
            return CommandOutcome::error(
                "plan mode is on, but there is no agent to send the message to",
            );
        };
        let message = Message::user("", vec![ContentBlock::text(args)], MessageSource::user());
        let sent = match agents.is_running(&call.session) {
            true => agents.steer(&call.session, &message),
            false => agents.followup(&call.session, &message),
        };
        if let Err(error) = sent {
            return CommandOutcome::error(format!(
                "plan mode is on, but the message was not sent: {error}"
            ));
        }
    }
    CommandOutcome::success(
        "Plan mode on: the agent explores with read-only tools and presents a plan for you to approve. /plan off leaves it.",
    )
}

/// Answers `/plan` and declares it.
pub(crate) fn answer(ctx: &Context, modes: Arc<Modes>) -> Result<(), PluginError> {
    ctx.on_waterfall(&COMMANDS_LIST, |next| async move {
        let mut specs: Vec<CommandSpec> = next.run().await?.decode().unwrap_or_default();
        specs.push(spec());
        Ok(Json::encode(&specs))
    })?;
    let owner = ctx.clone();
    ctx.on_waterfall(&COMMANDS_RUN, move |next| {
        let (ctx, modes) = (owner.clone(), modes.clone());
        let call = next.payload().decode();
        async move {
            match call {
                Ok(call) if call.name == COMMAND => Ok(Json::encode(&run(&ctx, &modes, &call))),
                _ => next.run().await,
            }
        }
    })
}
