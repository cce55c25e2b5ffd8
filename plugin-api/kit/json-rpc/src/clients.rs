//! A method of the client protocol run on a connection of the `clients` service, answered as
//! JSON-RPC: the value as `result`, a coded failure as `error` with the JSON-RPC code of its
//! [`RpcErrorCode`] and the code's name in `data.code` (`agent-busy`). The frames the
//! connection sends go out as `frame` notifications whose params are the frame itself.

use abi_stable::std_types::RString;
use dsh_client_protocol::{RpcError as Coded, RpcErrorCode, RpcResult};
use dsh_clients_seam::ConnectionBox;
use serde_json::{Value, json};

use crate::wire::RpcError;

/// The method of the notification that carries a client-protocol frame.
pub const FRAME_METHOD: &str = "frame";

/// Runs `method` with `params` on `connection`, answered as JSON-RPC.
pub async fn call(
    connection: &ConnectionBox,
    method: &str,
    params: Value,
) -> Result<Value, RpcError> {
    let params = match params {
        Value::Null => String::new(),
        other => other.to_string(),
    };
    call_coded(connection, method, params)
        .await
        .map_err(|error| {
            RpcError::new(error.code.json_rpc_code(), error.message)
                .with_data(json!({"code": error.code.name()}))
        })
}

/// Runs `method` with `params` (JSON text, empty for none) on `connection`: its value, or the
/// service's coded failure as it gave it (an in-process caller that answers in a protocol of
/// its own, as the ACP agent does). An answer that does not read is an `internal` failure.
pub async fn call_coded(
    connection: &ConnectionBox,
    method: &str,
    params: String,
) -> Result<Value, Coded> {
    let internal = |message: String| Coded {
        code: RpcErrorCode::Internal,
        message,
        details: None,
    };
    let answer = connection
        .call(RString::from(method), RString::from(params))
        .await;
    let result: RpcResult = serde_json::from_str(&answer)
        .map_err(|error| internal(format!("the service's answer does not read: {error}")))?;
    match (result.ok, result.value, result.error) {
        (true, value, _) => Ok(value.unwrap_or(Value::Null)),
        (false, _, Some(error)) => Err(error),
        (false, _, None) => Err(internal("the service failed without a reason".to_owned())),
    }
}

/// The notification line of one frame (already JSON text, as the connection sends it).
pub fn frame_notification(frame: &str) -> String {
    let params: Value = serde_json::from_str(frame).unwrap_or(Value::Null);
    json!({"jsonrpc": "2.0", "method": FRAME_METHOD, "params": params}).to_string()
}

/// The JSON-RPC code of a client-protocol failure code (re-exported for transports that
/// refuse before the service is asked).
pub fn code_of(code: RpcErrorCode) -> i64 {
    code.json_rpc_code()
}
