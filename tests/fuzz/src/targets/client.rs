//! The client protocol's request reader: the input as the web transport's body (the
//! `client-request` envelope, then `ClientRequest::parse` of its method and payload, then the
//! session id check every request passes), as the socket's params text for one method (the
//! `clients` service's path: trimmed, parsed, read), and as a frame a client sends on the
//! event socket.

use dsh_client_protocol::{ClientFrame, ClientRequest, METHODS, RpcRequest};

use crate::mutate::fnv;

pub(crate) const DICT: &[&[u8]] = &[
    b"\"type\":\"client-request\"",
    b"\"rpcId\":",
    b"\"method\":",
    b"\"payload\":",
    b"\"params\":",
    b"\"sessionId\":",
    b"\"afterSeq\":",
    b"\"text\":",
    b"\"title\":",
    b"\"query\":",
    b"\"limit\":",
    b"\"seq\":",
    b"\"itemId\":",
    b"\"model\":",
    b"\"mode\":",
    b"\"name\":",
    b"\"value\":",
    b"\"action\":",
    b"\"images\":",
    b"\"data\":",
    b"\"mediaType\":",
    b"\"jobId\":",
    b"\"goalId\":",
    b"\"objective\":",
    b"\"presetId\":",
    b"\"protocolVersion\":",
    b"\"clientInfo\":",
    b"\"cwd\":",
    b"\"archived\":",
    b"\"effort\":",
    b"\"ops\":",
    b"\"from\":",
    b"\"to\":",
    b"\"scope\":",
    b"\"rule\":",
    b"\"approvalId\":",
    b"\"accepted\":",
    b"\"revision\":",
    b"\"attachment\":",
    b"\"profile\":",
    b"\"route\":",
    b"\"command\":",
    b"\"type\":\"subscribe\"",
    b"\"type\":\"unsubscribe\"",
    b"session.prompt",
    b"session.history",
    b"settings.update",
    b"../../etc",
    b"\"\\u0000\"",
];

pub(crate) fn seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = METHODS
        .iter()
        .enumerate()
        .map(|(index, method)| {
            format!(
                "{{\"type\":\"client-request\",\"rpcId\":\"{index}\",\"method\":\"{method}\",\
                 \"payload\":{{\"sessionId\":\"s-{index}\",\"text\":\"hi\",\"limit\":10,\"afterSeq\":3}}}}"
            )
            .into_bytes()
        })
        .collect();
    seeds.push(br#"{"type":"subscribe","sessionId":"s1","afterSeq":4}"#.to_vec());
    seeds.push(br#"{"type":"unsubscribe","sessionId":"s1"}"#.to_vec());
    seeds.push(
        br#"{"sessionId":"s1","text":"hello","images":[{"mediaType":"image/png","data":"AAAA"}]}"#
            .to_vec(),
    );
    seeds
}

fn read(method: &str, params: serde_json::Value) {
    if let Ok(request) = ClientRequest::parse(method, params)
        && let Some(id) = request.session_id()
    {
        let _ = dsh_protocol::check_session_id(id);
    }
}

pub(crate) fn run(input: &[u8]) {
    if let Ok(envelope) = serde_json::from_slice::<RpcRequest>(input) {
        read(&envelope.method, envelope.payload);
    }
    let _ = serde_json::from_slice::<ClientFrame>(input);
    if METHODS.is_empty() {
        return;
    }
    let method = METHODS[(fnv(input) % METHODS.len() as u64) as usize];
    let params = match std::str::from_utf8(input).map(str::trim) {
        Ok("") => serde_json::Value::Null,
        Ok(text) => match serde_json::from_str(text) {
            Ok(params) => params,
            Err(_) => return,
        },
        Err(_) => return,
    };
    read(method, params);
}
