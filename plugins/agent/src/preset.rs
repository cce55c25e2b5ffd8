//! Agent presets as the registry sees them: the tool scope a session's preset puts in its
//! chain, asked of the `agent_presets` service (which mounts the preset's rows on first use).
//! A session made with a preset that is unknown or broken is refused; a stored session whose
//! preset is gone (renamed, removed, no presets row) resumes on the default preset, with a
//! note that names the missing one.

use abi_stable::std_types::RString;
use dsh_agents_seam::presets::{AGENT_PRESETS_SERVICE, AgentPresetsService, PresetRuntime};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, Service};

use crate::error::AgentError;

/// The preset an agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActivePreset {
    pub(crate) id: String,
    pub(crate) scope: String,
}

/// The preset a session runs, once resolved.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub(crate) preset: Option<ActivePreset>,
    /// Why a resumed session does not run the preset its log names.
    pub(crate) note: Option<String>,
}

/// The preset that is the plain agent: no rows, no restriction, no prompt of its own.
pub(crate) const STANDARD: &str = "standard";

/// The preset new top-level sessions run when none is named, if presets are mounted.
pub(crate) fn default_preset(ctx: &Context) -> Option<String> {
    service(ctx).map(|presets| presets.default_preset().into_string())
}

fn service(ctx: &Context) -> Option<Service<AgentPresetsService>> {
    ctx.get::<AgentPresetsService>(AGENT_PRESETS_SERVICE)
        .ok()
        .flatten()
}

/// Activates preset `id` (mounting its rows the first time).
pub(crate) async fn activate(ctx: &Context, id: &str) -> Result<ActivePreset, AgentError> {
    let Some(presets) = service(ctx) else {
        return Err(AgentError::Preset {
            id: id.to_owned(),
            problem: "no `agent_presets` service is mounted (the `agent-presets` row)".to_owned(),
        });
    };
    let runtime = presets
        .activate(RString::from(id))
        .await
        .into_result()
        .map_err(|error| AgentError::Preset {
            id: id.to_owned(),
            problem: error.message.into_string(),
        })?;
    let runtime: PresetRuntime = runtime.decode().map_err(|error| AgentError::Preset {
        id: id.to_owned(),
        problem: format!("the presets service answered what does not read: {error}"),
    })?;
    Ok(ActivePreset {
        id: runtime.id,
        scope: runtime.scope,
    })
}

/// The preset of a resumed session whose log names `id`: that one, or, when it cannot run,
/// the default (when there is one) and a note naming the missing preset.
pub(crate) async fn resume(ctx: &Context, session: &str, id: &str) -> Resolved {
    let problem = match activate(ctx, id).await {
        Ok(preset) => {
            return Resolved {
                preset: Some(preset),
                note: None,
            };
        }
        Err(error) => error.to_string(),
    };
    let fallback = match service(ctx) {
        Some(presets) => {
            let default = presets.default_preset().into_string();
            activate(ctx, &default).await.ok()
        }
        None => None,
    };
    let instead = fallback.as_ref().map_or_else(
        || "the plain agent".to_owned(),
        |preset| format!("preset `{}`", preset.id),
    );
    let note = format!(
        "session `{session}` was made with agent preset `{id}`, which cannot run here ({problem}); it continues with {instead}"
    );
    ctx.log(LogLevel::Warn, &note);
    Resolved {
        preset: fallback,
        note: Some(note),
    }
}

/// `scope` with `preset`'s scope right after the workspace's (so the preset's tools shadow
/// the global ones and its restriction limits what it inherits), without a former preset's.
pub(crate) fn with_preset(
    mut scope: Vec<String>,
    former: Option<&ActivePreset>,
    preset: Option<&ActivePreset>,
) -> Vec<String> {
    if let Some(former) = former {
        scope.retain(|key| *key != former.scope);
    }
    if let Some(preset) = preset
        && !scope.contains(&preset.scope)
    {
        let at = usize::from(!scope.is_empty()).min(scope.len());
        scope.insert(at, preset.scope.clone());
    }
    scope
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(id: &str) -> ActivePreset {
        ActivePreset {
            id: id.to_owned(),
            scope: format!("preset:{id}"),
        }
    }

    #[test]
    fn the_preset_goes_after_the_workspace_and_replaces_a_former_one() {
        let chain = vec!["workspace:/w".to_owned(), "child".to_owned()];
        let chain = with_preset(chain, None, Some(&preset("code")));
        assert_eq!(chain, ["workspace:/w", "preset:code", "child"]);
        let chain = with_preset(chain, Some(&preset("code")), Some(&preset("minimal")));
        assert_eq!(chain, ["workspace:/w", "preset:minimal", "child"]);
        let chain = with_preset(chain, Some(&preset("minimal")), None);
        assert_eq!(chain, ["workspace:/w", "child"]);
    }
}
