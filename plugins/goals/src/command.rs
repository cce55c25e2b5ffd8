//! `/goal`: a person's command over the session's goal. `/goal` shows it, `/goal TEXT` sets it
//! (a completed goal is replaced), `/goal edit TEXT` changes its objective, `/goal pause`,
//! `/goal resume` and `/goal clear` do what they say. Setting or resuming a goal of an idle
//! session starts its first round at once (the round driver follows `goal/changed`).

use std::sync::Arc;

use dsh_commands_seam::{COMMANDS_LIST, COMMANDS_RUN};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{CommandOutcome, CommandSpec, GoalActivation, GoalPhase, GoalRef, GoalView};

use crate::store::{Mutation, Store};

const USAGE: &str = "Usage: /goal [<objective>|clear|edit <objective>|pause|resume]";

enum Parsed {
    /// What was typed does not read; says why.
    Invalid(String),
    Show,
    Create(String),
    Edit(String),
    Pause,
    Resume,
    Clear,
}

fn parse(args: &str) -> Parsed {
    let input = args.trim();
    let lower = input.to_lowercase();
    match lower.as_str() {
        "" => Parsed::Show,
        "clear" => Parsed::Clear,
        "pause" => Parsed::Pause,
        "resume" => Parsed::Resume,
        "edit" => Parsed::Invalid(format!("/goal edit needs the new objective.\n{USAGE}")),
        _ if lower.starts_with("edit ") || lower.starts_with("edit\t") => {
            Parsed::Edit(input[4..].trim().to_owned())
        }
        _ => Parsed::Create(input.to_owned()),
    }
}

fn hint(goal: &GoalView) -> &'static str {
    match (goal.goal.phase, goal.activation) {
        (GoalPhase::Active, GoalActivation::Armed) => {
            "/goal edit <objective>, /goal pause, /goal clear"
        }
        (GoalPhase::Complete, _) => "/goal <objective>, /goal clear",
        _ => "/goal edit <objective>, /goal resume, /goal clear",
    }
}

/// The goal as a person reads it.
pub(crate) fn render(title: &str, goal: &GoalView) -> String {
    let mut lines = vec![
        title.to_owned(),
        format!("Status: {}", goal.goal.phase.as_str()),
    ];
    if let Some(reason) = &goal.goal.blocked_reason {
        lines.push(format!("Blocker: {}: {}", reason.code, reason.message));
    }
    lines.push(format!("Objective: {}", goal.goal.objective));
    lines.push(format!(
        "Rounds: {}/{}",
        goal.rounds_started, goal.goal.max_goal_rounds
    ));
    lines.push(format!(
        "Activation: {}",
        match goal.activation {
            GoalActivation::Armed => "armed",
            GoalActivation::Disarmed => "disarmed",
        }
    ));
    lines.push(String::new());
    lines.push(format!("Commands: {}", hint(goal)));
    lines.join("\n")
}

fn reference(goal: &GoalView) -> GoalRef {
    GoalRef {
        id: goal.goal.id.clone(),
        revision: goal.goal.revision,
    }
}

fn run(store: &Store, session: &str, args: &str) -> CommandOutcome {
    let parsed = parse(args);
    if let Parsed::Invalid(text) = parsed {
        return CommandOutcome::error(text);
    }
    let current = match store.get(session) {
        Ok(current) => current,
        Err(error) => return CommandOutcome::error(error.to_string()),
    };
    let missing = |verb: &str| {
        CommandOutcome::error(format!("No goal is set; /goal {verb} needs one. {USAGE}"))
    };
    let (title, mutation) = match (parsed, &current) {
        (Parsed::Invalid(text), _) => return CommandOutcome::error(text),
        (Parsed::Show, None) => {
            return CommandOutcome::success(format!("No goal is set.\n{USAGE}"));
        }
        (Parsed::Show, Some(goal)) => return CommandOutcome::success(render("Goal", goal)),
        (Parsed::Create(_), Some(goal)) if goal.goal.phase != GoalPhase::Complete => {
            return CommandOutcome::error(format!(
                "A goal is already {}. Use /goal edit <objective> to change it or /goal clear before replacing it.",
                goal.goal.phase.as_str()
            ));
        }
        (Parsed::Edit(_), None) => return missing("edit"),
        (Parsed::Create(objective), _) => (
            "Goal created",
            Mutation::Create {
                objective,
                max_goal_rounds: None,
            },
        ),
        (Parsed::Edit(objective), Some(goal)) if goal.goal.phase == GoalPhase::Complete => (
            "Goal created",
            Mutation::Create {
                objective,
                max_goal_rounds: None,
            },
        ),
        (Parsed::Edit(objective), Some(goal)) => (
            "Goal updated",
            Mutation::Edit {
                reference: reference(goal),
                objective: Some(objective),
                max_goal_rounds: None,
            },
        ),
        (Parsed::Pause, None) => return missing("pause"),
        (Parsed::Resume, None) => return missing("resume"),
        (Parsed::Clear, None) => return CommandOutcome::success("No goal to clear."),
        (Parsed::Pause, Some(goal)) => ("Goal paused", Mutation::Pause(reference(goal))),
        (Parsed::Resume, Some(goal)) => ("Goal resumed", Mutation::Resume(reference(goal))),
        (Parsed::Clear, Some(goal)) => ("Goal cleared.", Mutation::Clear(reference(goal))),
    };
    match store.mutate(session, mutation) {
        Ok(Some(goal)) => CommandOutcome::success(render(title, &goal)),
        Ok(None) => CommandOutcome::success(title),
        Err(error) => CommandOutcome::error(format!(
            "{error}\nRun /goal to see the goal and what can be done with it."
        )),
    }
}

fn spec() -> CommandSpec {
    CommandSpec {
        name: "goal".to_owned(),
        description: "Set or view the goal the agent keeps working towards.".to_owned(),
        usage: Some("[<objective>|clear|edit <objective>|pause|resume]".to_owned()),
    }
}

/// Answers `/goal` on `commands/run` and declares it on `commands/list`.
pub(crate) fn answer(ctx: &Context, store: Arc<Store>) -> Result<(), PluginError> {
    ctx.on_waterfall(&COMMANDS_LIST, |next| async move {
        let mut specs: Vec<CommandSpec> = next.run().await?.decode().unwrap_or_default();
        specs.push(spec());
        Ok(Json::encode(&specs))
    })?;
    ctx.on_waterfall(&COMMANDS_RUN, move |next| {
        let store = store.clone();
        let call = next.payload().decode();
        async move {
            let call = match call {
                Ok(call) if call.name == "goal" => call,
                _ => return next.run().await,
            };
            Ok(Json::encode(&run(&store, &call.session, &call.args)))
        }
    })
}
