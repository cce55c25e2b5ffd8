//! The model seam through the real host: `llm`, the `llm-deepseek` adapter over the host's
//! `http` service, against a fake DeepSeek server speaking the wire protocol on loopback.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, plugin_lib, run_host_with_env};
use serde_json::{Value, json};

const KEY: (&str, &str) = ("DEEPSEEK_API_KEY", "sk-test-key");

fn request(provider: &str, messages: Value) -> Value {
    json!({"config": {"provider": provider, "model": "deepseek-v4-flash"}, "system": "be brief", "messages": messages})
}

fn hello() -> Value {
    json!([{"id": "u1", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}])
}

/// Rows: http, llm, one adapter row per `adapters` entry (its config), and the probe.
fn tree(adapters: &[Value], request: &Value) -> String {
    let mut rows = vec![
        json!({"id": "http", "name": "dsh-host/http"}),
        json!({"id": "llm", "name": "llm"}),
    ];
    for (index, config) in adapters.iter().enumerate() {
        rows.push(
            json!({"id": format!("adapter-{index}"), "name": "llm-deepseek", "config": config}),
        );
    }
    rows.push(json!({"id": "probe", "name": "llm-probe", "config": {"request": request}}));
    // JSON is YAML.
    serde_json::to_string_pretty(&rows).unwrap()
}

struct Run {
    out: dsh_tests::Output,
    chunks: Vec<Value>,
    failure: Option<Value>,
}

fn run(dir: &TestDir, adapters: &[Value], request: &Value, envs: &[(&str, &str)]) -> Run {
    for name in ["llm", "llm_deepseek", "llm_probe"] {
        plugin_lib(name);
    }
    let config = dir.write("tree.yml", &tree(adapters, request));
    let out = run_host_with_env(
        &dir.home(),
        &["check", "--config", config.to_str().unwrap()],
        envs,
    );
    let chunks = out
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("chunk "))
        .map(|json| serde_json::from_str(json).unwrap())
        .collect();
    let failure = out
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("llm failed "))
        .map(|json| serde_json::from_str(json).unwrap());
    Run {
        out,
        chunks,
        failure,
    }
}

fn deepseek_at(server: &FakeDeepSeek) -> Value {
    json!({"baseURL": server.url()})
}

#[test]
fn a_text_answer_streams_as_chunks_with_usage_then_finish() {
    let server = FakeDeepSeek::start(vec![Reply::text("Hello from the fake model")]);
    let dir = TestDir::new("llm-text");
    let run = run(
        &dir,
        &[deepseek_at(&server)],
        &request("deepseek-official", hello()),
        &[KEY],
    );
    assert_eq!(run.out.code, Some(0), "{:?}", run.out);
    assert!(run.out.stdout.contains("llm done"), "{}", run.out.stdout);
    let kinds: Vec<&str> = run
        .chunks
        .iter()
        .map(|chunk| chunk["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"block-start"));
    assert_eq!(&kinds[kinds.len() - 3..], ["block-end", "usage", "finish"]);
    let text: String = run
        .chunks
        .iter()
        .filter(|chunk| chunk["type"] == "text-delta")
        .map(|chunk| chunk["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello from the fake model");
    assert_eq!(run.chunks.last().unwrap()["reason"]["kind"], "stop");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"]["include_usage"], true);
    assert_eq!(sent.body["model"], "deepseek-v4-flash");
    assert_eq!(
        sent.body["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
}

#[test]
fn parallel_tool_calls_split_across_chunks_assemble_with_raw_arguments() {
    let server = FakeDeepSeek::start(vec![Reply::tool_calls(&[
        ("call_1", "read", r#"{"file_path":"src/main.rs"}"#),
        ("call_2", "grep", r#"{"pattern":"fn main"}"#),
    ])]);
    let dir = TestDir::new("llm-tools");
    let run = run(
        &dir,
        &[deepseek_at(&server)],
        &request("deepseek-official", hello()),
        &[KEY],
    );
    assert_eq!(run.out.code, Some(0), "{:?}", run.out);
    let ended: Vec<&Value> = run
        .chunks
        .iter()
        .filter(|chunk| chunk["type"] == "block-end")
        .map(|chunk| &chunk["block"])
        .collect();
    let calls: Vec<(&str, &str)> = ended
        .iter()
        .filter(|block| block["type"] == "tool-call")
        .map(|block| {
            (
                block["name"].as_str().unwrap(),
                block["arguments"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("read", r#"{"file_path":"src/main.rs"}"#),
            ("grep", r#"{"pattern":"fn main"}"#)
        ]
    );
    assert_eq!(run.chunks.last().unwrap()["reason"]["kind"], "tool-calls");
}

#[test]
fn reasoning_is_passed_back_on_the_next_request() {
    let server = FakeDeepSeek::start(vec![Reply::text("done")]);
    let dir = TestDir::new("llm-passback");
    let history = json!([
        {"id": "u1", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "read it"}]},
        {"id": "a1", "role": "assistant", "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
         "content": [{"type": "reasoning", "text": "I should read the file."},
                     {"type": "tool-call", "id": "call_1", "name": "read", "arguments": "{\"file_path\":\"a\"}"}]},
        {"id": "r1", "role": "user", "source": {"kind": "tool", "callId": "call_1"},
         "content": [{"type": "tool-result", "toolCallId": "call_1", "content": [{"type": "text", "text": "contents"}], "isError": false}]}
    ]);
    let run = run(
        &dir,
        &[deepseek_at(&server)],
        &request("deepseek-official", history),
        &[KEY],
    );
    assert_eq!(run.out.code, Some(0), "{:?}", run.out);
    let messages = server.requests()[0].body["messages"].clone();
    let assistant = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["reasoning_content"], "I should read the file.");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"file_path\":\"a\"}"
    );
    let tool = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert_eq!(tool["content"], "contents");
}

#[test]
fn provider_errors_map_to_the_failure_vocabulary() {
    let cases = [
        (Reply::unauthorized(), "AUTH", None),
        (Reply::rate_limited(7), "RATE_LIMIT", Some(7000)),
        (Reply::server_error(), "SERVER", None),
        (Reply::Malformed, "MALFORMED_RESPONSE", None),
    ];
    for (index, (reply, code, retry_after)) in cases.into_iter().enumerate() {
        let server = FakeDeepSeek::start(vec![reply]);
        let dir = TestDir::new(&format!("llm-error-{index}"));
        let run = run(
            &dir,
            &[deepseek_at(&server)],
            &request("deepseek-official", hello()),
            &[KEY],
        );
        let failure = run
            .failure
            .unwrap_or_else(|| panic!("{code}: no failure in {:?}", run.out));
        assert_eq!(failure["code"], code, "{failure}");
        if let Some(ms) = retry_after {
            assert_eq!(failure["providerRetryAfterMs"], ms, "{failure}");
        }
    }
}

#[test]
fn a_dropped_stream_and_a_stall_fail_instead_of_hanging() {
    let dropped = FakeDeepSeek::start(vec![Reply::DropMidStream {
        events: match Reply::text("a long answer that never ends") {
            Reply::Sse(events) => events,
            _ => unreachable!(),
        },
        after_events: 2,
    }]);
    let dir = TestDir::new("llm-dropped");
    let run_dropped = run(
        &dir,
        &[deepseek_at(&dropped)],
        &request("deepseek-official", hello()),
        &[KEY],
    );
    let failure = run_dropped
        .failure
        .unwrap_or_else(|| panic!("{:?}", run_dropped.out));
    assert!(
        ["STREAM_CLOSED", "TRANSPORT"].contains(&failure["code"].as_str().unwrap()),
        "{failure}"
    );

    let stalled = FakeDeepSeek::start(vec![Reply::Stall { ms: 5_000 }]);
    let dir = TestDir::new("llm-stall");
    let config = json!({"baseURL": stalled.url(), "streamIdleTimeoutMs": 300});
    let run_stalled = run(
        &dir,
        &[config],
        &request("deepseek-official", hello()),
        &[KEY],
    );
    let failure = run_stalled
        .failure
        .unwrap_or_else(|| panic!("{:?}", run_stalled.out));
    assert_eq!(failure["code"], "TIMEOUT", "{failure}");
}

#[test]
fn a_missing_key_is_refused_before_any_request() {
    let server = FakeDeepSeek::start(vec![Reply::text("never sent")]);
    let dir = TestDir::new("llm-no-key");
    let run = run(
        &dir,
        &[deepseek_at(&server)],
        &request("deepseek-official", hello()),
        &[],
    );
    let failure = run.failure.unwrap_or_else(|| panic!("{:?}", run.out));
    assert_eq!(failure["code"], "MISSING_CREDENTIAL", "{failure}");
    assert!(server.requests().is_empty());
}

#[test]
fn an_openai_compatible_endpoint_gets_no_deepseek_only_fields() {
    let server = FakeDeepSeek::start(vec![Reply::text("local answer")]);
    let dir = TestDir::new("llm-openai");
    let adapter = json!({"provider": "local-llm", "baseURL": server.url(), "apiKeyEnv": "LOCAL_LLM_KEY", "compat": "openai"});
    let run = run(
        &dir,
        &[adapter],
        &request("local-llm", hello()),
        &[("LOCAL_LLM_KEY", "local-key")],
    );
    assert_eq!(run.out.code, Some(0), "{:?}", run.out);
    assert!(run.out.stdout.contains("llm done"), "{}", run.out.stdout);
    let sent = &server.requests()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer local-key"));
    assert!(sent.body.get("thinking").is_none(), "{}", sent.body);
    assert!(sent.body.get("reasoning_effort").is_none(), "{}", sent.body);
    assert!(
        sent.headers
            .iter()
            .all(|(name, _)| !name.starts_with("x-deepseek-harness")),
        "{:?}",
        sent.headers
    );
}

#[test]
fn a_second_adapter_for_a_route_is_refused() {
    let server = FakeDeepSeek::start(vec![Reply::text("first adapter answers")]);
    let dir = TestDir::new("llm-duplicate");
    let run = run(
        &dir,
        &[deepseek_at(&server), deepseek_at(&server)],
        &request("deepseek-official", hello()),
        &[KEY],
    );
    assert_eq!(run.out.code, Some(1), "{:?}", run.out);
    let table = dsh_tests::squash(&run.out.stdout);
    assert!(table.contains("adapter-1 llm-deepseek FAILED"), "{table}");
    assert!(table.contains("DUPLICATE_ADAPTER"), "{table}");
}

/// The recorded chunks of every model attempt in a log, in order (packed rows expanded).
fn recorded_attempts(log: &std::path::Path) -> Vec<Vec<Value>> {
    let mut attempts = vec![Vec::new()];
    for line in std::fs::read_to_string(log).unwrap().lines().skip(1) {
        let value: Value = serde_json::from_str(line).unwrap();
        let chunks: Vec<Value> = match value["type"].as_str().unwrap() {
            "assistant/chunk" => vec![value["data"]["chunk"].clone()],
            kind @ ("text-chunks" | "reasoning-chunks") => {
                let delta = if kind == "text-chunks" { "text-delta" } else { "reasoning-delta" };
                value["data"]["texts"].as_array().unwrap().iter().map(|text| json!({"type": delta, "index": value["data"]["index"], "text": text})).collect()
            }
            "tool-call-chunks" => value["data"]["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|args| {
                    let mut chunk = json!({"type": "tool-call-delta", "index": value["data"]["index"], "id": value["data"]["id"], "argumentsDelta": args});
                    if let Some(name) = value["data"].get("name") {
                        chunk["name"] = name.clone();
                    }
                    chunk
                })
                .collect(),
            _ => Vec::new(),
        };
        for chunk in chunks {
            let finished = chunk["type"] == "finish";
            attempts.last_mut().unwrap().push(chunk);
            if finished {
                attempts.push(Vec::new());
            }
        }
    }
    attempts.retain(|attempt| !attempt.is_empty());
    attempts
}

#[test]
fn replay_answers_each_request_with_the_next_recorded_attempt() {
    plugin_lib("llm_replay");
    let log =
        dsh_tests::needs_corpus!("replay_answers_each_request_with_the_next_recorded_attempt")
            .join("acp/snapshots/web-fetch/session.jsonl");
    let recorded = recorded_attempts(&log);
    assert_eq!(recorded.len(), 2);
    let dir = TestDir::new("llm-replay");
    let rows = json!([
        {"id": "llm", "name": "llm"},
        {"id": "replay", "name": "llm-replay", "config": {"log": log.to_str().unwrap()}},
        {"id": "probe", "name": "llm-probe", "config": {"request": request("deepseek-official", hello()), "repeat": 3}}
    ]);
    let config = dir.write("tree.yml", &serde_json::to_string_pretty(&rows).unwrap());
    let out = run_host_with_env(
        &dir.home(),
        &["check", "--config", config.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let mut answers: Vec<Vec<Value>> = Vec::new();
    let mut failures = Vec::new();
    for line in out.stdout.lines() {
        if line.starts_with("request ") {
            answers.push(Vec::new());
        } else if let Some(chunk) = line.strip_prefix("chunk ") {
            answers
                .last_mut()
                .unwrap()
                .push(serde_json::from_str(chunk).unwrap());
        } else if let Some(failure) = line.strip_prefix("llm failed ") {
            failures.push(failure.to_owned());
        }
    }
    assert_eq!(answers[0], recorded[0]);
    assert_eq!(answers[1], recorded[1]);
    // A third request has nothing recorded: it fails, it does not hang.
    assert!(answers[2].is_empty());
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains("request 3 has no recorded answer"),
        "{failures:?}"
    );
}

#[test]
fn a_replay_hang_creates_its_ready_file_and_is_cancelled_by_shutdown() {
    plugin_lib("llm_replay");
    let dir = TestDir::new("llm-replay-hang");
    let ready = dir.join("ready");
    let overrides = dir.write(
        "replay.override.json",
        &json!([{"kind": "hang", "readyFile": ready.to_str().unwrap()}]).to_string(),
    );
    let log = dir.write(
        "session.jsonl",
        "{\"type\":\"session\",\"version\":0,\"id\":\"x\",\"createdAt\":1,\"delegationDepth\":0}\n",
    );
    let rows = json!([
        {"id": "llm", "name": "llm"},
        {"id": "replay", "name": "llm-replay", "config": {"log": log.to_str().unwrap(), "overrides": overrides.to_str().unwrap()}},
        {"id": "probe", "name": "llm-probe", "config": {"request": request("deepseek-official", hello())}}
    ]);
    let config = dir.write("tree.yml", &serde_json::to_string_pretty(&rows).unwrap());
    let mut host =
        dsh_tests::HostProcess::start(&dir.home(), &["--config", config.to_str().unwrap()]);
    let deadline = std::time::Instant::now() + dsh_tests::WAIT;
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the ready file never appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stopping = std::time::Instant::now();
    assert_eq!(host.stop(), Some(0));
    // The hanging apply was cancelled, not waited out for the grace period.
    assert!(
        stopping.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        stopping.elapsed()
    );
}

#[test]
fn a_reloaded_adapter_row_replaces_its_registration_without_a_duplicate() {
    let first = FakeDeepSeek::start(vec![Reply::text("from the first endpoint")]);
    let second = FakeDeepSeek::start(vec![
        Reply::text("from the second"),
        Reply::text("and again"),
    ]);
    let dir = TestDir::new("llm-reload");
    let write = |adapter: &Value, repeat: u32| {
        let rows = json!([
            {"id": "http", "name": "dsh-host/http"},
            {"id": "llm", "name": "llm"},
            {"id": "deepseek", "name": "llm-deepseek", "config": adapter},
            {"id": "probe", "name": "llm-probe", "config": {"request": request("deepseek-official", hello()), "repeat": repeat}}
        ]);
        dir.write("tree.yml", &serde_json::to_string_pretty(&rows).unwrap())
    };
    let config = write(&deepseek_at(&first), 1);
    let mut host = dsh_tests::HostProcess::start_with_env(
        &dir.home(),
        &["--config", config.to_str().unwrap()],
        &[KEY],
    );
    host.wait_stdout("llm done", dsh_tests::WAIT);
    // The adapter row changes: its old registration goes with its fiber, the new one takes the route.
    write(&deepseek_at(&second), 1);
    host.wait_stderr(
        "config reloaded: 0 added, 0 removed, 1 changed",
        dsh_tests::WAIT,
    );
    // The probe row changes: it streams twice more, through the new adapter.
    write(&deepseek_at(&second), 2);
    host.wait_stdout_count("llm done", 3, dsh_tests::WAIT);
    assert_eq!(first.requests().len(), 1);
    assert_eq!(second.requests().len(), 2);
    assert!(
        host.stderr()
            .iter()
            .all(|line| !line.contains("DUPLICATE_ADAPTER")),
        "{:?}",
        host.stderr()
    );
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn every_finish_reason_maps_to_the_logged_vocabulary() {
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk};
    let cases = [
        ("stop", "stop"),
        ("tool_calls", "tool-calls"),
        ("length", "max-tokens"),
        ("content_filter", "error"),
    ];
    for (wire, logged) in cases {
        let events = vec![
            first_chunk(),
            SseEvent::content("partial answer"),
            SseEvent::finish(wire),
            SseEvent::Done,
        ];
        let server = FakeDeepSeek::start(vec![Reply::Sse(events)]);
        let dir = TestDir::new(&format!("llm-finish-{wire}"));
        let run = run(
            &dir,
            &[deepseek_at(&server)],
            &request("deepseek-official", hello()),
            &[KEY],
        );
        assert_eq!(run.out.code, Some(0), "{wire}: {:?}", run.out);
        let finish = run
            .chunks
            .iter()
            .find(|chunk| chunk["type"] == "finish")
            .unwrap_or_else(|| panic!("{wire}: {:?}", run.out));
        assert_eq!(finish["reason"]["kind"], logged, "{wire}: {finish}");
        if logged == "error" {
            assert!(finish["reason"]["failure"]["code"].is_string(), "{finish}");
        }
    }
}

#[test]
fn reasoning_streams_as_its_own_block_before_the_answer() {
    let server = FakeDeepSeek::start(vec![Reply::reasoning_then_text(
        "think first",
        "then answer",
    )]);
    let dir = TestDir::new("llm-reasoning");
    let run = run(
        &dir,
        &[deepseek_at(&server)],
        &request("deepseek-official", hello()),
        &[KEY],
    );
    assert_eq!(run.out.code, Some(0), "{:?}", run.out);
    let blocks: Vec<&Value> = run
        .chunks
        .iter()
        .filter(|chunk| chunk["type"] == "block-end")
        .map(|chunk| &chunk["block"])
        .collect();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!(
        blocks[0],
        &json!({"type": "reasoning", "text": "think first"})
    );
    assert_eq!(blocks[1], &json!({"type": "text", "text": "then answer"}));
    let kinds: Vec<&str> = run
        .chunks
        .iter()
        .map(|chunk| chunk["type"].as_str().unwrap())
        .collect();
    let usage = kinds.iter().position(|kind| *kind == "usage").unwrap();
    assert_eq!(
        kinds[usage + 1],
        "finish",
        "usage comes right before finish: {kinds:?}"
    );
}
