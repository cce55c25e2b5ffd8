//! `/name [request]`: a person runs a skill. The skill's `<skill_content>` block enters the
//! session as a plugin message (source `plugin` `skills`, form `skill`, key the skill's name)
//! and starts a turn; the request, when there is one, follows it as the person's own message.
//! The command line itself never reaches the model: `commands` logs it as `command/run` and
//! `command/done`. Skills that are not user-invocable are not commands; a skill named like a
//! command another plugin declares leaves that command alone. The `/` menu lists the skills of
//! every live session's workspace and of the host's working directory.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENTS_SERVICE, AgentsExt, AgentsService};
use dsh_commands_seam::{COMMANDS_LIST, COMMANDS_RUN};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Channel, lock};
use dsh_protocol::{
    AgentStatus, AgentSummary, CommandInvocation, CommandOutcome, CommandSpec, ContentBlock,
    Message, MessageSource, PluginSource, preset_scope,
};

use crate::library::Library;
use crate::skill::is_skill_name;
use crate::tool::content;

/// The plugin name its messages carry.
const PLUGIN: &str = "skills";

struct Runner {
    ctx: Context,
    library: Arc<Library>,
    /// The commands other plugins declare, as the last listing found them.
    others: Mutex<HashSet<String>>,
    list: Channel<WaterfallEvent<Json<()>, Json<Vec<CommandSpec>>>>,
}

impl Runner {
    fn agents(&self) -> Vec<AgentSummary> {
        match self.ctx.get::<AgentsService>(AGENTS_SERVICE) {
            Ok(Some(agents)) => agents.list().decode().unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The user-invocable skills of the workspaces in use, as command specs.
    async fn specs(&self) -> Vec<CommandSpec> {
        let mut places: Vec<(String, Vec<String>)> = self
            .agents()
            .iter()
            .map(|agent| (agent.cwd.clone(), agent_scope(agent)))
            .collect();
        if let Ok(dir) = std::env::current_dir() {
            places.push((dir.to_string_lossy().into_owned(), Vec::new()));
        }
        places.sort();
        places.dedup();
        let mut specs: Vec<CommandSpec> = Vec::new();
        for (cwd, scope) in places {
            let Ok(found) = self.library.for_session(&cwd, &scope).await else {
                continue;
            };
            for skill in found.skills.iter().filter(|skill| skill.user_invocable) {
                if !specs.iter().any(|spec| spec.name == skill.name) {
                    specs.push(CommandSpec {
                        name: skill.name.clone(),
                        description: format!(
                            "Skill: {}",
                            skill
                                .description
                                .split_whitespace()
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                        usage: Some("[request]".to_owned()),
                    });
                }
            }
        }
        specs
    }

    /// Runs skill `call.name` when it is one: `None` leaves the command to the other plugins.
    async fn run(&self, call: &CommandInvocation) -> Option<CommandOutcome> {
        if !is_skill_name(&call.name) {
            return None;
        }
        let agent = self
            .agents()
            .into_iter()
            .find(|agent| agent.id == call.session)?;
        let found = self
            .library
            .for_session(&agent.cwd, &agent_scope(&agent))
            .await
            .ok()?;
        found.get(&call.name).filter(|skill| skill.user_invocable)?;
        // Refreshes what the other plugins declare (this plugin's listener records it).
        let _ = self
            .list
            .waterfall(RArc::new(Json::encode(&())), |_| async {
                Ok(Json::encode(&Vec::<CommandSpec>::new()))
            })
            .await;
        if lock(&self.others).contains(&call.name) {
            return None;
        }
        Some(self.start(call, &agent).await)
    }

    async fn start(&self, call: &CommandInvocation, agent: &AgentSummary) -> CommandOutcome {
        if agent.status == AgentStatus::Running {
            return CommandOutcome::error(format!(
                "a turn is running: run /{} once it ends",
                call.name
            ));
        }
        let Ok(Some(agents)) = self.ctx.get::<AgentsService>(AGENTS_SERVICE) else {
            return CommandOutcome::error("no agents service to run the skill in");
        };
        let text = match content(
            &self.library,
            &agent.cwd,
            &agent_scope(agent),
            &call.name,
            false,
        )
        .await
        {
            Ok(text) => text,
            Err(error) => return CommandOutcome::error(error.to_string()),
        };
        let source = MessageSource::Plugin(PluginSource {
            plugin: Some(PLUGIN.to_owned()),
            form: Some("skill".to_owned()),
            key: Some(call.name.clone()),
            ..PluginSource::default()
        });
        let skill = Message::user("", vec![ContentBlock::text(text)], source);
        // The skill first, then the request it is run for, in one turn: the skill waits at the
        // next step boundary, the request starts the turn that claims both.
        let sent = if call.args.is_empty() {
            agents.followup(&call.session, &skill)
        } else {
            let request = Message::user(
                "",
                vec![ContentBlock::text(call.args.as_str())],
                MessageSource::user(),
            );
            agents
                .inject(&call.session, &skill)
                .and_then(|_| agents.followup(&call.session, &request))
        };
        match sent {
            Ok(_) => CommandOutcome::success(format!("Running skill `{}`.", call.name)),
            Err(error) => CommandOutcome::error(format!("the skill could not be sent: {error}")),
        }
    }
}

/// The tool scope a plugin serving `agent`'s preset registers in (what `skills/roots`
/// listeners look for; the workspace's scope adds no skill folders).
fn agent_scope(agent: &AgentSummary) -> Vec<String> {
    agent
        .agent_preset
        .iter()
        .map(|id| preset_scope(id))
        .collect()
}

/// Answers the skills' names on `commands/run` and declares them on `commands/list`; both
/// listeners come first, so they see what every other plugin declares.
pub(crate) fn answer(ctx: &Context, library: Arc<Library>) -> Result<(), PluginError> {
    let runner = Arc::new(Runner {
        ctx: ctx.clone(),
        library,
        others: Mutex::new(HashSet::new()),
        list: ctx.channel(&COMMANDS_LIST)?,
    });
    let lister = runner.clone();
    ctx.prepend().on_waterfall(&COMMANDS_LIST, move |next| {
        let runner = lister.clone();
        async move {
            let mut specs: Vec<CommandSpec> = next.run().await?.decode().unwrap_or_default();
            let others: HashSet<String> = specs.iter().map(|spec| spec.name.clone()).collect();
            // `/help` is the runner's own, answered before any listener.
            let taken = |name: &str| name == "help" || others.contains(name);
            let skills = runner.specs().await;
            specs.extend(skills.into_iter().filter(|spec| !taken(&spec.name)));
            *lock(&runner.others) = others;
            Ok(Json::encode(&specs))
        }
    })?;
    ctx.prepend().on_waterfall(&COMMANDS_RUN, move |next| {
        let runner = runner.clone();
        let call = next.payload().decode();
        async move {
            let Ok(call) = call else {
                return next.run().await;
            };
            match runner.run(&call).await {
                Some(outcome) => Ok(Json::encode(&outcome)),
                None => next.run().await,
            }
        }
    })?;
    Ok(())
}
