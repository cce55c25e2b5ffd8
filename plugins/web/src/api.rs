//! The unary methods of `POST /api/<method>`: the envelope read and checked, the method run,
//! its value or its coded error answered in the reference's response shape.

use dsh_llm_seam::{LLM, LlmService};
use dsh_plugin_api::Context;
use dsh_protocol::{
    HostDescription, RpcErrorCode, RpcRequest, RpcResponse, RpcResult, SessionList,
    SessionTitleEvent,
};
use dsh_session_seam::{
    SESSION_PERSISTENCE, SESSIONS, SessionStoreService, SessionsService, open_live,
};

/// What the methods read.
pub(crate) struct Api {
    pub(crate) ctx: Context,
    pub(crate) boot_id: String,
    pub(crate) cwd: String,
    pub(crate) remote: bool,
    pub(crate) default_model: Option<String>,
}

/// A method's failure, coded.
struct Failure(RpcErrorCode, String);

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
        _payload: serde_json::Value,
    ) -> Result<serde_json::Value, Failure> {
        let value = match method {
            "host.describe" => serde_json::to_value(self.describe()),
            "session.list" => serde_json::to_value(self.sessions().await?),
            other => {
                return Err(Failure(
                    RpcErrorCode::BadRequest,
                    format!("no method `{other}`"),
                ));
            }
        };
        value.map_err(|error| Failure(RpcErrorCode::Internal, error.to_string()))
    }

    fn describe(&self) -> HostDescription {
        let providers = match self.ctx.get::<LlmService>(LLM) {
            Ok(Some(llm)) => llm.providers().iter().map(|p| p.to_string()).collect(),
            _ => Vec::new(),
        };
        HostDescription {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            boot_id: self.boot_id.clone(),
            profile: "web".to_owned(),
            cwd: self.cwd.clone(),
            providers,
            default_model: self.default_model.clone(),
            remote: self.remote,
        }
    }

    /// Stored sessions, with the live ones marked and titled from their logs.
    async fn sessions(&self) -> Result<SessionList, Failure> {
        let internal = |message: String| Failure(RpcErrorCode::Internal, message);
        let mut sessions = match self.ctx.get::<SessionStoreService>(SESSION_PERSISTENCE) {
            Ok(Some(store)) => store
                .list()
                .await
                .into_result()
                .map_err(|error| internal(format!("the session store: {error}")))?
                .decode()
                .map_err(|error| internal(format!("the session store's listing: {error}")))?,
            _ => Vec::new(),
        };
        let live: Vec<String> = match self.ctx.get::<SessionsService>(SESSIONS) {
            Ok(Some(service)) => service.live().iter().map(|id| id.to_string()).collect(),
            _ => Vec::new(),
        };
        for summary in &mut sessions {
            if live.contains(&summary.id) {
                summary.live = true;
                summary.title = self.live_title(&summary.id);
            }
        }
        Ok(SessionList { sessions })
    }

    /// The latest `session/title` of a live session.
    fn live_title(&self, id: &str) -> Option<String> {
        let session = open_live(&self.ctx, id).ok()?;
        let events = session.events(0, session.event_count());
        events
            .iter()
            .rev()
            .filter(|record| record.kind.as_str() == "session/title")
            .find_map(|record| record.decode::<SessionTitleEvent>()?.ok())
            .map(|title| title.title)
    }
}

/// Serializes a response body.
pub(crate) fn body(response: &RpcResponse) -> Vec<u8> {
    serde_json::to_vec(response).unwrap_or_default()
}
