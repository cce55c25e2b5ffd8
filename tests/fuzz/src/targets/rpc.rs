//! The JSON-RPC line readers: the SDK runtime's (the `dsh-json-rpc` kit's bounded line reader
//! and frame classifier, then the runtime's own params), the ACP agent's (its stdin line reader,
//! frame reader and params types) and the MCP client's (a server's stdout split into lines,
//! its HTTP event stream, each message decoded as the connection decodes it, batches too).
//! Lines are capped low (4 KiB) so that the too-long path is reached by inputs under the
//! input cap.

use crate::mutate::chunks;

const LINE_CAP: usize = 4096;

pub(crate) const DICT: &[&[u8]] = &[
    b"{\"jsonrpc\":\"2.0\",",
    b"\"jsonrpc\":",
    b"\"id\":",
    b"\"method\":",
    b"\"params\":",
    b"\"result\":",
    b"\"error\":",
    b"\"code\":",
    b"\"message\":",
    b"\"data\":",
    b"initialize",
    b"session/prompt",
    b"session/new",
    b"session/cancel",
    b"shutdown",
    b"ping",
    b"roots/list",
    b"notifications/tools/list_changed",
    b"\"sessionId\":",
    b"\"prompt\":",
    b"\"contentBlocks\":",
    b"\"provider\":",
    b"\"model\":",
    b"\"maxTokens\":",
    b"\"cwd\":",
    b"\"protocolVersion\":",
    b"\"mcpServers\":",
    b"\"clientCapabilities\":",
    b"\"type\":\"text\"",
    b"\"text\":",
    b"\"type\":\"image\"",
    b"\"mimeType\":",
    b"data: ",
    b"event: message\n",
    b"\n\n",
    b"\r\n",
    b"[",
    b"]",
    b"null",
    b"-32700",
];

pub(crate) fn seeds() -> Vec<Vec<u8>> {
    [
        concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"cwd\":\"/tmp\",",
            "\"provider\":\"deepseek\",\"model\":\"deepseek-chat\",\"maxTokens\":1000,\"protocolVersion\":1}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":\"2\",\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s1\",",
            "\"contentBlocks\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\r\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s1\"}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"shutdown\"}\n",
        ),
        concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,",
            "\"clientCapabilities\":{\"fs\":{\"readTextFile\":true}}}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/new\",\"params\":{\"cwd\":\"/w\",\"mcpServers\":[]}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s\",",
            "\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"AA==\"}]}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow\"}}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32601,\"message\":\"no\"}}\n",
        ),
        concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"echo\",\"inputSchema\":{}}]}}\n",
            "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":",
            "\"notifications/tools/list_changed\"}]\n",
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"roots/list\"}\n\n",
        ),
    ]
    .iter()
    .map(|text| text.as_bytes().to_vec())
    .collect()
}

pub(crate) fn run_sdk(input: &[u8]) {
    let _ = sdk::fuzzing::read_client_lines(input, LINE_CAP);
}

pub(crate) fn run_acp(input: &[u8]) {
    let _ = acp::fuzzing::read_client_lines(input, LINE_CAP as u64);
}

pub(crate) fn run_mcp(input: &[u8]) {
    let reads = chunks(input);
    let _ = mcp::fuzzing::read_stdio(reads.iter().copied());
    let _ = mcp::fuzzing::read_event_stream(reads.iter().copied());
}
