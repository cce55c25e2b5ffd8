//! A session's modes are the permission presets (`session/set_mode` logs the chosen one, as
//! `/permission` does, and the change comes back as `current_mode_update`), and plan mode
//! where its row is mounted (`plan`: turned on and off through `/plan` and `/plan off`, as a
//! person would, so the model hears of the change; choosing a preset leaves it). Its config
//! options (model, effort, agent preset) are `options`'.

use std::sync::Arc;

use dsh_client_protocol::{ClientRequest, CommandList, Done, NoParams, SetPermission};
use dsh_protocol::kinds::{PERMISSION_PRESET, PLAN_MODE, SANDBOX_MODE};
use dsh_protocol::{
    CommandKind, PermissionPreset, PermissionPresetEvent, PlanModeEvent, SandboxModeEvent,
};
use dsh_sessions_seam::open_live;
use serde_json::value::RawValue;

use crate::schema::{Empty, SessionMode, SessionModeState, SetModeRequest};
use crate::server::Server;
use crate::wire::{Id, RpcError, params};

/// The id of plan mode among the modes (and the command that turns it on).
const PLAN: &str = "plan";

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
