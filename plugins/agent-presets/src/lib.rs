//! Plugin `agent-presets`: provides `agent_presets`, the named compositions of the agent a
//! session chooses when it is made (REFERENCE §1, "Agent presets"). A preset is a folder:
//! `preset.yml` (name, description, order; `tools`, what its sessions inherit of the tools
//! outside it; `prompt`, a file whose text stands in for the system prompt's sections, with
//! what plugins add around them, plan mode's policy, kept) and
//! `agent.yml` (rows of its own). Four are shipped, compiled in and read-only: `standard`
//! (today's agent), `code` (Code Mode), `minimal` (a persistent shell and an editor under a
//! short fixed prompt) and `plugin-author` (the standard tools and the plugin tools). The
//! user's own live under the preset root (`$DSH_HOME/agent-presets/<id>/`), copied from
//! another and edited.
//!
//! A preset's rows are mounted, as children of this row, the first time a session chooses it,
//! each with `scope: preset:<id>` added to its config: a tool plugin registers its tools in
//! that scope, which the `agent` registry puts in the chain of the preset's sessions, so a
//! preset's `bash` shadows the global one for them only. Everything else (jobs, skills,
//! subagents, the token meter) stays shared.

mod activate;

use std::path::PathBuf;
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_agents_seam::presets::{
    AGENT_PRESETS_SERVICE, AgentPresets, AgentPresets_TO, PresetFiles, PresetRuntime, PresetSource,
    PresetSummary,
};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{ErrorKind, SeamError};
use dsh_protocol::PromptRequest;
use dsh_system_prompt_seam::SYSTEM_PROMPT_BASE;

use crate::activate::Activator;
use dsh_preset_catalog::{Catalog, Found, valid_id};

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct PresetsConfig {
    /// The preset new sessions run when none is named.
    pub default: String,
    /// The folder of the user's presets (`$DSH_HOME/agent-presets`); none: shipped only.
    pub user_root: Option<String>,
}

impl Default for PresetsConfig {
    fn default() -> Self {
        Self {
            default: "standard".to_owned(),
            user_root: None,
        }
    }
}

struct Presets {
    catalog: Catalog,
    default: String,
    activator: Arc<Activator>,
}

fn done<T>(result: Result<T, SeamError>) -> RResult<T, SeamError> {
    result.into()
}

impl Presets {
    fn copy(&self, from: &str, to: &str, name: &str) -> Result<PresetSummary, SeamError> {
        if !valid_id(to) {
            return Err(SeamError::invalid(format!(
                "preset id `{to}`: lowercase letters, digits and dashes, starting with a letter or digit"
            )));
        }
        let source = match self.catalog.find(from) {
            Found::Preset(preset) => preset,
            Found::Broken { problem, .. } => return Err(SeamError::invalid(problem)),
            Found::Missing => {
                return Err(SeamError::not_found(format!("no agent preset `{from}`")));
            }
        };
        if !matches!(self.catalog.find(to), Found::Missing) {
            return Err(SeamError::conflict(format!("agent preset `{to}` exists")));
        }
        let Some(folder) = self.catalog.folder(to) else {
            return Err(SeamError::unavailable(
                "no user preset folder is configured (userRoot)",
            ));
        };
        let mut preset_text = source.texts.preset.clone();
        if !name.trim().is_empty() {
            // The name is the one field a copy changes; the rest is the source's text.
            preset_text = rename(&preset_text, name);
        }
        let write = |file: &str, text: &str| {
            std::fs::write(folder.join(file), text)
                .map_err(|error| SeamError::failed(format!("agent-presets/{to}/{file}: {error}")))
        };
        std::fs::create_dir_all(&folder)
            .map_err(|error| SeamError::failed(format!("agent-presets/{to}: {error}")))?;
        write("agent.yml", &source.texts.agent)?;
        if let (Some(file), Some(text)) = (&source.file.prompt, &source.texts.prompt) {
            write(file, text)?;
        }
        // preset.yml last: a folder without it is not a preset, so a copy cut short is not
        // listed.
        write("preset.yml", &preset_text)?;
        match self.catalog.find(to) {
            Found::Preset(preset) => Ok(preset.summary(&self.default)),
            Found::Broken { problem, .. } => Err(SeamError::invalid(problem)),
            Found::Missing => Err(SeamError::failed(format!(
                "agent-presets/{to}: written but not found"
            ))),
        }
    }

    fn remove(&self, id: &str) -> Result<(), SeamError> {
        match self.catalog.find(id) {
            Found::Missing => Err(SeamError::not_found(format!("no agent preset `{id}`"))),
            Found::Preset(preset) if preset.source == PresetSource::Shipped => Err(
                SeamError::invalid(format!("agent preset `{id}` is shipped and read-only")),
            ),
            Found::Broken {
                source: PresetSource::Shipped,
                ..
            } => Err(SeamError::invalid(format!(
                "agent preset `{id}` is shipped and read-only"
            ))),
            _ if id == self.default => Err(SeamError::invalid(format!(
                "agent preset `{id}` is the default; choose another default first"
            ))),
            _ => {
                let Some(folder) = self.catalog.folder(id) else {
                    return Err(SeamError::not_found(format!("no agent preset `{id}`")));
                };
                std::fs::remove_dir_all(&folder)
                    .map_err(|error| SeamError::failed(format!("agent-presets/{id}: {error}")))
            }
        }
    }
}

/// `text` (a preset.yml) with its `name:` line replaced.
fn rename(text: &str, name: &str) -> String {
    let quoted = serde_json::to_string(name).unwrap_or_else(|_| format!("\"{name}\""));
    let mut replaced = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if !replaced && line.starts_with("name:") {
                replaced = true;
                format!("name: {quoted}")
            } else {
                line.to_owned()
            }
        })
        .collect();
    let mut out = lines.join("\n");
    if !replaced {
        out = format!("name: {quoted}\n{out}");
    }
    out.push('\n');
    out
}

impl AgentPresets for Presets {
    fn list(&self) -> Json<Vec<PresetSummary>> {
        Json::encode(&self.catalog.list(&self.default))
    }

    fn default_preset(&self) -> RString {
        RString::from(self.default.as_str())
    }

    fn activate(&self, id: RString) -> FfiFuture<RResult<Json<PresetRuntime>, SeamError>> {
        let activator = self.activator.clone();
        async move {
            done(
                activator
                    .activate(id.as_str())
                    .await
                    .map(|runtime| Json::encode(&runtime)),
            )
        }
        .into_ffi()
    }

    fn read(&self, id: RString) -> RResult<Json<PresetFiles>, SeamError> {
        done(match self.catalog.find(id.as_str()) {
            Found::Preset(preset) => Ok(Json::encode(&preset.files(&self.default))),
            Found::Broken { problem, .. } => Err(SeamError::invalid(problem)),
            Found::Missing => Err(SeamError::not_found(format!("no agent preset `{id}`"))),
        })
    }

    fn copy(
        &self,
        from: RString,
        to: RString,
        name: RString,
    ) -> FfiFuture<RResult<Json<PresetSummary>, SeamError>> {
        let copied = self
            .copy(from.as_str(), to.as_str(), name.as_str())
            .map(|summary| Json::encode(&summary));
        async move { done(copied) }.into_ffi()
    }

    fn remove(&self, id: RString) -> FfiFuture<RResult<(), SeamError>> {
        let removed = Presets::remove(self, id.as_str());
        async move { done(removed) }.into_ffi()
    }
}

/// `text` with the route's `{{cwd}}`, `{{provider}}` and `{{model}}` filled in.
fn fill(text: &str, request: &PromptRequest) -> String {
    text.replace("{{cwd}}", &request.cwd)
        .replace("{{provider}}", &request.provider)
        .replace("{{model}}", &request.model)
}

pub struct AgentPresetsPlugin;

impl Plugin for AgentPresetsPlugin {
    const NAME: &'static str = "agent-presets";
    // The registry a preset's restriction goes into, reached when a preset activates.
    const OPTIONAL: &'static [&'static str] = &[dsh_tools_seam::TOOLS_SERVICE];
    const PROVIDES: &'static [&'static str] = &[AGENT_PRESETS_SERVICE];
    type Config = PresetsConfig;

    async fn apply(ctx: Context, config: PresetsConfig) -> Result<(), PluginError> {
        if !valid_id(&config.default) {
            return Err(PluginError::new(
                ErrorKind::Config,
                format!(
                    "invalid config: default: `{}` is not a preset id",
                    config.default
                ),
            ));
        }
        let catalog = Catalog {
            root: config.user_root.map(PathBuf::from),
        };
        let activator = Arc::new(Activator::new(ctx.clone(), catalog.clone()));
        let prompts = activator.clone();
        // A preset with a fixed prompt answers it in place of the sections; what the assemble
        // waterfall adds around them (plan mode's policy) is kept.
        ctx.on_bail(&SYSTEM_PROMPT_BASE, move |request: &Json<PromptRequest>| {
            // Most requests run no preset with a prompt of its own: they are not decoded.
            if !prompts.any_prompt() {
                return None;
            }
            let request: PromptRequest = request.decode().ok()?;
            request.scope.iter().find_map(|scope| {
                let active = prompts.by_scope(scope)?;
                active
                    .prompt
                    .as_ref()
                    .map(|text| RString::from(fill(text, &request)))
            })
        })?;
        let presets = Presets {
            catalog,
            default: config.default,
            activator,
        };
        ctx.provide(
            AGENT_PRESETS_SERVICE,
            AgentPresets_TO::from_value(presets, TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(AgentPresetsPlugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_renames_only_the_name_line() {
        let text = "name: Minimal\ndescription: short\norder: 2\n";
        assert_eq!(
            rename(text, "Mine"),
            "name: \"Mine\"\ndescription: short\norder: 2\n"
        );
        assert_eq!(rename("order: 1", "X"), "name: \"X\"\norder: 1\n");
    }
}
