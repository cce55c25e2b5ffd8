//! `/undo` (the last turn with recorded changes not undone yet) and `/rewind TURN` (every such
//! turn from TURN on, "rewind to here"): owned here, declared on `commands/list` and answered
//! on `commands/run`; a client's `session.rewind` runs the same command line. A session with a
//! running turn is refused (its calls are still changing the workspace).

use std::sync::Arc;

use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_commands_seam::{COMMANDS_LIST, COMMANDS_RUN};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{CommandOutcome, CommandSpec};
use dsh_sessions_seam::{NewEventRecord, open_live};

use crate::events::{ChangeEvent, Recorded, RevertEvent};
use crate::recorder::Recorder;
use crate::revert::{Refusal, revert};

fn specs() -> [CommandSpec; 2] {
    [
        CommandSpec {
            name: "undo".to_owned(),
            description: "Revert the workspace changes of the last turn (files written, edited, or changed by commands).".to_owned(),
            usage: None,
        },
        CommandSpec {
            name: "rewind".to_owned(),
            description: "Revert the workspace changes of turn TURN and of every turn after it.".to_owned(),
            usage: Some("TURN".to_owned()),
        },
    ]
}

/// How many paths an outcome names before it says how many more.
const SHOWN: usize = 20;

fn summary(turns: &[u64], paths: &[String]) -> String {
    let turns_text = match turns {
        [one] => format!("turn {one}"),
        many => format!(
            "turns {}",
            many.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut shown: Vec<&str> = paths.iter().take(SHOWN).map(String::as_str).collect();
    let more = paths.len().saturating_sub(SHOWN);
    let more_text = format!("and {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    match paths.is_empty() {
        true => format!("Undid {turns_text}: the workspace already was as before it."),
        false => format!(
            "Undid {turns_text}: {} path(s) put back: {}.",
            paths.len(),
            shown.join(", ")
        ),
    }
}

/// Runs `/undo` (`rewind_from` none) or `/rewind TURN` for `session`.
pub(crate) async fn undo(
    ctx: &Context,
    recorder: &Arc<Recorder>,
    session: &str,
    rewind_from: Option<u64>,
) -> CommandOutcome {
    if let Ok(Some(agents)) = ctx.get::<AgentsService>(AGENTS_SERVICE)
        && agents.is_running(session)
    {
        return CommandOutcome::error("a turn is running: undo once it has ended");
    }
    let live = match open_live(ctx, session) {
        Ok(live) => live,
        Err(error) => return CommandOutcome::error(format!("session `{session}`: {error}")),
    };
    let recorded = Recorded::of(&live);
    let undoable = recorded.undoable();
    let turns: Vec<u64> = match rewind_from {
        None => undoable.last().copied().into_iter().collect(),
        Some(from) => undoable.into_iter().filter(|turn| *turn >= from).collect(),
    };
    if turns.is_empty() {
        let why = match rewind_from {
            None => "no turn of this session has changes left to undo".to_owned(),
            Some(from) => format!("no turn from {from} on has changes left to undo"),
        };
        return CommandOutcome::error(Refusal::Nothing(why).to_string());
    }
    let events: Vec<ChangeEvent> = recorded.of_turns(&turns).into_iter().cloned().collect();
    let worker = recorder.clone();
    let done = ctx
        .blocking(move || {
            let refs: Vec<&ChangeEvent> = events.iter().collect();
            revert(&refs, &worker.store, worker.limits.max_file_bytes)
        })
        .await;
    let paths = match done {
        Ok(Ok(paths)) => paths,
        Ok(Err(refusal)) => return CommandOutcome::error(refusal.to_string()),
        Err(error) => return CommandOutcome::error(error.to_string()),
    };
    let event = RevertEvent {
        turns: turns.clone(),
        paths: paths.clone(),
        by: if rewind_from.is_some() {
            "rewind"
        } else {
            "undo"
        }
        .to_owned(),
    };
    if let Err(error) = live
        .append(vec![NewEventRecord::of(&event)].into())
        .into_result()
    {
        return CommandOutcome::error(format!(
            "the workspace was put back but undo/revert was not logged: {error}"
        ));
    }
    CommandOutcome::success(summary(&turns, &paths))
}

/// Declares and answers the commands.
pub(crate) fn answer(ctx: &Context, recorder: Arc<Recorder>) -> Result<(), PluginError> {
    ctx.on_waterfall(&COMMANDS_LIST, |next| async move {
        let mut all: Vec<CommandSpec> = next.run().await?.decode().unwrap_or_default();
        all.extend(specs());
        Ok(Json::encode(&all))
    })?;
    let owner = ctx.clone();
    ctx.on_waterfall(&COMMANDS_RUN, move |next| {
        let (ctx, recorder) = (owner.clone(), recorder.clone());
        let call = next.payload().decode();
        async move {
            let call = match call {
                Ok(call) if call.name == "undo" || call.name == "rewind" => call,
                _ => return next.run().await,
            };
            let outcome = match (call.name.as_str(), call.args.trim()) {
                ("undo", "") => undo(&ctx, &recorder, &call.session, None).await,
                ("rewind", turn) => match turn.parse::<u64>() {
                    Ok(from) => undo(&ctx, &recorder, &call.session, Some(from)).await,
                    Err(_) => CommandOutcome::error(format!(
                        "usage: /rewind TURN (a turn number; `{turn}` is not one)"
                    )),
                },
                _ => CommandOutcome::error("usage: /undo (no arguments)"),
            };
            Ok(Json::encode(&outcome))
        }
    })
}
