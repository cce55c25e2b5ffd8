//! Captured-style SSE transcripts through the decoder and translator, read at every split.

use dsh_llm_kit::BlockAssembler;
use dsh_protocol::{ContentBlock, FailureCode, FinishReason, LlmFailure, StreamChunk};
use serde_json::{Value, json};

use crate::stream::ResponseStream;
use crate::translate::{StreamTranslator, map_finish_reason, map_usage};

/// The live first-chunk signature of a thinking stream: role, null content, EMPTY reasoning.
const FIRST: &str = r#"{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"finish_reason":null}]}"#;

/// An SSE body from payloads, each framed as one event.
fn sse(payloads: &[&str]) -> String {
    payloads.iter().map(|p| format!("data: {p}\n\n")).collect()
}

/// Feeds `body` in reads of `size` bytes; the chunks, or the first failure (end of body
/// included).
fn run_split(body: &str, size: usize) -> Result<Vec<StreamChunk>, LlmFailure> {
    let mut stream = ResponseStream::new();
    let mut chunks = Vec::new();
    for read in body.as_bytes().chunks(size.max(1)) {
        chunks.extend(stream.push(read)?.chunks);
        if stream.is_done() {
            break;
        }
    }
    stream.finish()?;
    Ok(chunks)
}

/// Runs `body` at several split sizes, checks they agree, returns the chunks as JSON.
fn run(body: &str) -> Result<Value, LlmFailure> {
    let whole = run_split(body, body.len());
    for size in [1, 2, 3, 7, 64] {
        assert_eq!(run_split(body, size), whole, "reads of {size} bytes differ");
    }
    whole.map(|chunks| serde_json::to_value(chunks).unwrap())
}

fn assemble(chunks: &Value) -> (Vec<ContentBlock>, FinishReason) {
    let mut assembler = BlockAssembler::new();
    for chunk in chunks.as_array().unwrap() {
        assembler.push(&serde_json::from_value::<StreamChunk>(chunk.clone()).unwrap());
    }
    (assembler.blocks().unwrap(), assembler.finish())
}

#[test]
fn text_with_usage_on_the_finish_chunk() {
    let chunks = run(&sse(&[
        FIRST,
        r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        "[DONE]",
    ]))
    .unwrap();
    assert_eq!(
        chunks,
        json!([
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "Hel"},
            {"type": "text-delta", "index": 0, "text": "lo"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello"}},
            {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ])
    );
    assert_eq!(assemble(&chunks).0, [ContentBlock::text("Hello")]);
}

#[test]
fn reasoning_then_text_are_separate_blocks() {
    let chunks = run(&sse(&[
        FIRST,
        r#"{"choices":[{"delta":{"content":null,"reasoning_content":"think"}}]}"#,
        r#"{"choices":[{"delta":{"content":null,"reasoning_content":"ing"}}]}"#,
        r#"{"choices":[{"delta":{"content":"answer","reasoning_content":null}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":283,"completion_tokens":69,"prompt_cache_hit_tokens":256,"prompt_cache_miss_tokens":27,"prompt_tokens_details":{"cached_tokens":256},"completion_tokens_details":{"reasoning_tokens":24}}}"#,
        "[DONE]",
    ]))
    .unwrap();
    assert_eq!(
        chunks,
        json!([
            {"type": "block-start", "index": 0, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": 0, "text": "think"},
            {"type": "reasoning-delta", "index": 0, "text": "ing"},
            {"type": "block-start", "index": 1, "blockType": "text"},
            {"type": "text-delta", "index": 1, "text": "answer"},
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "thinking"}},
            {"type": "block-end", "index": 1, "block": {"type": "text", "text": "answer"}},
            {"type": "usage", "usage": {"inputTokens": 27, "outputTokens": 69, "cacheReadTokens": 256, "reasoningTokens": 24}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ])
    );
}

#[test]
fn two_parallel_tool_calls_split_across_chunks() {
    let chunks = run(&sse(&[
        FIRST,
        r#"{"choices":[{"delta":{"reasoning_content":"Two reads."}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_00_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"file_path\""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_01_b","type":"function","function":{"name":"bash","arguments":"{\"command\": "}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":": \"a.txt\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"ls\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"content":""},"finish_reason":"tool_calls"}],"usage":null}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":30,"prompt_cache_hit_tokens":64}}"#,
        "[DONE]",
    ]))
    .unwrap();
    let delta = |index: u32, id: &str, name: &str, args: &str| json!({"type": "tool-call-delta", "index": index, "id": id, "name": name, "argumentsDelta": args});
    assert_eq!(
        chunks,
        json!([
            {"type": "block-start", "index": 0, "blockType": "reasoning"},
            {"type": "reasoning-delta", "index": 0, "text": "Two reads."},
            {"type": "block-start", "index": 1, "blockType": "tool-call"},
            delta(1, "call_00_a", "read", ""),
            delta(1, "call_00_a", "read", "{\"file_path\""),
            {"type": "block-start", "index": 2, "blockType": "tool-call"},
            delta(2, "call_01_b", "bash", "{\"command\": "),
            delta(1, "call_00_a", "read", ": \"a.txt\"}"),
            delta(2, "call_01_b", "bash", "\"ls\"}"),
            {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Two reads."}},
            {"type": "block-end", "index": 1, "block": {"type": "tool-call", "id": "call_00_a", "name": "read", "arguments": "{\"file_path\": \"a.txt\"}"}},
            {"type": "block-end", "index": 2, "block": {"type": "tool-call", "id": "call_01_b", "name": "bash", "arguments": "{\"command\": \"ls\"}"}},
            {"type": "usage", "usage": {"inputTokens": 36, "outputTokens": 30, "cacheReadTokens": 64}},
            {"type": "finish", "reason": {"kind": "tool-calls"}},
        ])
    );
    let (blocks, finish) = assemble(&chunks);
    assert_eq!(finish, FinishReason::ToolCalls);
    assert_eq!(blocks.len(), 3);
}

#[test]
fn usage_is_deferred_to_done_and_the_latest_wins() {
    let chunks = run(&sse(&[
        r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":2}}"#,
        "[DONE]",
    ]))
    .unwrap();
    let kinds: Vec<&str> = chunks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["block-start", "text-delta", "block-end", "usage", "finish"]
    );
    assert_eq!(
        chunks[3]["usage"],
        json!({"inputTokens": 2, "outputTokens": 2})
    );
}

fn finish_of(reason: Option<&str>) -> Value {
    let last = match reason {
        Some(reason) => format!(r#"{{"choices":[{{"delta":{{}},"finish_reason":"{reason}"}}]}}"#),
        None => r#"{"choices":[{"delta":{}}]}"#.to_owned(),
    };
    let chunks = run(&sse(&[
        r#"{"choices":[{"delta":{"content":"partial"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]}"#,
        &last,
        "[DONE]",
    ]))
    .unwrap();
    chunks.as_array().unwrap().last().unwrap()["reason"].clone()
}

#[test]
fn every_finish_reason_maps() {
    assert_eq!(finish_of(Some("stop")), json!({"kind": "stop"}));
    assert_eq!(finish_of(None), json!({"kind": "stop"}));
    assert_eq!(finish_of(Some("tool_calls")), json!({"kind": "tool-calls"}));
    assert_eq!(finish_of(Some("length")), json!({"kind": "max-tokens"}));
    assert_eq!(
        finish_of(Some("content_filter")),
        json!({"kind": "error", "failure": {"message": "model stopped: content_filter", "code": "CONTENT_FILTER"}})
    );
    assert_eq!(
        finish_of(Some("insufficient_system_resource")),
        json!({"kind": "error", "failure": {"message": "model stopped: insufficient_system_resource", "code": "INSUFFICIENT_SYSTEM_RESOURCE"}})
    );
    assert_eq!(map_finish_reason("length"), FinishReason::MaxTokens);
}

#[test]
fn a_length_finish_still_streams_the_cut_tool_call_but_assembly_drops_it() {
    let chunks = run(&sse(&[
        r#"{"choices":[{"delta":{"content":"partial"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        "[DONE]",
    ]))
    .unwrap();
    // As the recorded logs show: the block-end is written, the assembled message omits it.
    assert!(
        chunks
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["block"]["type"] == "tool-call")
    );
    let (blocks, finish) = assemble(&chunks);
    assert_eq!(finish, FinishReason::MaxTokens);
    assert_eq!(blocks, [ContentBlock::text("partial")]);
}

#[test]
fn a_stop_with_no_content_is_an_empty_response_after_usage() {
    let chunks = run(&sse(&[
        FIRST,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":0}}"#,
        "[DONE]",
    ]))
    .unwrap();
    assert_eq!(
        chunks,
        json!([
            {"type": "usage", "usage": {"inputTokens": 7, "outputTokens": 0}},
            {"type": "finish", "reason": {"kind": "error", "failure": {"message": "model returned a completed response with no content", "code": "EMPTY_RESPONSE"}}},
        ])
    );
    // A reasoning-only answer is content; a non-stop finish is never reclassified.
    let reasoning_only = run(&sse(&[
        r#"{"choices":[{"delta":{"reasoning_content":"mull"},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]))
    .unwrap();
    assert_eq!(reasoning_only[3]["reason"], json!({"kind": "stop"}));
    let empty_length = run(&sse(&[
        r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        "[DONE]",
    ]));
    assert_eq!(
        empty_length.unwrap()[0]["reason"],
        json!({"kind": "max-tokens"})
    );
}

#[test]
fn malformed_payloads_fail_the_stream() {
    for payload in [
        "{not-json",
        r#"{"choices":[null]}"#,
        "[1]",
        r#"{"choices":"x"}"#,
    ] {
        let error = run(&sse(&[FIRST, payload, "[DONE]"])).unwrap_err();
        assert_eq!(error.code, FailureCode::MalformedResponse, "{payload}");
        assert!(
            error.message.starts_with("malformed SSE payload: "),
            "{}",
            error.message
        );
    }
}

#[test]
fn a_missing_done_is_stream_closed() {
    for body in [
        sse(&[FIRST, r#"{"choices":[{"delta":{"content":"x"}}]}"#]),
        String::new(),
        "data: {\"choices\":[]}\n\ndata: [DONE]".to_owned(),
        "data: {\"a\"".to_owned(),
    ] {
        let error = run(&body).unwrap_err();
        assert_eq!(error.code, FailureCode::StreamClosed, "{body:?}");
        assert_eq!(error.message, "SSE stream ended without [DONE]");
    }
}

#[test]
fn payloads_after_done_are_ignored() {
    let mut translator = StreamTranslator::new();
    assert!(translator.push("{\"choices\":[]}").unwrap().is_empty());
    assert_eq!(translator.push("[DONE]").unwrap().len(), 1);
    assert!(translator.push("{not json").unwrap().is_empty());
    translator.end().unwrap();
}

#[test]
fn tool_calls_without_id_name_or_arguments_use_empty_strings() {
    let chunks = run(&sse(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","type":"function","function":{"name":"f"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":2,"id":"d"}]}}],"usage":null}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]))
    .unwrap();
    assert_eq!(
        chunks[1],
        json!({"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "{}"})
    );
    assert_eq!(
        chunks[3],
        json!({"type": "tool-call-delta", "index": 1, "id": "c", "name": "f", "argumentsDelta": ""})
    );
    assert_eq!(
        chunks[5],
        json!({"type": "tool-call-delta", "index": 2, "id": "d", "argumentsDelta": ""})
    );
    assert_eq!(
        chunks[6]["block"],
        json!({"type": "tool-call", "id": "", "name": "", "arguments": "{}"})
    );
}

fn usage(value: Value) -> crate::WireUsage {
    serde_json::from_value(value).unwrap()
}

#[test]
fn usage_mapping_subtracts_cache_hits() {
    assert_eq!(
        serde_json::to_value(map_usage(&usage(
            json!({"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 8})
        )))
        .unwrap(),
        json!({"inputTokens": 2, "outputTokens": 2, "cacheReadTokens": 8})
    );
    assert_eq!(
        serde_json::to_value(map_usage(&usage(
            json!({"prompt_tokens": 10, "completion_tokens": 2})
        )))
        .unwrap(),
        json!({"inputTokens": 10, "outputTokens": 2})
    );
    // The OpenAI spelling wins over DeepSeek's when both are present.
    let both = map_usage(&usage(
        json!({"prompt_tokens": 10, "completion_tokens": 0, "prompt_cache_hit_tokens": 1, "prompt_tokens_details": {"cached_tokens": 4}}),
    ));
    assert_eq!((both.input_tokens, both.cache_read_tokens), (6, Some(4)));
}

#[test]
fn comments_and_crlf_framing_do_not_change_the_chunks() {
    let plain = sse(&[r#"{"choices":[{"delta":{"content":"é"}}]}"#, "[DONE]"]);
    let noisy = format!(
        ": keep-alive\r\n\r\n{}",
        plain.replace("\n\n", "\r\n: ping\r\n\r\n")
    );
    assert_eq!(run(&noisy).unwrap(), run(&plain).unwrap());
}
