//! The script of a fake server: what each request gets (SSE events, statuses, faults) and
//! helpers that build the common answers.

use std::time::Duration;

use serde_json::{Value, json};

/// One step of a scripted SSE body.
#[derive(Debug, Clone, PartialEq)]
pub enum SseEvent {
    /// `data: <payload>\n\n`.
    Data(String),
    /// `: <text>\n\n` (a keep-alive comment).
    Comment(String),
    /// `data: [DONE]\n\n`.
    Done,
    /// Sleep before the next step.
    Pause(Duration),
    /// Bytes written as they are (for framing tests: split events, CRLF, partial lines).
    Raw(String),
    /// Wait until this file exists (at most [`GATE_LIMIT`]) before the next step: a stream held
    /// open mid-body until the test says, with no timing to guess.
    Gate(std::path::PathBuf),
}

/// The longest a [`SseEvent::Gate`] waits for its file.
pub(super) const GATE_LIMIT: Duration = Duration::from_secs(60);

/// How the server answers one chat-completions request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200 with a chunked SSE body, one chunk per event, then the terminating chunk.
    Sse(Vec<SseEvent>),
    /// 200 with an SSE body ended by closing the connection (no length, no chunking).
    SseUntilClose(Vec<SseEvent>),
    /// A complete non-SSE response (401, 429 with `retry-after`, 500...).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// 200, the first `after_events` steps of `events`, then the socket is closed mid-body.
    DropMidStream {
        events: Vec<SseEvent>,
        after_events: usize,
    },
    /// 200 with a payload that is not JSON, then `[DONE]`.
    Malformed,
    /// 200 headers, then silence for `ms`, then the socket is closed.
    Stall { ms: u64 },
    /// 200, then content deltas of about `chunk_bytes` each, `every` apart (zero: as fast as
    /// the client reads them), never `[DONE]`: a model that does not stop. Ends when the
    /// client closes the connection, the server stops, or after a safety bound (1 GiB or two
    /// minutes).
    Endless { chunk_bytes: usize, every: Duration },
    /// 200, then only keep-alive comments (`: ping`) every `every`: a provider that holds the
    /// request open without answering. Ends as [`Reply::Endless`] does.
    KeepAliveOnly { every: Duration },
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON, or as a JSON string when it was not JSON.
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The first chunk of a thinking-mode stream: role, null content, empty reasoning.
pub fn first_chunk() -> SseEvent {
    SseEvent::Data(
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "reasoning_content": ""}, "finish_reason": null}]})
            .to_string(),
    )
}

impl SseEvent {
    pub fn json(value: &Value) -> Self {
        Self::Data(value.to_string())
    }

    fn delta(delta: Value) -> Self {
        Self::json(&json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}))
    }

    pub fn content(text: &str) -> Self {
        Self::delta(json!({"content": text}))
    }

    pub fn reasoning(text: &str) -> Self {
        Self::delta(json!({"content": null, "reasoning_content": text}))
    }

    /// One tool-call fragment; `id` and `name` come on a call's first fragment only.
    pub fn tool_call(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> Self {
        let mut call = json!({"index": index, "function": {"arguments": arguments}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        Self::delta(json!({"tool_calls": [call]}))
    }

    /// The finish chunk (`stop`, `tool_calls`, `length`, `content_filter`...).
    pub fn finish(reason: &str) -> Self {
        Self::json(
            &json!({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": reason}]}),
        )
    }

    /// The finish chunk with usage attached.
    pub fn finish_with_usage(reason: &str, usage: &Value) -> Self {
        Self::json(
            &json!({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": reason}], "usage": usage}),
        )
    }

    /// A trailing usage-only chunk.
    pub fn usage(usage: &Value) -> Self {
        Self::json(&json!({"choices": [], "usage": usage}))
    }
}

/// Wire usage as DeepSeek reports it (`prompt_tokens` includes the cached ones).
pub fn usage(prompt: u64, completion: u64, cached: u64, reasoning: Option<u64>) -> Value {
    let mut usage = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_cache_hit_tokens": cached,
        "prompt_cache_miss_tokens": prompt.saturating_sub(cached),
        "prompt_tokens_details": {"cached_tokens": cached},
    });
    if let Some(reasoning) = reasoning {
        usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
    }
    usage
}

/// `text` in pieces of about `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

impl Reply {
    /// A plain answer streamed in small pieces, usage on the finish chunk.
    pub fn text(text: &str) -> Self {
        let mut events = vec![first_chunk()];
        events.extend(pieces(text, 4).iter().map(|piece| SseEvent::content(piece)));
        events.push(SseEvent::finish_with_usage("stop", &usage(10, 5, 0, None)));
        events.push(SseEvent::Done);
        Self::Sse(events)
    }

    /// Reasoning, then the answer; usage in a trailing chunk.
    pub fn reasoning_then_text(reasoning: &str, text: &str) -> Self {
        let mut events = vec![first_chunk()];
        events.extend(
            pieces(reasoning, 4)
                .iter()
                .map(|piece| SseEvent::reasoning(piece)),
        );
        events.extend(pieces(text, 4).iter().map(|piece| SseEvent::content(piece)));
        events.push(SseEvent::finish("stop"));
        events.push(SseEvent::usage(&usage(20, 9, 16, Some(4))));
        events.push(SseEvent::Done);
        Self::Sse(events)
    }

    /// Parallel tool calls `(id, name, arguments)`, each call's arguments split in two and the
    /// calls' fragments interleaved, then a `tool_calls` finish and trailing usage.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        let mut events = vec![first_chunk()];
        let halves: Vec<(String, String)> = calls
            .iter()
            .map(|(_, _, args)| {
                let chars: Vec<char> = args.chars().collect();
                let (head, tail) = chars.split_at(chars.len() / 2);
                (head.iter().collect(), tail.iter().collect())
            })
            .collect();
        for (index, ((id, name, _), (head, _))) in calls.iter().zip(&halves).enumerate() {
            let index = u32::try_from(index).unwrap();
            events.push(SseEvent::tool_call(index, Some(id), Some(name), ""));
            events.push(SseEvent::tool_call(index, None, None, head));
        }
        for (index, (_, tail)) in halves.iter().enumerate() {
            let index = u32::try_from(index).unwrap();
            events.push(SseEvent::tool_call(index, None, None, tail));
        }
        events.push(SseEvent::finish("tool_calls"));
        events.push(SseEvent::usage(&usage(30, 12, 0, None)));
        events.push(SseEvent::Done);
        Self::Sse(events)
    }

    /// One tool call `id` of `name` with `arguments`, as [`Self::tool_calls`] streams it.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Self::tool_calls(&[(id, name, &arguments.to_string())])
    }

    /// One step per call, each a single tool call (ids `call_0`, `call_1`, …), then the
    /// closing text.
    pub fn one_call_per_step<'a>(
        calls: impl IntoIterator<Item = (&'a str, &'a Value)>,
        closing: &str,
    ) -> Vec<Self> {
        let mut script: Vec<Self> = calls
            .into_iter()
            .enumerate()
            .map(|(index, (tool, arguments))| {
                Self::tool_calls(&[(&format!("call_{index}"), tool, &arguments.to_string())])
            })
            .collect();
        script.push(Self::text(closing));
        script
    }

    /// A JSON error body in the provider's shape.
    pub fn error(status: u16, code: &str, message: &str) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: json!({"error": {"message": message, "type": code, "code": code}}).to_string(),
        }
    }

    /// 429 with `retry-after: <seconds>`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::Status {
            status: 429,
            headers: vec![
                ("retry-after".into(), retry_after_secs.to_string()),
                ("x-request-id".into(), "fake-request-429".into()),
            ],
            body: json!({"error": {"message": "fake rate limit", "type": "rate_limit", "code": "rate_limit"}}).to_string(),
        }
    }

    pub fn unauthorized() -> Self {
        Self::error(401, "invalid_api_key", "fake authentication failed")
    }

    pub fn server_error() -> Self {
        Self::error(500, "server_error", "fake server error")
    }
}
