//! The DeepSeek adapter's response stream: the input as a chat-completions event stream, fed
//! in reads split anywhere (mid-line, mid-CRLF, mid-UTF-8), through the SSE framing and the
//! chunk translator, then ended; and through a decoder with a small event cap, so the cap's
//! refusal is reached by inputs under the input cap.

use llm_deepseek::{ResponseStream, SseDecoder};

use crate::mutate::chunks;

const STREAM: &str = concat!(
    ": keep-alive\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"deepseek-chat\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"Think\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\r\n\r\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",",
    "\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"comm\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"and\\\":\\\"ls\\\"}\"}}]},",
    "\"finish_reason\":null}]}\n\n",
    "event: message\nid: 7\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\n",
    "data: \"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"prompt_cache_hit_tokens\":3,",
    "\"prompt_tokens_details\":{\"cached_tokens\":3},\"completion_tokens_details\":{\"reasoning_tokens\":1}}}\n\n",
    "data: [DONE]\n\n",
);

const ERROR_STREAM: &str =
    "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":503}}\n\n";

pub(crate) const DICT: &[&[u8]] = &[
    b"data: ",
    b"data:",
    b"event: ",
    b"id: ",
    b"retry: 10\n",
    b": ping\n",
    b"\n\n",
    b"\r\n\r\n",
    b"\r\r",
    b"data: [DONE]\n\n",
    b"\xef\xbb\xbf",
    b"\"choices\":",
    b"\"delta\":",
    b"\"content\":",
    b"\"reasoning_content\":",
    b"\"tool_calls\":",
    b"\"index\":",
    b"\"function\":",
    b"\"arguments\":",
    b"\"name\":",
    b"\"finish_reason\":",
    b"\"usage\":",
    b"\"error\":",
    b"\"prompt_tokens\":",
    b"\"prompt_cache_hit_tokens\":",
    b"length",
    b"stop",
    b"content_filter",
    b"insufficient_system_resource",
    b"tool_calls",
];

pub(crate) fn seeds() -> Vec<Vec<u8>> {
    vec![STREAM.as_bytes().to_vec(), ERROR_STREAM.as_bytes().to_vec()]
}

pub(crate) fn run(input: &[u8]) {
    let reads = chunks(input);
    let mut stream = ResponseStream::new();
    let mut failed = false;
    for read in &reads {
        if stream.push(read).is_err() {
            failed = true;
            break;
        }
    }
    if !failed {
        let _ = stream.finish();
    }
    let mut small = SseDecoder::with_limit(4096);
    for read in &reads {
        if small.push(read).is_err() {
            break;
        }
    }
    let _ = small.has_partial_event();
}
