//! The unary methods of `POST /api/<method>`: the envelope read and checked, the method run,
//! its value or its coded error answered in the reference's response shape.

use dsh_agents_seam::{AgentsError, AgentsErrorKind};
use dsh_client_protocol::{HostDescription, RpcErrorCode, RpcRequest, RpcResponse, RpcResult};
use dsh_llm_seam::{LLM_SERVICE, LlmService};
use dsh_plugin_api::Context;
use serde::Deserialize;

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
    pub(crate) boot_id: String,
    pub(crate) cwd: String,
    pub(crate) remote: bool,
    /// The row's `model`, which new sessions use over any default.
    pub(crate) configured_model: Option<String>,
    /// Where the offline demo keeps its log and working directory.
    pub(crate) demo_dir: Option<std::path::PathBuf>,
    /// Whether the demo's replay row is mounted.
    pub(crate) demo_mounted: tokio::sync::Mutex<bool>,
    /// The settings document the page writes (`!home settings.yaml`).
    pub(crate) settings_file: Option<std::path::PathBuf>,
    /// Whether credentials may be changed by this server's clients.
    pub(crate) credentials_writable: bool,
    /// The last folder walked for `@` completions.
    pub(crate) files: std::sync::Arc<crate::files::FileIndex>,
    /// The folds of the sessions read last, caught up on each read.
    pub(crate) folds: crate::fold_cache::FoldCache,
    /// Each session's latest permission preset, read incrementally.
    pub(crate) presets: dsh_sessions_seam::LatestOf<dsh_protocol::PermissionPresetEvent>,
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

/// The session a method's payload names, whatever else it holds.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Named {
    #[serde(default)]
    session_id: Option<String>,
}

/// A method's payload, read as `T` (a shape error is the caller's: `bad-request`).
pub(crate) fn payload<T: serde::de::DeserializeOwned>(
    method: &str,
    payload: serde_json::Value,
) -> Result<T, Failure> {
    serde_json::from_value(payload).map_err(|error| {
        Failure(
            RpcErrorCode::BadRequest,
            format!("{method}: the payload does not fit: {error}"),
        )
    })
}

impl Api {
    /// Answers the body of a call to `method` (the method named by the path).
    pub(crate) async fn call(&self, method: &str, body: &[u8]) -> RpcResponse {
        let request: RpcRequest = match serde_json::from_slice(body) {
            Ok(request) => request,
            Err(error) => {
                return RpcResponse::new(
                    String::new(),
                    RpcResult::error(
                        RpcErrorCode::BadRequest,
                        format!("the body is not a client-request envelope: {error}"),
                    ),
                );
            }
        };
        let result = match request.method == method {
            true => match self.run(method, request.payload).await {
                Ok(value) => RpcResult::value(value),
                Err(Failure(code, message)) => RpcResult::error(code, message),
            },
            false => RpcResult::error(
                RpcErrorCode::BadRequest,
                format!(
                    "the envelope names `{}` but the path `{method}`",
                    request.method
                ),
            ),
        };
        RpcResponse::new(request.rpc_id, result)
    }

    async fn run(
        &self,
        method: &str,
        body: serde_json::Value,
    ) -> Result<serde_json::Value, Failure> {
        // The session methods name their session by `sessionId`: one no session can have is
        // refused here, before any service (or a path built from it) sees it.
        if let Ok(Named {
            session_id: Some(id),
        }) = Named::deserialize(&body)
            && let Err(error) = dsh_protocol::check_session_id(&id)
        {
            return Err(Failure(
                RpcErrorCode::BadRequest,
                format!("{method}: {error}"),
            ));
        }
        let value = match method {
            "host.describe" => serde_json::to_value(self.describe()),
            "host.plugins" => serde_json::to_value(self.plugins()?),
            "session.list" => serde_json::to_value(self.list().await?),
            "session.history" => serde_json::to_value(self.history(payload(method, body)?).await?),
            "session.item" => serde_json::to_value(self.item(payload(method, body)?).await?),
            "session.models" => serde_json::to_value(self.models(payload(method, body)?)),
            "session.selectModel" => {
                serde_json::to_value(self.select_model(payload(method, body)?).await?)
            }
            "session.create" => serde_json::to_value(self.create(payload(method, body)?).await?),
            "session.prompt" => serde_json::to_value(self.prompt(payload(method, body)?).await?),
            "session.rename" => serde_json::to_value(self.rename(payload(method, body)?).await?),
            "session.fork" => serde_json::to_value(self.fork(payload(method, body)?).await?),
            "session.delete" => serde_json::to_value(self.delete(payload(method, body)?).await?),
            "session.restore" => serde_json::to_value(self.restore(payload(method, body)?).await?),
            "files.complete" => {
                serde_json::to_value(self.complete_files(payload(method, body)?).await?)
            }
            "session.search" => serde_json::to_value(self.search(payload(method, body)?).await?),
            "session.trajectory" => {
                serde_json::to_value(self.trajectory(payload(method, body)?).await?)
            }
            "session.archive" => serde_json::to_value(self.archive(payload(method, body)?).await?),
            "session.demo" => serde_json::to_value(self.demo().await?),
            "session.updateQueue" => {
                serde_json::to_value(self.update_queue(payload(method, body)?)?)
            }
            "session.setPermission" => {
                serde_json::to_value(self.set_permission(payload(method, body)?).await?)
            }
            "session.context" => Ok(self.context(payload(method, body)?).await?),
            "commands.list" => Ok(self.commands().await?),
            "session.cancel" => serde_json::to_value(self.cancel(payload(method, body)?)?),
            "session.killJob" => Ok(self.kill_job(payload(method, body)?)?),
            "settings.describe" => {
                serde_json::to_value(self.describe_settings(self.credentials_writable).await?)
            }
            "settings.update" => {
                self.update_settings(payload(method, body)?).await?;
                Ok(serde_json::json!({}))
            }
            "credentials.describe" => {
                serde_json::to_value(self.describe_credentials(self.credentials_writable))
            }
            "credentials.set" => {
                self.set_credential(payload(method, body)?).await?;
                Ok(serde_json::json!({}))
            }
            "credentials.unset" => serde_json::to_value(serde_json::json!({
                "removed": self.unset_credential(payload(method, body)?).await?
            })),
            "project.describe" => serde_json::to_value(self.describe_trust()?),
            "project.trust" => serde_json::to_value(self.trust_project().await?),
            "approval.respond" => serde_json::to_value(self.respond(payload(method, body)?).await?),
            "question.respond" => serde_json::to_value(
                self.questions
                    .answer(payload(method, body)?)
                    .map_err(|error| Failure(RpcErrorCode::BadRequest, error.to_string()))?,
            ),
            other => {
                return Err(Failure(
                    RpcErrorCode::BadRequest,
                    format!("no method `{other}`"),
                ));
            }
        };
        value.map_err(|error| Failure(RpcErrorCode::Internal, error.to_string()))
    }

    pub(crate) fn describe(&self) -> HostDescription {
        let providers = match self.ctx.get::<LlmService>(LLM_SERVICE) {
            Ok(Some(llm)) => llm.providers().iter().map(|p| p.to_string()).collect(),
            _ => Vec::new(),
        };
        HostDescription {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            boot_id: self.boot_id.clone(),
            profile: "web".to_owned(),
            cwd: self.cwd.clone(),
            providers,
            default_model: self.default_model(),
            remote: self.remote,
            demo: self.demo_dir.is_some(),
        }
    }
}

impl Api {
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
        let plugins = serde_json::from_str(host.rows().as_str())
            .map_err(|error| Failure::internal(format!("the host's rows: {error}")))?;
        Ok(dsh_client_protocol::PluginList { plugins })
    }
}

/// Serializes a response body.
pub(crate) fn body(response: &RpcResponse) -> Vec<u8> {
    serde_json::to_vec(response).unwrap_or_default()
}
