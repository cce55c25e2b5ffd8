//! The project's trust in the page: `project.describe` says whether the person trusts the
//! folder the page serves and what of its own configuration waits (`.mcp.json`, hook files,
//! `.dsh/settings.yaml`, skills), which the page shows as a question above the conversation;
//! `project.trust` is the person's answer, remembered in the dsh home. Over a network bind the
//! answer needs `--allow-remote-settings`, as settings do: a page that is not the person's own
//! must not switch a repository's hooks on.

use abi_stable::std_types::RString;
use dsh_client_protocol::RpcErrorCode;
use dsh_protocol::ProjectTrust;
use dsh_trust_seam::{TRUST_SERVICE, TrustService};

use crate::api::{Api, Failure};

impl Api {
    fn trust_service(&self) -> Result<dsh_plugin_api::Service<TrustService>, Failure> {
        match self.ctx.get::<TrustService>(TRUST_SERVICE) {
            Ok(Some(service)) => Ok(service),
            _ => Err(Failure(
                RpcErrorCode::SettingsRejected,
                "no `trust` row runs, so nothing of a project's own is trusted".to_owned(),
            )),
        }
    }

    /// Whether the served folder's project is trusted, and what waits.
    pub(crate) fn describe_trust(
        &self,
        caller: &crate::connection::Caller,
    ) -> Result<ProjectTrust, Failure> {
        self.trust_service()?
            .describe(RString::from(caller.cwd.as_str()))
            .decode()
            .map_err(|error| Failure::internal(error.to_string()))
    }

    /// Trusts the served folder's project, remembered in the dsh home.
    pub(crate) async fn trust_project(
        &self,
        caller: &crate::connection::Caller,
    ) -> Result<ProjectTrust, Failure> {
        if !caller.options.settings_writable {
            return Err(Failure(
                RpcErrorCode::SettingsRejected,
                "trusting a project over the network needs --allow-remote-settings".to_owned(),
            ));
        }
        let answer = self
            .trust_service()?
            .trust(RString::from(caller.cwd.as_str()), true)
            .await
            .into_result()
            .map_err(|error| Failure(RpcErrorCode::SettingsRejected, error.to_string()))?;
        answer
            .decode()
            .map_err(|error| Failure::internal(error.to_string()))
    }
}
