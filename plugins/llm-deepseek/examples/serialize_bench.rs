//! Request serialization per step, for `cargo xtask bench`: the DeepSeek wire body of a
//! coding-agent request (system prompt, tool schemas, the history of a turn with one tool call
//! per step) built from its messages, around step 10 and step 10,000. The harness overhead
//! figures leave it out (their instant model takes the history by reference), so it is reported
//! on its own line. Prints `<figure> <value> <unit>` lines like `dsh-bench`.

use std::time::Instant;

use dsh_protocol::GenerateRequest;
use llm_deepseek::{AdapterConfig, HeaderIds, build_request};
use serde_json::{Value, json};

fn request(steps: usize) -> GenerateRequest {
    let mut messages = vec![json!({
        "role": "user",
        "content": [{"type": "text", "text": "Fix the failing test in src/parse.rs and run the suite."}],
        "source": {"kind": "user"},
    })];
    for step in 0..steps {
        let arguments = json!({"command": format!("cargo test -p parser step_{step}"), "description": "run the tests"}).to_string();
        messages.push(json!({
            "role": "assistant",
            "content": [{"type": "tool-call", "id": format!("call_{step}"), "name": "bash", "arguments": arguments}],
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
        }));
        messages.push(json!({
            "role": "user",
            "content": [{"type": "tool-result", "toolCallId": format!("call_{step}"), "content": [{"type": "text", "text": "running 12 tests\ntest result: ok. 12 passed; 0 failed"}], "isError": false}],
            "source": {"kind": "tool", "callId": format!("call_{step}")},
        }));
    }
    let tools: Vec<Value> = ["bash", "read", "write", "edit", "glob", "grep", "todo_write"]
        .iter()
        .map(|name| json!({"name": name, "description": format!("The {name} tool."), "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}))
        .collect();
    let request = json!({
        "config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
        "system": "You are a coding agent working in the user's repository through tools.",
        "messages": messages,
        "tools": tools,
    });
    match serde_json::from_value(request) {
        Ok(request) => request,
        Err(error) => {
            eprintln!("serialize_bench: the request does not parse: {error}");
            std::process::exit(1);
        }
    }
}

/// Median microseconds of building the wire body `runs` times.
fn median_micros(request: &GenerateRequest, runs: usize) -> (f64, usize) {
    let config = AdapterConfig::deepseek(None);
    let ids = HeaderIds::default();
    let mut times = Vec::with_capacity(runs);
    let mut bytes = 0;
    for _ in 0..runs {
        let started = Instant::now();
        let Ok(wire) = build_request(&config, request, "sk-bench", &ids) else {
            eprintln!("serialize_bench: the request was refused");
            std::process::exit(1);
        };
        bytes = wire.body_bytes().len();
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], bytes)
}

fn main() {
    for (steps, runs) in [(10, 201), (10_000, 9)] {
        let (micros, bytes) = median_micros(&request(steps), runs);
        println!("deepseek_request_serialize_at_step_{steps} {micros:.3} us");
        println!("deepseek_request_bytes_at_step_{steps} {bytes} bytes");
    }
}
