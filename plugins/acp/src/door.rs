//! The agent's connection to the `clients` service, the host's one door for clients: what an
//! editor changes in a session (its permission preset, its model, its agent preset) is asked
//! of the service with the client protocol's own requests, so the page, the SDK runtime, a
//! socket client and the editor change a session the same way and every client following it
//! sees the change alike. The connection follows no session (its frames are not read: the
//! agent reads its sessions' events itself) and answers no ask (the agent's own answerer puts
//! them to the editor).

use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use dsh_client_protocol::{ClientRequest, RpcErrorCode};
use dsh_clients_seam::{
    CLIENTS_SERVICE, ClientsService, ConnectOptions, ConnectionBox, FrameSink, FrameSink_TO,
};
use dsh_plugin_api::{Context, Json, lock};
use serde::de::DeserializeOwned;

use crate::wire::RpcError;

/// Why the service did not do what it was asked: its code and its words.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) code: RpcErrorCode,
    pub(crate) message: String,
}

impl From<dsh_client_protocol::RpcError> for Refused {
    fn from(error: dsh_client_protocol::RpcError) -> Self {
        Self {
            code: error.code,
            message: error.message,
        }
    }
}

impl Refused {
    fn internal(message: String) -> Self {
        Self {
            code: RpcErrorCode::Internal,
            message,
        }
    }

    /// Whether the caller's value was refused (rather than the service failing).
    fn callers(&self) -> bool {
        matches!(
            self.code,
            RpcErrorCode::BadRequest
                | RpcErrorCode::SessionNotFound
                | RpcErrorCode::ModelUnavailable
                | RpcErrorCode::AgentPresetNotFound
                | RpcErrorCode::AgentPresetInvalid
        )
    }

    /// The ACP error of `method`: `-32602` with `field` (none when empty: the service's
    /// words name it) and the reason where the value was refused, `-32603` naming the method
    /// otherwise.
    pub(crate) fn to_acp(&self, method: &str, field: &str) -> RpcError {
        match (self.callers(), field.is_empty()) {
            (true, true) => RpcError::invalid_params(&self.message),
            (true, false) => RpcError::invalid_params(format!("{field}: {}", self.message)),
            (false, _) => RpcError::internal(format!("{method}: {}", self.message)),
        }
    }
}

/// Where the connection's frames go: nowhere, as it follows nothing.
struct Unread;

impl FrameSink for Unread {
    fn send(&self, _frame: RString) -> bool {
        true
    }
}

/// The connection, opened at its first use.
#[derive(Default)]
pub(crate) struct Door {
    connection: Mutex<Option<Arc<ConnectionBox>>>,
}

impl Door {
    /// The connection; the error names the missing row.
    fn connection(&self, ctx: &Context) -> Result<Arc<ConnectionBox>, Refused> {
        let mut slot = lock(&self.connection);
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let clients = match ctx.get::<ClientsService>(CLIENTS_SERVICE) {
            Ok(Some(clients)) => clients,
            _ => {
                return Err(Refused::internal(format!(
                    "no `{CLIENTS_SERVICE}` row is running on this host (the `acp` bundle mounts one)"
                )));
            }
        };
        let options = ConnectOptions {
            transport: "acp".to_owned(),
            profile: "acp".to_owned(),
            ..ConnectOptions::default()
        };
        let connection = Arc::new(clients.connect(
            Json::encode(&options),
            FrameSink_TO::from_value(Unread, TD_Opaque),
        ));
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// Runs `request`; its result read as `R`.
    pub(crate) async fn call<R: DeserializeOwned>(
        &self,
        ctx: &Context,
        request: ClientRequest,
    ) -> Result<R, Refused> {
        let connection = self.connection(ctx)?;
        let params = request
            .params_text()
            .map_err(|error| Refused::internal(error.to_string()))?;
        let value = dsh_json_rpc::call_coded(&connection, request.method(), params).await?;
        serde_json::from_value(value).map_err(|error| {
            Refused::internal(format!("the service's result does not read: {error}"))
        })
    }
}
