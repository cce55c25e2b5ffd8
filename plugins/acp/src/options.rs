//! A session's config options: its model (`model`), the reasoning effort of that model where it
//! offers a choice (`effort`, in ACP's `thought_level` category), and its agent preset where
//! presets are mounted (`agent_preset`, chosen before the session's first turn). They are read
//! from and set through the clients service (`session.models` and `agentPreset.list`;
//! `session.selectModel` and `agentPreset.select`), as every other client reads and sets them.

use std::sync::Arc;

use dsh_client_protocol::{
    ClientRequest, Done, ModelList, ModelsRequest, NoParams, PresetList, SelectModel, SelectPreset,
};
use serde_json::value::RawValue;

use crate::schema::{
    ConfigOption, ConfigValue, Empty, SetConfigOptionRequest, SetConfigOptionResponse,
};
use crate::server::Server;
use crate::wire::{Id, RpcError, params};

/// The id of the model option.
const MODEL_OPTION: &str = "model";

/// The id of the reasoning-effort option.
const EFFORT_OPTION: &str = "effort";

/// The id of the agent-preset option (a custom category, as ACP asks of one it does not name).
const PRESET_OPTION: &str = "agent_preset";

/// What the clients service offers a session: its models (with its route and effort) and the
/// agent presets, each `None` where it cannot be read (no such row).
struct Offered {
    models: Option<ModelList>,
    presets: Option<PresetList>,
}

impl Offered {
    async fn of(server: &Server, session: &str) -> Self {
        let models = ClientRequest::SessionModels(ModelsRequest {
            session_id: Some(session.to_owned()),
        });
        let presets = ClientRequest::AgentPresetList(NoParams {});
        Self {
            models: server.door.call(&server.ctx, models).await.ok(),
            presets: server.door.call(&server.ctx, presets).await.ok(),
        }
    }

    /// The session's route: its agent's, else the one new sessions take.
    fn route(&self, server: &Server) -> String {
        self.models
            .as_ref()
            .and_then(|models| models.current.clone())
            .unwrap_or_else(|| {
                let (provider, model) = dsh_plugin_api::lock(&server.route).clone();
                format!("{provider}/{model}")
            })
    }

    /// The efforts the session's model offers, and the one its requests get now.
    fn efforts(&self, route: &str) -> Option<(Vec<String>, String)> {
        let models = self.models.as_ref()?;
        let offered = models
            .models
            .iter()
            .find(|model| model.route == route && model.efforts.len() > 1)?;
        let current = models
            .effort
            .clone()
            .or_else(|| offered.default_effort.clone())
            .or_else(|| offered.efforts.first().cloned())?;
        Some((offered.efforts.clone(), current))
    }
}

fn model_option(route: &str, models: Option<&ModelList>) -> ConfigOption {
    let mut options: Vec<ConfigValue> = models
        .map(|models| {
            models
                .models
                .iter()
                .map(|model| {
                    let provider = model.route.split('/').next().unwrap_or_default();
                    ConfigValue {
                        value: model.route.clone(),
                        name: format!("{} ({provider})", model.label),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if !route.starts_with('/') && !options.iter().any(|option| option.value == route) {
        options.insert(
            0,
            ConfigValue {
                value: route.to_owned(),
                name: route.to_owned(),
            },
        );
    }
    ConfigOption {
        id: MODEL_OPTION.to_owned(),
        name: "Model".to_owned(),
        category: "model",
        kind: "select",
        current_value: route.to_owned(),
        options,
    }
}

fn effort_option(efforts: Vec<String>, current: String) -> ConfigOption {
    ConfigOption {
        id: EFFORT_OPTION.to_owned(),
        name: "Reasoning effort".to_owned(),
        category: "thought_level",
        kind: "select",
        current_value: current,
        options: efforts
            .into_iter()
            .map(|effort| ConfigValue {
                name: effort.clone(),
                value: effort,
            })
            .collect(),
    }
}

/// The agent-preset option: every preset that reads, and the session's (`standard`, the plain
/// agent, when it names none).
fn preset_option(server: &Server, session: &str, presets: PresetList) -> ConfigOption {
    let current = server
        .agents()
        .ok()
        .and_then(|agents| agents.list().decode().ok())
        .and_then(|agents: Vec<dsh_protocol::AgentSummary>| {
            agents.into_iter().find(|agent| agent.id == session)
        })
        .and_then(|agent| agent.agent_preset)
        .unwrap_or_else(|| "standard".to_owned());
    ConfigOption {
        id: PRESET_OPTION.to_owned(),
        name: "Agent preset".to_owned(),
        category: "_agent_preset",
        kind: "select",
        current_value: current,
        options: presets
            .presets
            .into_iter()
            .filter(|preset| preset.problem.is_none())
            .map(|preset| ConfigValue {
                value: preset.id,
                name: preset.name,
            })
            .collect(),
    }
}

fn options_of(server: &Server, session: &str, offered: Offered) -> Vec<ConfigOption> {
    let route = offered.route(server);
    let mut options = vec![model_option(&route, offered.models.as_ref())];
    if let Some((efforts, current)) = offered.efforts(&route) {
        options.push(effort_option(efforts, current));
    }
    if let Some(presets) = offered.presets {
        options.push(preset_option(server, session, presets));
    }
    options
}

/// `session`'s options: the model, its effort where it offers a choice, then the agent preset.
pub(crate) async fn config_options(server: &Server, session: &str) -> Vec<ConfigOption> {
    let offered = Offered::of(server, session).await;
    options_of(server, session, offered)
}

/// Sends `session`'s options again (`config_option_update`), its agent preset as `preset` when
/// given: one just logged, which the agent takes up only after logging it.
pub(crate) fn announce_options(server: &Arc<Server>, session: &str, preset: Option<&str>) {
    let (task, session, preset) = (
        server.clone(),
        session.to_owned(),
        preset.map(str::to_owned),
    );
    let _ = server.ctx.spawn(async move {
        let mut config_options = config_options(&task, &session).await;
        if let Some(preset) = preset {
            for option in config_options.iter_mut().filter(|o| o.id == PRESET_OPTION) {
                preset.clone_into(&mut option.current_value);
            }
        }
        task.update(
            &session,
            crate::updates::SessionUpdate::ConfigOptionUpdate { config_options },
        );
    });
}

/// The change option `request` asks of the service, and the field its refusal names.
fn change_of(
    server: &Server,
    session: &str,
    request: &SetConfigOptionRequest,
    offered: &Offered,
) -> Result<(ClientRequest, String), RpcError> {
    let value = request.value.clone();
    let route = offered.route(server);
    match request.config_id.as_str() {
        MODEL_OPTION => {
            crate::args::split_route(&value)
                .map_err(|error| RpcError::invalid_params(format!("value: {error}")))?;
            let change = ClientRequest::SessionSelectModel(SelectModel {
                session_id: session.to_owned(),
                model: value,
                effort: None,
            });
            Ok((change, "value".to_owned()))
        }
        EFFORT_OPTION if offered.efforts(&route).is_some() => {
            let change = ClientRequest::SessionSelectModel(SelectModel {
                session_id: session.to_owned(),
                model: route,
                effort: Some(value),
            });
            Ok((change, "value".to_owned()))
        }
        PRESET_OPTION if offered.presets.is_some() => {
            let field = format!("value: agent preset `{value}`");
            let change = ClientRequest::AgentPresetSelect(SelectPreset {
                session_id: session.to_owned(),
                preset_id: value,
            });
            Ok((change, field))
        }
        other => {
            let effort = offered.efforts(&route).is_some().then_some(EFFORT_OPTION);
            let preset = offered.presets.is_some().then_some(PRESET_OPTION);
            let ids: Vec<&str> = [Some(MODEL_OPTION), effort, preset]
                .into_iter()
                .flatten()
                .collect();
            Err(RpcError::invalid_params(format!(
                "configId: `{other}` is not an option of this agent ({})",
                ids.join(", ")
            )))
        }
    }
}

/// `session/set_config_option`: the option set through the clients service, then the options
/// as they stand in the answer (the editor is not sent the change as well).
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
    server.later(id, move |task| async move {
        let open = task.session(&session);
        let _choosing = open.as_ref().map(|open| open.editor.choosing_options());
        let offered = Offered::of(&task, &session).await;
        let (change, field) = change_of(&task, &session, &request, &offered)?;
        let _: Done = task
            .door
            .call(&task.ctx, change)
            .await
            .map_err(|refused| refused.to_acp("session/set_config_option", &field))?;
        Ok(SetConfigOptionResponse {
            config_options: config_options(&task, &session).await,
        })
    });
}
