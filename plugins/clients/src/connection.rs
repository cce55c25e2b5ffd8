//! The door: `clients.connect` opens a connection for a transport, and each connection runs the
//! requests and frames of one client. A connection starts answering approvals when its
//! transport says the client does (the page) or when the client says so in `initialize`; it
//! sends a heartbeat every 15 s so a client notices a host that restarted (a new boot id); it
//! ends, with its subscriptions, when the transport drops it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::RString;
use async_ffi::{FfiFuture, FutureExt};
use dsh_client_protocol::{
    ClientFrame, ClientInfo, HOST_FEATURES, Initialize, Initialized, PROTOCOL_VERSION,
    RpcErrorCode, RpcResult, ServerFrame,
};
use dsh_clients_seam::{ClientConnection, Clients, ConnectOptions, FrameSinkBox};
use dsh_plugin_api::cancel::CancelFlag;
use dsh_plugin_api::{Json, LogLevel, PluginError, lock};

use crate::api::{Api, Failure};
use crate::live::Outbox;

const HEARTBEAT: Duration = Duration::from_secs(15);

/// The features that make a client one of the host's answerers.
const ANSWERING: [&str; 2] = ["approvals", "questions"];

/// A boot id for this run of the service: clients that see a new one resynchronize.
pub(crate) fn boot_id() -> Result<String, PluginError> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes)
        .map_err(|error| PluginError::plugin(format!("no OS randomness: {error}")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Who is connected, for `connections()`.
#[derive(Clone)]
struct Entry {
    id: u64,
    transport: String,
    remote: bool,
    client: Arc<Mutex<ClientInfo>>,
}

/// The `clients` service.
pub(crate) struct Door {
    api: Arc<Api>,
    open: Arc<Mutex<Vec<Entry>>>,
}

impl Door {
    pub(crate) fn new(api: Arc<Api>) -> Self {
        Self {
            api,
            open: Arc::default(),
        }
    }
}

/// What a connection's requests run with: the facts its transport gave.
pub(crate) struct Caller {
    pub(crate) options: ConnectOptions,
    pub(crate) cwd: String,
}

/// One client's connection.
struct Connection {
    api: Arc<Api>,
    outbox: Outbox,
    caller: Arc<Caller>,
    client: Arc<Mutex<ClientInfo>>,
    open: Arc<Mutex<Vec<Entry>>>,
    closed: Arc<CancelFlag>,
}

impl Clients for Door {
    fn connect(
        &self,
        options: Json<ConnectOptions>,
        sink: FrameSinkBox,
    ) -> dsh_clients_seam::ConnectionBox {
        let options = options.decode().unwrap_or_default();
        let answers = options.answers;
        let outbox = self.api.hub.connect(sink, answers);
        let cwd = options
            .cwd
            .clone()
            .unwrap_or_else(|| self.api.host_cwd.clone());
        let client = Arc::new(Mutex::new(ClientInfo::default()));
        lock(&self.open).push(Entry {
            id: outbox.id,
            transport: options.transport.clone(),
            remote: options.remote,
            client: client.clone(),
        });
        let closed = CancelFlag::new();
        if options.heartbeat {
            let (beat, sleeper, ended) = (outbox.clone(), self.api.ctx.clone(), closed.clone());
            let frame = ServerFrame::Heartbeat {
                boot_id: self.api.boot_id.clone(),
            };
            let _ = self.api.ctx.spawn(async move {
                loop {
                    let _ = beat.push(&frame);
                    if ended.until(sleeper.sleep(HEARTBEAT)).await.is_none() {
                        return;
                    }
                }
            });
        }
        self.api.ctx.log(
            LogLevel::Debug,
            &format!(
                "client connection {} opened ({}{})",
                outbox.id,
                options.transport,
                if options.remote { ", remote" } else { "" }
            ),
        );
        dsh_clients_seam::ClientConnection_TO::from_value(
            Connection {
                api: self.api.clone(),
                outbox,
                caller: Arc::new(Caller { options, cwd }),
                client,
                open: self.open.clone(),
                closed,
            },
            abi_stable::sabi_trait::TD_Opaque,
        )
    }

    fn connections(&self) -> RString {
        let rows: Vec<serde_json::Value> = lock(&self.open)
            .iter()
            .map(|entry| {
                let client = lock(&entry.client).clone();
                serde_json::json!({
                    "id": entry.id,
                    "transport": entry.transport,
                    "remote": entry.remote,
                    "client": client.name,
                    "clientVersion": client.version,
                })
            })
            .collect();
        RString::from(serde_json::Value::from(rows).to_string())
    }
}

impl Connection {
    /// `initialize`: the version both speak and the features both use; a client that says it
    /// answers approvals or questions becomes one of their answerers.
    fn initialize(&self, hello: Initialize) -> Result<Initialized, Failure> {
        if hello.protocol_version == 0 {
            return Err(Failure(
                RpcErrorCode::BadRequest,
                "initialize: protocolVersion starts at 1".to_owned(),
            ));
        }
        let features: Vec<String> = HOST_FEATURES
            .iter()
            .filter(|feature| hello.features.iter().any(|asked| asked == *feature))
            .map(|feature| (*feature).to_owned())
            .collect();
        let answers = features
            .iter()
            .any(|feature| ANSWERING.contains(&feature.as_str()));
        self.outbox
            .set_answers(answers || self.caller.options.answers);
        *lock(&self.client) = hello.client_info;
        Ok(Initialized {
            protocol_version: hello.protocol_version.min(PROTOCOL_VERSION),
            host: self.api.describe(&self.caller),
            features,
            connection_id: self.outbox.id,
        })
    }
}

impl ClientConnection for Connection {
    fn id(&self) -> u64 {
        self.outbox.id
    }

    fn call(&self, method: RString, params: RString) -> FfiFuture<RString> {
        let (api, caller, outbox) = (self.api.clone(), self.caller.clone(), self.outbox.clone());
        let initialize = (method.as_str() == "initialize").then(|| {
            crate::api::payload::<Initialize>(method.as_str(), &params).and_then(|hello| {
                let value = self.initialize(hello)?;
                serde_json::to_value(value).map_err(|error| Failure::internal(error.to_string()))
            })
        });
        async move {
            let result = match initialize {
                Some(answer) => answer,
                None => api.run(&caller, &outbox, method.as_str(), &params).await,
            };
            let result = match result {
                Ok(value) => RpcResult::value(value),
                Err(Failure(code, message)) => RpcResult::error(code, message),
            };
            RString::from(serde_json::to_string(&result).unwrap_or_default())
        }
        .into_ffi()
    }

    fn frame(&self, frame: RString) -> FfiFuture<()> {
        let (api, outbox) = (self.api.clone(), self.outbox.clone());
        async move {
            match serde_json::from_str::<ClientFrame>(&frame) {
                Ok(ClientFrame::Subscribe {
                    session_id,
                    after_seq,
                }) => api.subscribe(&outbox, &session_id, after_seq).await,
                Ok(ClientFrame::Unsubscribe { session_id }) => {
                    api.hub.unsubscribe(&outbox, &session_id);
                }
                Err(error) => {
                    let _ = outbox.push(&ServerFrame::Error {
                        message: format!("a frame this server cannot read: {error}"),
                    });
                }
            }
        }
        .into_ffi()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.closed.fire();
        self.api.hub.disconnect(self.outbox.id);
        lock(&self.open).retain(|entry| entry.id != self.outbox.id);
    }
}
