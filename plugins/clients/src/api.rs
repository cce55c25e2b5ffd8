//! The methods of the client protocol: a request read from its method and params, checked,
//! run over the services, its value or its coded error answered.

use dsh_agents_seam::{AgentsError, AgentsErrorKind};
use dsh_client_protocol::{
    ClientRequest, Done, HostDescription, Removed, RequestError, RpcErrorCode, ServerFrame,
};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::Context;

use crate::connection::Caller;
use crate::live::Outbox;

/// What the methods read.
pub(crate) struct Api {
    pub(crate) ctx: Context,
    /// For the host frames a method causes (a deleted session).
    pub(crate) hub: std::sync::Arc<crate::live::Hub>,
    /// Answers of `session.prompt` by client request id, so a retried call runs once.
    pub(crate) prompted: std::sync::Mutex<std::collections::VecDeque<(String, String)>>,
    /// The asks waiting for a person's answer.
    pub(crate) pending: std::sync::Arc<crate::approvals::Pending>,
    /// The questions waiting for a person's answers.
    pub(crate) questions: std::sync::Arc<crate::questions::Pending>,
    /// Changes with every start of the service: a client that sees a new one resynchronizes.
    pub(crate) boot_id: String,
    /// The host's profile, for clients whose transport does not name it.
    pub(crate) profile: String,
    /// Where a client's new sessions start when its transport names no directory.
    pub(crate) host_cwd: String,
    /// The row's `model`, which new sessions use over any default.
    pub(crate) configured_model: Option<String>,
    /// Where the offline demo keeps its log and working directory.
    pub(crate) demo_dir: Option<std::path::PathBuf>,
    /// Whether the demo's replay row is mounted.
    pub(crate) demo_mounted: tokio::sync::Mutex<bool>,
    /// The settings document the page writes (`!home settings.yaml`).
    pub(crate) settings_file: Option<std::path::PathBuf>,
    /// The last folder walked for `@` completions.
    pub(crate) files: std::sync::Arc<crate::files::FileIndex>,
    /// The folds of the sessions read last, caught up on each read.
    pub(crate) folds: crate::fold_cache::FoldCache,
    /// Each session's latest permission preset, read incrementally.
    pub(crate) presets: dsh_sessions_seam::LatestOf<dsh_protocol::PermissionPresetEvent>,
    /// The reasoning effort chosen for each session's model.
    pub(crate) efforts: std::sync::Arc<crate::efforts::Efforts>,
}

/// A method's failure, coded.
pub(crate) struct Failure(pub(crate) RpcErrorCode, pub(crate) String);

impl Failure {
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self(RpcErrorCode::Internal, message.into())
    }
}

/// A refusal of the agents registry, coded by its kind.
impl From<AgentsError> for Failure {
    fn from(error: AgentsError) -> Self {
        let code = match error.kind {
            AgentsErrorKind::Invalid => RpcErrorCode::BadRequest,
            AgentsErrorKind::Preset => RpcErrorCode::AgentPresetInvalid,
            AgentsErrorKind::NotFound => RpcErrorCode::SessionNotFound,
            AgentsErrorKind::Exists | AgentsErrorKind::Disposing => RpcErrorCode::SessionConflict,
            AgentsErrorKind::NotQueued => RpcErrorCode::QueueItemNotFound,
            AgentsErrorKind::SteerUnavailable => RpcErrorCode::SteerUnavailable,
            AgentsErrorKind::Unavailable | AgentsErrorKind::Session | AgentsErrorKind::Gone => {
                RpcErrorCode::Internal
            }
        };
        Self(code, error.message.into_string())
    }
}

/// A method's params, read as `T` from JSON text (a shape error is the caller's: `bad-request`).
pub(crate) fn payload<T: serde::de::DeserializeOwned>(
    method: &str,
    params: &str,
) -> Result<T, Failure> {
    serde_json::from_str(params).map_err(|error| {
        Failure(
            RpcErrorCode::BadRequest,
            format!("{method}: the payload does not fit: {error}"),
        )
    })
}

impl Api {
    /// Runs `method` with its `params` (JSON text, empty for none) for `caller`.
    pub(crate) async fn run(
        &self,
        caller: &Caller,
        outbox: &Outbox,
        method: &str,
        params: &str,
    ) -> Result<serde_json::Value, Failure> {
        let params = match params.trim() {
            "" => serde_json::Value::Null,
            text => serde_json::from_str(text).map_err(|error| {
                Failure(
                    RpcErrorCode::ParseError,
                    format!("{method}: the params are not JSON: {error}"),
                )
            })?,
        };
        let request = ClientRequest::parse(method, params).map_err(|error| match error {
            RequestError::UnknownMethod(_) => {
                Failure(RpcErrorCode::MethodNotFound, error.to_string())
            }
            RequestError::BadParams { .. } => Failure(RpcErrorCode::BadRequest, error.to_string()),
        })?;
        // A session id no session can have is refused here, before any service (or a path
        // built from it) sees it.
        if let Some(id) = request.session_id()
            && let Err(error) = dsh_protocol::check_session_id(id)
        {
            return Err(Failure(
                RpcErrorCode::BadRequest,
                format!("{method}: {error}"),
            ));
        }
        let writable = caller.options.settings_writable;
        match request {
            ClientRequest::Initialize(_) => Err(Failure(
                RpcErrorCode::BadRequest,
                "initialize is answered by the connection".to_owned(),
            )),
            ClientRequest::HostDescribe(_) => to_value(self.describe(caller)),
            ClientRequest::HostPlugins(_) => to_value(self.plugins()?),
            ClientRequest::HostSetRowEnabled(request) => {
                self.writable(writable, method)?;
                self.set_row_enabled(request).await?;
                to_value(Done {})
            }
            ClientRequest::SessionList(_) => to_value(self.list().await?),
            ClientRequest::SessionSearch(request) => to_value(self.search(request).await?),
            ClientRequest::SessionHistory(request) => to_value(self.history(request).await?),
            ClientRequest::SessionItem(request) => to_value(self.item(request).await?),
            ClientRequest::SessionTrajectory(request) => to_value(self.trajectory(request).await?),
            ClientRequest::SessionCreate(request) => to_value(self.create(caller, request).await?),
            ClientRequest::SessionOpen(request) => to_value(self.open_stored(request).await?),
            ClientRequest::SessionDemo(_) => to_value(self.demo().await?),
            ClientRequest::SessionPrompt(request) => to_value(self.prompt(request).await?),
            ClientRequest::SessionAttachment(request) => to_value(self.attachment(request).await?),
            ClientRequest::AttachmentRead(request) => {
                to_value(self.read_attachment(request).await?)
            }
            ClientRequest::SessionCancel(request) => to_value(self.cancel(request)?),
            ClientRequest::SessionUpdateQueue(request) => to_value(self.update_queue(request)?),
            ClientRequest::SessionRename(request) => to_value(self.rename(request).await?),
            ClientRequest::SessionFork(request) => to_value(self.fork(request).await?),
            ClientRequest::SessionDelete(request) => to_value(self.delete(request).await?),
            ClientRequest::SessionRestore(request) => to_value(self.restore(request).await?),
            ClientRequest::SessionArchive(request) => to_value(self.archive(request).await?),
            ClientRequest::SessionModels(request) => to_value(self.models(request)),
            ClientRequest::SessionSelectModel(request) => {
                to_value(self.select_model(request).await?)
            }
            ClientRequest::SessionSetPermission(request) => {
                to_value(self.set_permission(request).await?)
            }
            ClientRequest::SessionContext(request) => to_value(self.context(request).await?),
            ClientRequest::SessionKillJob(request) => to_value(self.kill_job(request)?),
            ClientRequest::SessionRewind(request) => to_value(self.rewind(request).await?),
            ClientRequest::SessionSubscribe(request) => {
                self.subscribe(outbox, &request.session_id, request.after_seq)
                    .await;
                to_value(Done {})
            }
            ClientRequest::SessionUnsubscribe(request) => {
                self.hub.unsubscribe(outbox, &request.session_id);
                to_value(Done {})
            }
            ClientRequest::CommandsList(_) => to_value(self.commands().await?),
            ClientRequest::CommandsRun(request) => to_value(self.run_command(request).await?),
            ClientRequest::FilesComplete(request) => {
                to_value(self.complete_files(caller, request).await?)
            }
            ClientRequest::SettingsDescribe(_) => to_value(self.describe_settings(writable).await?),
            ClientRequest::SettingsUpdate(request) => {
                self.writable(writable, method)?;
                self.update_settings(request).await?;
                to_value(Done {})
            }
            ClientRequest::CredentialsDescribe(_) => to_value(self.describe_credentials(writable)),
            ClientRequest::CredentialsSet(request) => {
                self.writable(writable, method)?;
                self.set_credential(request).await?;
                to_value(Done {})
            }
            ClientRequest::CredentialsUnset(request) => {
                self.writable(writable, method)?;
                to_value(Removed {
                    removed: self.unset_credential(request).await?,
                })
            }
            ClientRequest::ProviderList(_) => to_value(self.list_providers(writable).await?),
            ClientRequest::ProviderDiscover(request) => {
                // It sends a key to an address the caller names: only where settings may change.
                self.writable(writable, method)?;
                to_value(self.discover_models(request).await?)
            }
            ClientRequest::ProviderSave(request) => {
                self.writable(writable, method)?;
                to_value(self.save_provider(request).await?)
            }
            ClientRequest::ProviderRemove(request) => {
                self.writable(writable, method)?;
                self.remove_provider(request).await?;
                to_value(Done {})
            }
            ClientRequest::ProjectDescribe(_) => to_value(self.describe_trust(caller)?),
            ClientRequest::ProjectTrust(_) => to_value(self.trust_project(caller).await?),
            ClientRequest::ApprovalRespond(answer) => to_value(self.respond(answer).await?),
            ClientRequest::AgentPresetList(_) => to_value(self.presets()?),
            ClientRequest::AgentPresetRead(request) => to_value(self.read_preset(&request)?),
            ClientRequest::AgentPresetCopy(request) => {
                self.writable(writable, method)?;
                to_value(self.copy_preset(request).await?)
            }
            ClientRequest::AgentPresetRemove(request) => {
                self.writable(writable, method)?;
                self.remove_preset(&request).await?;
                to_value(Done {})
            }
            ClientRequest::AgentPresetSetDefault(request) => {
                self.writable(writable, method)?;
                self.set_default_preset(&request).await?;
                to_value(Done {})
            }
            ClientRequest::AgentPresetSelect(request) => {
                self.select_preset(request).await?;
                to_value(Done {})
            }
            request @ (ClientRequest::GoalGet(_)
            | ClientRequest::GoalCreate(_)
            | ClientRequest::GoalEdit(_)
            | ClientRequest::GoalPause(_)
            | ClientRequest::GoalResume(_)
            | ClientRequest::GoalComplete(_)
            | ClientRequest::GoalClear(_)) => to_value(self.goal(request).await?),
            ClientRequest::QuestionRespond(answer) => to_value(
                self.questions
                    .answer(answer)
                    .map_err(|error| Failure(RpcErrorCode::BadRequest, error.to_string()))?,
            ),
        }
    }

    /// A change of settings, credentials or trust from a client that may not make one.
    fn writable(&self, writable: bool, method: &str) -> Result<(), Failure> {
        match writable {
            true => Ok(()),
            false => Err(Failure(
                RpcErrorCode::SettingsRejected,
                format!("{method}: settings and credentials cannot be changed from this client"),
            )),
        }
    }

    /// Starts sending a session's updates to `outbox`; a session that cannot be followed is
    /// told as a `session/resync` frame, as the page expects.
    pub(crate) async fn subscribe(
        &self,
        outbox: &Outbox,
        session_id: &str,
        after_seq: Option<u64>,
    ) {
        if let Err(error) = self
            .hub
            .subscribe(outbox, session_id, after_seq, &self.folds)
            .await
        {
            let _ = outbox.push(&ServerFrame::Resync {
                session_id: session_id.to_owned(),
                reason: error.to_string(),
            });
        } else if let Some(goal) = crate::goals::frame(&self.ctx, session_id).await {
            let _ = outbox.push(&goal);
        }
    }

    pub(crate) fn describe(&self, caller: &Caller) -> HostDescription {
        let providers = match self.ctx.get::<LlmService>(LLM_SERVICE) {
            Ok(Some(llm)) => llm.providers().iter().map(|p| p.to_string()).collect(),
            _ => Vec::new(),
        };
        HostDescription {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            boot_id: self.boot_id.clone(),
            profile: match caller.options.profile.as_str() {
                "" => self.profile.clone(),
                named => named.to_owned(),
            },
            cwd: caller.cwd.clone(),
            providers,
            default_model: self.default_model(),
            remote: caller.options.remote,
            demo: self.demo_dir.is_some(),
        }
    }
}

impl Api {
    /// `host.setRowEnabled`: `$enabled` in the row's namespace of the settings document,
    /// which the host lays over the layers and reloads. A row the tree does not have is
    /// refused, and so are the rows this page itself runs on.
    async fn set_row_enabled(
        &self,
        request: dsh_client_protocol::RowEnabled,
    ) -> Result<(), Failure> {
        let rejected = |message: String| Failure(RpcErrorCode::SettingsRejected, message);
        let listed = self.plugins()?;
        let Some(row) = listed.plugins.iter().find(|row| row.row == request.row) else {
            return Err(rejected(format!(
                "no row `{}` in the tree (host.plugins lists them)",
                request.row
            )));
        };
        if !row.switchable {
            return Err(rejected(format!(
                "row `{}` ({}) serves this page and stays on; turn it off in a patch",
                row.row, row.plugin
            )));
        }
        let value = serde_norway::Value::Bool(request.enabled);
        self.write_setting_value(&request.row, dsh_protocol::ROW_ENABLED_KEY, Some(value))
            .await
    }

    /// `host.plugins`: the rows of the running tree and how each is doing.
    fn plugins(&self) -> Result<dsh_client_protocol::PluginList, Failure> {
        let host = self
            .ctx
            .get::<dsh_plugin_api::io::control::HostControlService>(
                dsh_plugin_api::io::control::HOST_SERVICE,
            )
            .ok()
            .flatten()
            .ok_or_else(|| Failure::internal("no `host` service"))?;
        let mut plugins: Vec<dsh_protocol::PluginRow> = serde_json::from_str(host.rows().as_str())
            .map_err(|error| Failure::internal(format!("the host's rows: {error}")))?;
        for row in &mut plugins {
            let library = row.plugin.split('/').next().unwrap_or_default();
            row.switchable &= !PAGE_LIBRARIES.contains(&library);
        }
        Ok(dsh_client_protocol::PluginList { plugins })
    }
}

/// The libraries a client's door runs on: turning their rows off from it would end the client
/// itself, so `host.plugins` lists them not switchable and `host.setRowEnabled` refuses them.
const PAGE_LIBRARIES: [&str; 3] = ["web", "clients", "dsh-host"];

fn to_value<T: serde::Serialize>(value: T) -> Result<serde_json::Value, Failure> {
    serde_json::to_value(value).map_err(|error| Failure::internal(error.to_string()))
}
