//! The `agent_presets` service: named compositions of an agent (rows of their own mounted on
//! first use, the tools their sessions inherit, a fixed system prompt), chosen per session.
//! The `agent` registry asks it for the tool scope of a session's preset when the session is
//! made or resumed; surfaces list, read, copy and remove presets through it.

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RResult, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::{Json, SeamError};
pub use dsh_protocol::{PresetFiles, PresetRuntime, PresetSource, PresetSummary};

/// Service key of the presets.
pub const AGENT_PRESETS_SERVICE: &str = "agent_presets";

pub use dsh_protocol::preset_scope;

/// The `agent_presets` service.
#[sabi_trait]
pub trait AgentPresets: Send + Sync {
    /// Every preset, shipped then the user's, by order then id; a broken one is listed with
    /// its problem.
    fn list(&self) -> Json<Vec<PresetSummary>>;
    /// The id of the preset new sessions run when none is named.
    fn default_preset(&self) -> RString;
    /// Mounts preset `id`'s rows the first time and answers its runtime. `NotFound` for an
    /// unknown id, `Invalid` for a broken preset.
    fn activate(&self, id: RString) -> FfiFuture<RResult<Json<PresetRuntime>, SeamError>>;
    /// Preset `id`'s files.
    fn read(&self, id: RString) -> RResult<Json<PresetFiles>, SeamError>;
    /// Copies preset `from` to a new user preset `to` (named `name`, or the source's name);
    /// `Conflict` when `to` exists, `Invalid` for an id that is not `[a-z0-9][a-z0-9-]*`.
    fn copy(
        &self,
        from: RString,
        to: RString,
        name: RString,
    ) -> FfiFuture<RResult<Json<PresetSummary>, SeamError>>;
    /// Removes user preset `id`; a shipped one is `Invalid` (read-only).
    fn remove(&self, id: RString) -> FfiFuture<RResult<(), SeamError>>;
}
pub type AgentPresetsService = AgentPresets_TO<'static, RBox<()>>;
