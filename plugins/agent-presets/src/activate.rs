//! Making a preset live: its rows mounted as children of this plugin (each told the preset's
//! tool scope, so its tools serve only the preset's sessions), started within a bound, and the
//! restriction of what the preset inherits registered. Done once per preset and life of this
//! row; activations are serialized so two sessions choosing one preset mount it once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RString, RVec};
use dsh_agents_seam::presets::{PresetRuntime, preset_scope};
use dsh_plugin_api::cancel::{Either, first_of};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{SeamError, lock};
use dsh_tools_seam::{RegistrationBox, TOOLS_SERVICE, ToolsService};

use dsh_preset_catalog::{Catalog, Found, Preset, scoped_config};

/// How long a preset's row may take to start.
const ROW_START: Duration = Duration::from_secs(20);

/// A preset made live.
pub(crate) struct Active {
    pub(crate) runtime: PresetRuntime,
    /// Its fixed system prompt.
    pub(crate) prompt: Option<String>,
    /// Kept for the life of this row: dropping it lifts the restriction.
    _restriction: Option<RegistrationBox>,
}

/// The live presets.
pub(crate) struct Activator {
    ctx: Context,
    catalog: Catalog,
    active: std::sync::Mutex<HashMap<String, Arc<Active>>>,
    /// One activation at a time.
    turn: tokio::sync::Mutex<()>,
}

impl Activator {
    pub(crate) fn new(ctx: Context, catalog: Catalog) -> Self {
        Self {
            ctx,
            catalog,
            active: std::sync::Mutex::new(HashMap::new()),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether a live preset has a fixed prompt.
    pub(crate) fn any_prompt(&self) -> bool {
        lock(&self.active)
            .values()
            .any(|active| active.prompt.is_some())
    }

    /// The live preset whose scope is `scope`.
    pub(crate) fn by_scope(&self, scope: &str) -> Option<Arc<Active>> {
        lock(&self.active)
            .values()
            .find(|active| active.runtime.scope == scope)
            .cloned()
    }

    /// Makes preset `id` live (once) and answers its runtime.
    pub(crate) async fn activate(&self, id: &str) -> Result<PresetRuntime, SeamError> {
        if let Some(active) = lock(&self.active).get(id) {
            return Ok(active.runtime.clone());
        }
        let _turn = self.turn.lock().await;
        if let Some(active) = lock(&self.active).get(id) {
            return Ok(active.runtime.clone());
        }
        let preset = match self.catalog.find(id) {
            Found::Preset(preset) => preset,
            Found::Broken { problem, .. } => return Err(SeamError::invalid(problem)),
            Found::Missing => {
                return Err(SeamError::not_found(format!("no agent preset `{id}`")));
            }
        };
        let active = self.mount(&preset).await?;
        let runtime = active.runtime.clone();
        lock(&self.active).insert(id.to_owned(), Arc::new(active));
        Ok(runtime)
    }

    async fn mount(&self, preset: &Preset) -> Result<Active, SeamError> {
        let scope = preset_scope(&preset.id);
        let label = format!("agent preset `{}`", preset.id);
        for row in preset.rows.iter().filter(|row| !row.disabled) {
            let config = scoped_config(row.config.as_ref(), &scope);
            let fiber = self.ctx.mount(&row.name, &config).map_err(|error| {
                SeamError::failed(format!("{label}: agent.yml row `{}`: {error}", row.id))
            })?;
            match first_of(self.ctx.settled(fiber), self.ctx.sleep(ROW_START)).await {
                Either::Left(Ok(())) => {}
                Either::Left(Err(error)) => {
                    return Err(SeamError::failed(format!(
                        "{label}: agent.yml row `{}` ({}) failed: {error}",
                        row.id, row.name
                    )));
                }
                Either::Right(()) => {
                    return Err(SeamError::failed(format!(
                        "{label}: agent.yml row `{}` ({}) did not start within {} s (a service it needs is missing?)",
                        row.id,
                        row.name,
                        ROW_START.as_secs()
                    )));
                }
            }
        }
        let restriction = match &preset.file.tools {
            None => None,
            Some(restriction) => Some(self.restrict(&label, &scope, restriction)?),
        };
        Ok(Active {
            runtime: PresetRuntime {
                id: preset.id.clone(),
                scope,
            },
            prompt: preset.prompt.clone(),
            _restriction: restriction,
        })
    }

    fn restrict(
        &self,
        label: &str,
        scope: &str,
        restriction: &dsh_protocol::Restriction,
    ) -> Result<RegistrationBox, SeamError> {
        let tools = self
            .ctx
            .get::<ToolsService>(TOOLS_SERVICE)
            .ok()
            .flatten()
            .ok_or_else(|| {
                SeamError::unavailable(format!(
                    "{label}: preset.yml: tools: no `tools` service to restrict"
                ))
            })?;
        tools
            .restrict(
                RString::from(self.ctx.row_id()),
                RVec::from(vec![RString::from(scope)]),
                Json::encode(restriction),
            )
            .into_result()
            .map_err(|error| SeamError::invalid(format!("{label}: preset.yml: tools: {error}")))
    }
}
