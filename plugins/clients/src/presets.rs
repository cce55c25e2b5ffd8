//! `agentPreset.*`: the presets a session can be made with (from the `agent_presets`
//! service), a preset's files, copies to edit and removal (loopback clients only), and the
//! switch of a session that has had no turn (through the `agents` registry, which logs it).

use abi_stable::std_types::RString;
use dsh_agents_seam::presets::{AGENT_PRESETS_SERVICE, AgentPresetsService};
use dsh_client_protocol::{CopyPreset, PresetList, PresetRef, RpcErrorCode, SelectPreset};
use dsh_plugin_api::{SeamError, SeamErrorKind, Service};
use dsh_protocol::{PresetFiles, PresetSummary};

use crate::api::{Api, Failure};

/// The namespace of the presets row in the settings document (its row id).
const PRESETS_ROW: &str = "agent-presets";

/// A refusal of the presets service, coded for the client.
fn failure(error: SeamError) -> Failure {
    let message = error.message.into_string();
    let code = match error.kind {
        SeamErrorKind::NotFound => RpcErrorCode::AgentPresetNotFound,
        SeamErrorKind::Conflict => RpcErrorCode::AgentPresetConflict,
        // Shipped presets are refused as `Invalid` with this wording by the service.
        SeamErrorKind::Invalid if message.contains("read-only") => {
            RpcErrorCode::AgentPresetReadOnly
        }
        SeamErrorKind::Invalid => RpcErrorCode::AgentPresetInvalid,
        SeamErrorKind::Unavailable | SeamErrorKind::Failed => RpcErrorCode::Internal,
    };
    Failure(code, message)
}

impl Api {
    fn presets_service(&self) -> Result<Service<AgentPresetsService>, Failure> {
        match self.ctx.get::<AgentPresetsService>(AGENT_PRESETS_SERVICE) {
            Ok(Some(presets)) => Ok(presets),
            _ => Err(Failure(
                RpcErrorCode::AgentPresetNotFound,
                "no agent presets are mounted (the `agent-presets` row)".to_owned(),
            )),
        }
    }

    pub(crate) fn presets(&self) -> Result<PresetList, Failure> {
        let service = self.presets_service()?;
        let presets: Vec<PresetSummary> = service
            .list()
            .decode()
            .map_err(|error| Failure::internal(format!("agent presets: {error}")))?;
        Ok(PresetList {
            presets,
            default: service.default_preset().into_string(),
        })
    }

    pub(crate) fn read_preset(&self, request: &PresetRef) -> Result<PresetFiles, Failure> {
        self.presets_service()?
            .read(RString::from(request.preset_id.as_str()))
            .into_result()
            .map_err(failure)?
            .decode()
            .map_err(|error| Failure::internal(format!("agent presets: {error}")))
    }

    pub(crate) async fn copy_preset(&self, request: CopyPreset) -> Result<PresetSummary, Failure> {
        self.presets_service()?
            .copy(
                RString::from(request.from),
                RString::from(request.to),
                RString::from(request.name.unwrap_or_default()),
            )
            .await
            .into_result()
            .map_err(failure)?
            .decode()
            .map_err(|error| Failure::internal(format!("agent presets: {error}")))
    }

    pub(crate) async fn remove_preset(&self, request: &PresetRef) -> Result<(), Failure> {
        self.presets_service()?
            .remove(RString::from(request.preset_id.as_str()))
            .await
            .into_result()
            .map_err(failure)
    }

    /// Makes preset `request` the default (a preset that reads), in the settings document's
    /// `agent-presets` namespace; the host reloads the presets row with it.
    pub(crate) async fn set_default_preset(&self, request: &PresetRef) -> Result<(), Failure> {
        self.read_preset(request)?;
        self.write_setting(PRESETS_ROW, "default", Some(request.preset_id.clone()))
            .await
    }

    pub(crate) async fn select_preset(&self, request: SelectPreset) -> Result<(), Failure> {
        // The session's agent: live, or the stored session resumed.
        self.agent_of(&request.session_id).await?;
        self.agents()?
            .set_preset(
                RString::from(request.session_id),
                RString::from(request.preset_id),
            )
            .await
            .into_result()
            .map_err(Failure::from)
    }
}
