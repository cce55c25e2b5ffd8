//! The commands this plugin answers itself: `/help` (the catalog), `/model PROVIDER/MODEL` (the
//! route of the session's next turns), `/permission PRESET` (the session's sandbox mode and
//! approval policy, logged as the page's selector logs them) and `/export [FILE]` (the session's
//! archive, written by the store's `session_archive` service).

use abi_stable::std_types::{RString, RVec};
use dsh_agents_seam::{AGENTS_SERVICE, AgentsService};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::Context;
use dsh_protocol::{CommandInvocation, CommandOutcome, CommandSpec, PermissionPreset};
use dsh_sessions_seam::{
    NewEventRecord, SESSION_ARCHIVE_SERVICE, SessionArchiveService, open_live,
};

/// The specs of the built-in commands.
pub(crate) fn specs() -> Vec<CommandSpec> {
    vec![
        CommandSpec {
            name: "help".to_owned(),
            description: "List the commands.".to_owned(),
            usage: None,
        },
        CommandSpec {
            name: "model".to_owned(),
            description: "Use another model for this session's next turns.".to_owned(),
            usage: Some("PROVIDER/MODEL".to_owned()),
        },
        CommandSpec {
            name: "permission".to_owned(),
            description: "Choose this session's permissions: read-only, workspace-write, danger-full-access or ask-every-command.".to_owned(),
            usage: Some("PRESET".to_owned()),
        },
        CommandSpec {
            name: "export".to_owned(),
            description: "Write this session, its subagents' sessions and its images to one archive (dsh-host session import loads it).".to_owned(),
            usage: Some("[FILE]".to_owned()),
        },
    ]
}

/// `/export [FILE]`: FILE relative to the session's folder; without one, under the home's
/// `exports/`.
pub(crate) async fn export(ctx: &Context, call: &CommandInvocation) -> CommandOutcome {
    let Ok(Some(archive)) = ctx.get::<SessionArchiveService>(SESSION_ARCHIVE_SERVICE) else {
        return CommandOutcome::error(
            "no `session_archive` service is running (the session store provides it)",
        );
    };
    let path = call.args.trim();
    let path = (!path.is_empty()).then(|| RString::from(path));
    let written = archive
        .export_to(call.session.as_str().into(), path.into())
        .await
        .into_result();
    match written.map(|report| report.decode()) {
        Ok(Ok(report)) => {
            let mut text = format!(
                "Exported {} session(s), {} events and {} image(s) to {} ({} bytes).",
                report.sessions,
                report.events,
                report.attachments,
                report.path.as_deref().unwrap_or(&report.file_name),
                report.bytes
            );
            if !report.missing_attachments.is_empty() {
                text.push_str(&format!(
                    " Not in the store, so not exported: {}.",
                    report.missing_attachments.join(", ")
                ));
            }
            CommandOutcome::success(text)
        }
        Ok(Err(error)) => {
            CommandOutcome::error(format!("the export's report does not read: {error}"))
        }
        Err(error) => CommandOutcome::error(format!("export failed: {error}")),
    }
}

/// The catalog as `/help` shows it.
pub(crate) fn help(all: &[CommandSpec]) -> CommandOutcome {
    let lines: Vec<String> = all
        .iter()
        .map(|spec| match &spec.usage {
            Some(usage) => format!("/{} {usage}: {}", spec.name, spec.description),
            None => format!("/{}: {}", spec.name, spec.description),
        })
        .collect();
    CommandOutcome::success(lines.join("\n"))
}

/// `/model PROVIDER/MODEL`. The provider must be one an adapter serves; the model may be any
/// id, listed or not: a catalog is advisory (Ollama or vLLM serve models no list names), and
/// the endpoint itself says whether it has the model when the next turn asks for it.
pub(crate) fn model(ctx: &Context, call: &CommandInvocation) -> CommandOutcome {
    let Some((provider, model)) = call
        .args
        .trim()
        .split_once('/')
        .filter(|(provider, model)| !provider.is_empty() && !model.trim().is_empty())
    else {
        return CommandOutcome::error(
            "usage: /model PROVIDER/MODEL (for example /model deepseek-official/deepseek-v4-pro)",
        );
    };
    let providers: Vec<String> = ctx
        .get::<LlmService>(LLM_SERVICE)
        .ok()
        .flatten()
        .map(|llm| {
            llm.providers()
                .into_iter()
                .map(|name| name.into_string())
                .collect()
        })
        .unwrap_or_default();
    if !providers.iter().any(|known| known == provider) {
        return CommandOutcome::error(format!(
            "no provider `{provider}` is registered (registered: {})",
            if providers.is_empty() {
                "none".to_owned()
            } else {
                providers.join(", ")
            }
        ));
    }
    let Ok(Some(agents)) = ctx.get::<AgentsService>(AGENTS_SERVICE) else {
        return CommandOutcome::error("no `agents` service is running");
    };
    match agents
        .set_route(call.session.as_str().into(), provider.into(), model.into())
        .into_result()
    {
        Ok(()) => CommandOutcome::success(format!("The next turns use {provider}/{model}.")),
        Err(error) => CommandOutcome::error(error.to_string()),
    }
}

/// `/permission PRESET`.
pub(crate) fn permission(ctx: &Context, call: &CommandInvocation) -> CommandOutcome {
    let Some(preset) = PermissionPreset::parse(call.args.trim()) else {
        return CommandOutcome::error(
            "usage: /permission read-only | workspace-write | danger-full-access | ask-every-command",
        );
    };
    let Ok(session) = open_live(ctx, &call.session) else {
        return CommandOutcome::error(format!("session `{}` is not live here", call.session));
    };
    let (chosen, mode, policy) = preset.events();
    let batch = vec![
        NewEventRecord::of(&chosen),
        NewEventRecord::of(&mode),
        NewEventRecord::of(&policy),
    ];
    match session.append(RVec::from(batch)).into_result() {
        Ok(_) => CommandOutcome::success(format!(
            "Permissions: {} from the next call on.",
            preset.as_str()
        )),
        Err(error) => CommandOutcome::error(error.to_string()),
    }
}
