//! `dsh-json-rpc`: newline-delimited JSON-RPC 2.0 as the host's line transports speak it: the
//! SDK runtime on stdio and the client socket under `$DSH_HOME/run/`. [`wire`] frames lines
//! (bounded reads, requests told from notifications and answers, named errors, one writer per
//! stream); [`clients`] runs a method of the client protocol on a connection of the `clients`
//! service and answers it as JSON-RPC, its coded error as the JSON-RPC code with the code's
//! name in `data.code`; [`frame_notification`] carries a client-protocol frame.

pub mod clients;
pub mod wire;

pub use clients::{call, call_coded, frame_notification};
