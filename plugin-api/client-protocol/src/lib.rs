//! `dsh-client-protocol`: the one protocol every client of a host speaks, as data. The page
//! (HTTP and WebSocket), the SDK runtime (JSON-RPC on stdio), the local socket and the terminal
//! UI all send the same [`ClientRequest`]s (a method and its params, one serde-tagged enum),
//! get the same typed results or a coded [`RpcErrorCode`], and follow the same [`ServerFrame`]s.
//! A connection starts with `initialize`: the client says which protocol version and features
//! it speaks, the host answers its own and what they share, so a newer host serves an older
//! client ([`PROTOCOL_VERSION`], [`HOST_FEATURES`]).
//!
//! Data only: no logic beyond parsing a request and mapping codes, no I/O, no plugin boundary.
//! The service that serves it is the `clients` plugin; each transport only frames bytes.
//! [`schema_document`] is the protocol's JSON Schema (`dsh-host schema` prints it).

mod attachments;
mod chat;
mod envelope;
mod frames;
mod goals;
mod handshake;
mod payloads;
mod presets;
mod providers;
mod request;
mod schema;
mod stats;
mod trajectory;

pub use attachments::{AttachmentData, ReadAttachment, UploadImage};
pub use chat::{
    AppendField, ChatItem, ItemOp, NoticeLevel, SessionHistory, SessionUpdate, WIRE_TEXT_LIMIT,
};
pub use envelope::{
    ClientRequestTag, RpcError, RpcErrorCode, RpcRequest, RpcResponse, RpcResult, ServerResponseTag,
};
pub use frames::{ClientFrame, ServerFrame};
pub use goals::{GoalCreate, GoalEdit, GoalState, GoalTarget};
pub use handshake::{
    ClientInfo, HOST_FEATURES, Initialize, Initialized, PROTOCOL_VERSION, SubscribeRequest,
};
pub use payloads::*;
pub use presets::{CopyPreset, PresetList, PresetRef, SelectPreset};
pub use providers::{
    DiscoverModels, DiscoveredModels, ProviderList, ProviderRef, ProviderState, SaveProvider,
};
pub use request::{ClientRequest, METHODS, NoParams, RequestError};
pub use schema::schema_document;
pub use stats::{SessionStats, TurnStats};
pub use trajectory::{Trajectory, TrajectoryCall, TrajectoryStep, TrajectoryTurn};
