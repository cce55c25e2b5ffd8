//! `/compact [focus]`: compacts an idle session now, whatever its pressure, keeping only its
//! newest exchange verbatim; the focus tells the summary what to keep above all. A session with a running turn is
//! refused (its next step would race the replace); so is one compacting already.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_commands_seam::{COMMANDS_LIST, COMMANDS_RUN};
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{CommandOutcome, CommandSpec};

use crate::compact::{CompactError, Keep, Settings, compact};
use crate::surface::Trackers;

fn spec() -> CommandSpec {
    CommandSpec {
        name: "compact".to_owned(),
        description: "Replace the older part of this session by a summary, now.".to_owned(),
        usage: Some("[what to keep]".to_owned()),
    }
}

fn running(ctx: &Context, session: &str) -> bool {
    let Ok(Some(agents)) = ctx.get::<AgentsService>(AGENTS_SERVICE) else {
        return false;
    };
    agents.is_running(session)
}

/// Compacts idle session `session` now (the command's and the service's way); fails naming
/// why.
pub(crate) async fn compact_now(
    ctx: &Context,
    settings: Settings,
    busy: &Mutex<HashSet<String>>,
    trackers: &Trackers,
    session: &str,
    focus: Option<&str>,
) -> Result<(), CompactError> {
    if running(ctx, session) {
        return Err(CompactError::Running);
    }
    if !lock(busy).insert(session.to_owned()) {
        return Err(CompactError::Busy);
    }
    let done = compact(ctx, &settings, session, None, Keep::Least, focus, trackers).await;
    lock(busy).remove(session);
    done
}

/// Answers `/compact` on `commands/run` and declares it on `commands/list`.
pub(crate) fn answer(
    ctx: &Context,
    settings: Settings,
    busy: Arc<Mutex<HashSet<String>>>,
    trackers: Arc<Trackers>,
) -> Result<(), PluginError> {
    ctx.on_waterfall(&COMMANDS_LIST, |next| async move {
        let mut specs: Vec<CommandSpec> = next.run().await?.decode().unwrap_or_default();
        specs.push(spec());
        Ok(Json::encode(&specs))
    })?;
    let owner = ctx.clone();
    ctx.on_waterfall(&COMMANDS_RUN, move |next| {
        let (ctx, busy, trackers) = (owner.clone(), busy.clone(), trackers.clone());
        let call = next.payload().decode();
        async move {
            let call = match call {
                Ok(call) if call.name == "compact" => call,
                _ => return next.run().await,
            };
            let focus = (!call.args.is_empty()).then_some(call.args.as_str());
            let outcome =
                match compact_now(&ctx, settings, &busy, &trackers, &call.session, focus).await {
                    Ok(()) => CommandOutcome::success(
                        "Compacted: the older part of this session is now a summary.",
                    ),
                    Err(error) => CommandOutcome::error(error.to_string()),
                };
            Ok(Json::encode(&outcome))
        }
    })?;
    Ok(())
}
