//! A session's modes are the permission presets (`session/set_mode` logs the chosen one, as
//! `/permission` does, and the change comes back as `current_mode_update`), and plan mode
//! where its row is mounted (`plan`: turned on and off through `/plan` and `/plan off`, as a
//! person would, so the model hears of the change; choosing a preset leaves it); its model is a
//! config option (`session/set_config_option` sets the route of its next turns), and so is its
//! agent preset where presets are mounted (chosen before the session's first turn).

use std::sync::Arc;

use dsh_agents_seam::presets::{AGENT_PRESETS_SERVICE, AgentPresetsService};
use dsh_client_protocol::{
    ClientRequest, CommandList, Done, NoParams, SelectModel, SelectPreset, SetPermission,
};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_protocol::kinds::{PERMISSION_PRESET, PLAN_MODE, SANDBOX_MODE};
use dsh_protocol::{
    CommandKind, PermissionPreset, PermissionPresetEvent, PlanModeEvent, PresetSummary,
    SandboxModeEvent,
};
use dsh_sessions_seam::open_live;
use serde_json::value::RawValue;

use crate::schema::{
    ConfigOption, ConfigValue, Empty, SessionMode, SessionModeState, SetConfigOptionRequest,
    SetConfigOptionResponse, SetModeRequest,
};
use crate::server::Server;
use crate::wire::{Id, RpcError, params};

/// The id of plan mode among the modes (and the command that turns it on).
const PLAN: &str = "plan";

/// The id of the model option.
const MODEL_OPTION: &str = "model";

/// The id of the agent-preset option (a custom category, as ACP asks of one it does not name).
const PRESET_OPTION: &str = "agent_preset";

fn describe(preset: PermissionPreset) -> (&'static str, &'static str) {
    match preset {
        PermissionPreset::ReadOnly => (
            "Read only",
            "Look, change nothing; anything wider is asked first",
        ),
        PermissionPreset::WorkspaceWrite => (
            "Workspace",
            "Change files in the workspace; anything wider is asked first",
        ),
        PermissionPreset::DangerFullAccess => (
            "Full access",
            "Everything, unconfined, and nothing is asked",
        ),
        PermissionPreset::AskEveryCommand => (
            "Ask every command",
            "Work in the workspace, and every shell command is asked first",
        ),
    }
}

/// The preset `session` runs under: its latest `permission/preset` (or `sandbox/mode`), else
/// the host's default.
fn current_preset(server: &Server, session: &str) -> PermissionPreset {
    let logged = open_live(&server.ctx, session).ok().and_then(|live| {
        live.events(0, live.event_count())
            .iter()
            .rev()
            .find_map(|record| match record.kind.as_str() {
                PERMISSION_PRESET => record
                    .decode::<PermissionPresetEvent>()?
                    .ok()
                    .and_then(|event| PermissionPreset::parse(&event.preset)),
                SANDBOX_MODE => record
                    .decode::<SandboxModeEvent>()?
                    .ok()
                    .and_then(|event| PermissionPreset::parse(&event.mode)),
                _ => None,
            })
    });
    logged
        .or_else(|| {
            std::env::var("DSH_PERMISSION_MODE")
                .ok()
                .and_then(|mode| PermissionPreset::parse(&mode))
        })
        .unwrap_or(PermissionPreset::WorkspaceWrite)
}

/// Whether `session` is planning: its latest `plan/mode` turned it on.
fn planning(server: &Server, session: &str) -> bool {
    open_live(&server.ctx, session)
        .ok()
        .and_then(|live| {
            live.events(0, live.event_count())
                .iter()
                .rev()
                .find_map(|record| match record.kind.as_str() {
                    PLAN_MODE => record.decode::<PlanModeEvent>()?.ok(),
                    _ => None,
                })
        })
        .is_some_and(|mode| mode.active)
}

/// The mode `session` is in: `plan` while planning, else its permission preset.
pub(crate) fn current_mode_id(server: &Server, session: &str) -> String {
    match planning(server, session) {
        true => PLAN.to_owned(),
        false => current_preset(server, session).as_str().to_owned(),
    }
}

/// Whether plan mode is offered: the `/plan` command runs here (its row is mounted).
pub(crate) async fn plan_offered(server: &Server) -> bool {
    let listed: Result<CommandList, _> = server
        .door
        .call(&server.ctx, ClientRequest::CommandsList(NoParams {}))
        .await;
    listed.is_ok_and(|listed| listed.commands.iter().any(|spec| spec.name == PLAN))
}

pub(crate) fn mode_state(server: &Server, session: &str, plan: bool) -> SessionModeState {
    let presets = PermissionPreset::ALL.iter().map(|preset| {
        let (name, description) = describe(*preset);
        SessionMode {
            id: preset.as_str().to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
        }
    });
    let plan = plan.then(|| SessionMode {
        id: PLAN.to_owned(),
        name: "Plan".to_owned(),
        description:
            "Explore with read-only tools and propose a plan; nothing changes until you approve it"
                .to_owned(),
    });
    SessionModeState {
        current_mode_id: current_mode_id(server, session),
        available_modes: presets.chain(plan).collect(),
    }
}

/// `session/set_mode`: answered once the mode is logged (plan mode's command may take a
/// moment: it tells a model that was already asked something).
pub(crate) fn set_mode(server: &Arc<Server>, id: Id, raw: Option<&RawValue>) {
    match params::<SetModeRequest>(raw) {
        Ok(request) => server.later(id, move |server| async move {
            switch_mode(&server, request).await
        }),
        Err(error) => server.answer::<Empty>(&id, Err(error)),
    }
}

async fn switch_mode(server: &Server, request: SetModeRequest) -> Result<Empty, RpcError> {
    let session = server.session(&request.session_id).ok_or_else(|| {
        RpcError::invalid_params(format!("unknown session: {}", request.session_id))
    })?;
    let plan = plan_offered(server).await;
    let not_a_mode = || {
        RpcError::invalid_params(format!(
            "modeId: `{}` is not a mode of this agent (read-only, workspace-write, danger-full-access, ask-every-command{})",
            request.mode_id,
            if plan { ", plan" } else { "" }
        ))
    };
    if request.mode_id == PLAN {
        if !plan {
            return Err(not_a_mode());
        }
        if !planning(server, &session.id) {
            run_plan_command(server, &session.id, "/plan").await?;
        }
        return Ok(Empty {});
    }
    let preset = PermissionPreset::parse(&request.mode_id).ok_or_else(not_a_mode)?;
    // A preset chosen while planning leaves plan mode first, as `/plan off` would.
    if planning(server, &session.id) {
        run_plan_command(server, &session.id, "/plan off").await?;
    }
    let _: Done = server
        .door
        .call(
            &server.ctx,
            ClientRequest::SessionSetPermission(SetPermission {
                session_id: session.id.clone(),
                preset: preset.as_str().to_owned(),
            }),
        )
        .await
        .map_err(|refused| refused.to_acp("session/set_mode", "modeId"))?;
    Ok(Empty {})
}

/// Runs plan mode's command `line` in `session`; its error outcome is the call's error.
async fn run_plan_command(server: &Server, session: &str, line: &str) -> Result<(), RpcError> {
    match crate::editor::run_line(server, session, line).await {
        Ok(outcome) if outcome.kind == CommandKind::Error => Err(RpcError::internal(format!(
            "session/set_mode: {line}: {}",
            outcome.text
        ))),
        Ok(_) => Ok(()),
        Err(refused) => Err(refused.to_acp("session/set_mode", "modeId")),
    }
}

/// The route of `session`'s next turns.
fn route_of(server: &Server, session: &str) -> (String, String) {
    server
        .agents()
        .ok()
        .and_then(|agents| agents.list().decode().ok())
        .and_then(|listed| listed.into_iter().find(|agent| agent.id == session))
        .map(|agent| (agent.provider, agent.model))
        .unwrap_or_else(|| dsh_plugin_api::lock(&server.route).clone())
}

/// The agent-preset option: every preset that reads, and the session's (`standard`, the plain
/// agent, when it names none). None where no presets are mounted.
fn preset_option(server: &Server, session: &str) -> Option<ConfigOption> {
    let presets = server
        .ctx
        .get::<AgentPresetsService>(AGENT_PRESETS_SERVICE)
        .ok()
        .flatten()?;
    let listed: Vec<PresetSummary> = presets.list().decode().ok()?;
    let current = server
        .agents()
        .ok()
        .and_then(|agents| agents.list().decode().ok())
        .and_then(|agents: Vec<dsh_protocol::AgentSummary>| {
            agents.into_iter().find(|agent| agent.id == session)
        })
        .and_then(|agent| agent.agent_preset)
        .unwrap_or_else(|| "standard".to_owned());
    Some(ConfigOption {
        id: PRESET_OPTION.to_owned(),
        name: "Agent preset".to_owned(),
        category: "_agent_preset",
        kind: "select",
        current_value: current,
        options: listed
            .into_iter()
            .filter(|preset| preset.problem.is_none())
            .map(|preset| ConfigValue {
                value: preset.id,
                name: preset.name,
            })
            .collect(),
    })
}

/// The model option: every model the registered providers list, and the current route; then
/// the agent preset.
pub(crate) fn config_options(server: &Server, session: &str) -> Vec<ConfigOption> {
    let mut options = vec![model_option(server, session)];
    options.extend(preset_option(server, session));
    options
}

/// Sends `session`'s options again (`config_option_update`), its agent preset as `preset` when
/// given: one just logged, which the agent takes up only after logging it.
pub(crate) fn announce_options(server: &Server, session: &str, preset: Option<&str>) {
    let mut config_options = config_options(server, session);
    if let Some(preset) = preset {
        for option in config_options.iter_mut().filter(|o| o.id == PRESET_OPTION) {
            preset.clone_into(&mut option.current_value);
        }
    }
    server.update(
        session,
        crate::updates::SessionUpdate::ConfigOptionUpdate { config_options },
    );
}

fn model_option(server: &Server, session: &str) -> ConfigOption {
    let (provider, model) = route_of(server, session);
    let current = format!("{provider}/{model}");
    let mut options: Vec<ConfigValue> = Vec::new();
    if let Ok(Some(llm)) = server.ctx.get::<LlmService>(LLM_SERVICE) {
        for provider in llm.providers() {
            let models = llm
                .models(provider.clone())
                .into_option()
                .and_then(|models| models.decode().ok())
                .unwrap_or_default();
            for listed in models {
                options.push(ConfigValue {
                    value: format!("{provider}/{}", listed.id),
                    name: format!("{} ({provider})", listed.name.unwrap_or(listed.id)),
                });
            }
        }
    }
    if !provider.is_empty() && !options.iter().any(|option| option.value == current) {
        options.insert(
            0,
            ConfigValue {
                value: current.clone(),
                name: current.clone(),
            },
        );
    }
    ConfigOption {
        id: MODEL_OPTION.to_owned(),
        name: "Model".to_owned(),
        category: "model",
        kind: "select",
        current_value: current,
        options,
    }
}

/// Sets option `request` of `session` through the clients service (a model route, or an agent
/// preset for a session that has had no turn), then answers the options as they stand. The
/// editor is not sent the change as well: the answer carries it.
fn set_option(server: &Arc<Server>, id: Id, session: String, request: SetConfigOptionRequest) {
    server.later(id, move |task| async move {
        let open = task.session(&session);
        let _choosing = open.as_ref().map(|open| open.editor.choosing_options());
        let (change, field) = match request.config_id.as_str() {
            PRESET_OPTION => (
                ClientRequest::AgentPresetSelect(SelectPreset {
                    session_id: session.clone(),
                    preset_id: request.value.clone(),
                }),
                format!("value: agent preset `{}`", request.value),
            ),
            _ => (
                ClientRequest::SessionSelectModel(SelectModel {
                    session_id: session.clone(),
                    model: request.value.clone(),
                    effort: None,
                }),
                "value".to_owned(),
            ),
        };
        let _: Done = task
            .door
            .call(&task.ctx, change)
            .await
            .map_err(|refused| refused.to_acp("session/set_config_option", &field))?;
        Ok(SetConfigOptionResponse {
            config_options: config_options(&task, &session),
        })
    });
}

pub(crate) fn set_config_option(server: &Arc<Server>, id: Id, raw: Option<&RawValue>) {
    let request = match params::<SetConfigOptionRequest>(raw).and_then(|request| {
        let session = server.session(&request.session_id).ok_or_else(|| {
            RpcError::invalid_params(format!("unknown session: {}", request.session_id))
        })?;
        Ok((request, session.id.clone()))
    }) {
        Ok(found) => found,
        Err(error) => return server.answer::<Empty>(&id, Err(error)),
    };
    let (request, session) = request;
    let offered = match request.config_id.as_str() {
        MODEL_OPTION => crate::args::split_route(&request.value)
            .map(|_| ())
            .map_err(|error| RpcError::invalid_params(format!("value: {error}"))),
        PRESET_OPTION if preset_option(server, &session).is_some() => Ok(()),
        _ => Err(RpcError::invalid_params(format!(
            "configId: `{}` is not an option of this agent (model, agent_preset)",
            request.config_id
        ))),
    };
    match offered {
        Ok(()) => set_option(server, id, session, request),
        Err(error) => server.answer::<Empty>(&id, Err(error)),
    }
}
