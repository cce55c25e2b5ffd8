//! The web API's envelope read and written in the reference's shape.

use super::*;
use serde_json::json;

#[test]
fn the_envelope_has_the_reference_shape() {
    let request: RpcRequest = serde_json::from_value(
        json!({"type": "client-request", "rpcId": "r1", "method": "host.describe"}),
    )
    .unwrap();
    assert_eq!(request.method, "host.describe");
    assert!(
        serde_json::from_value::<RpcRequest>(
            json!({"type": "server-response", "rpcId": "r1", "method": "m"})
        )
        .is_err()
    );
    let response = RpcResponse::new(
        "r1",
        RpcResult::error(RpcErrorCode::SessionNotFound, "no session `x`"),
    );
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({"type": "server-response", "rpcId": "r1", "result": {"ok": false, "error": {"code": "session-not-found", "message": "no session `x`"}}})
    );
}
