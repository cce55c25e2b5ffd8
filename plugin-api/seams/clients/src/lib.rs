//! `dsh-clients-seam`: the `clients` service across the plugin ABI, the one door every client
//! comes through. A transport (the web server, the SDK runtime on stdio, the local socket)
//! opens a [`ClientConnection`] with what it knows of the client ([`ConnectOptions`]: facts the
//! client cannot claim, such as whether it comes over the network) and a [`FrameSink`] its
//! frames go to; it then hands each request (a method and its params, as the client protocol
//! `dsh-client-protocol` defines them) and each client frame to the connection, and frames
//! bytes. It knows nothing of sessions, prompts or approvals; the service knows nothing of
//! bytes.
//!
//! Requests, results and frames cross as JSON text: they are the protocol's own wire form, so
//! a transport passes them through without decoding what it does not need to. Dropping the
//! connection ends it (its subscriptions, its share of pending approvals).
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, RString};
use async_ffi::FfiFuture;
use dsh_plugin_api::Json;
use serde::{Deserialize, Serialize};

/// Service key of the client protocol's service.
pub const CLIENTS_SERVICE: &str = "clients";

/// What the transport knows of a client, which the client cannot claim for itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConnectOptions {
    /// The transport's name (`web`, `socket`, `sdk`), for logs and `dsh-host status`.
    pub transport: String,
    /// The profile the host runs, as `host.describe` reports it.
    pub profile: String,
    /// The client comes over the network: settings and credentials are read-only for it
    /// unless `settings_writable`.
    pub remote: bool,
    /// Whether this client may change settings, credentials and project trust.
    pub settings_writable: bool,
    /// The directory its new sessions start in (the host's working directory without it).
    pub cwd: Option<String>,
    /// Whether it answers approvals and questions before it says so in `initialize` (the page
    /// does; a socket or SDK client says so with the `approvals` and `questions` features).
    pub answers: bool,
    /// Whether the service sends this connection a `heartbeat` frame every 15 s (a transport
    /// with a heartbeat of its own, such as the page's, says no).
    pub heartbeat: bool,
}

/// Where a connection's frames go: each is one `ServerFrame` as JSON text. Answers `false`
/// when it cannot take the frame (its queue is full or the client is gone): the service then
/// tells the client to resynchronize rather than let it fall silently behind.
#[sabi_trait]
pub trait FrameSink: Send + Sync {
    fn send(&self, frame: RString) -> bool;
}
pub type FrameSinkBox = FrameSink_TO<'static, RBox<()>>;

/// One client's connection.
#[sabi_trait]
pub trait ClientConnection: Send + Sync {
    /// This connection's id (unique in the host's run).
    fn id(&self) -> u64;
    /// Runs one request: `method` and its `params` as JSON text (empty for none). Answers the
    /// result as the client protocol's `RpcResult` JSON: `{"ok":true,"value":..}` or
    /// `{"ok":false,"error":{"code","message"}}`.
    fn call(&self, method: RString, params: RString) -> FfiFuture<RString>;
    /// One `ClientFrame` as JSON text (subscribe, unsubscribe); what it causes arrives as frames.
    fn frame(&self, frame: RString) -> FfiFuture<()>;
}
pub type ConnectionBox = ClientConnection_TO<'static, RBox<()>>;

/// The `clients` service.
#[sabi_trait]
pub trait Clients: Send + Sync {
    /// Opens a connection whose frames go to `sink`.
    fn connect(&self, options: Json<ConnectOptions>, sink: FrameSinkBox) -> ConnectionBox;
    /// The connections open now, as JSON: `[{id, transport, client, remote}]`.
    fn connections(&self) -> RString;
}
pub type ClientsService = Clients_TO<'static, RBox<()>>;
