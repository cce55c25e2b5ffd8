//! Request building: body, headers, thinking, credentials, images.

use dsh_protocol::{
    CatalogModel, ContentBlock, FailureCode, GenerateRequest, ImageAttachment, LlmCallConfig,
    LlmFailure, Message, Modality, Purpose, Role, ToolSchema,
};
use serde_json::{Value, json};

use crate::config::{AdapterConfig, Compat, Thinking};
use crate::request::{HeaderIds, WireRequest, build_request, build_request_with_images};

fn message(role: Role, content: Vec<ContentBlock>) -> Message {
    Message {
        id: "id".into(),
        role,
        content,
        source: dsh_protocol::MessageSource::user(),
    }
}

fn tool_result(id: &str, content: Vec<ContentBlock>) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_call_id: id.into(),
        content,
        is_error: Some(false),
    }
}

fn request(messages: Vec<Message>) -> GenerateRequest {
    GenerateRequest::new(
        LlmCallConfig::new("deepseek-official", "deepseek-v4-flash"),
        messages,
    )
}

fn ids() -> HeaderIds {
    HeaderIds {
        user_id: "anon-1".into(),
    }
}

fn build(config: &AdapterConfig, request: &GenerateRequest) -> WireRequest {
    build_request(config, request, "sk-test", &ids()).unwrap()
}

fn body(config: &AdapterConfig, request: &GenerateRequest) -> Value {
    serde_json::to_value(build(config, request).body).unwrap()
}

#[test]
fn a_tool_turn_serializes_exactly() {
    let mut call = request(vec![
        message(Role::User, vec![ContentBlock::text("list files")]),
        message(
            Role::Assistant,
            vec![
                ContentBlock::reasoning("Use bash."),
                ContentBlock::tool_call("call_1", "bash", "{\"command\": \"ls\"}"),
                ContentBlock::tool_call("call_2", "read", "{\"file_path\":\"a\"}"),
            ],
        ),
        message(
            Role::User,
            vec![tool_result("call_1", vec![ContentBlock::text("a\nb\n")])],
        ),
        message(Role::User, vec![tool_result("call_2", vec![])]),
        message(
            Role::Assistant,
            vec![ContentBlock::reasoning("Only thought.")],
        ),
        message(
            Role::User,
            vec![ContentBlock::text("more"), ContentBlock::text("!")],
        ),
    ]);
    call.system = Some("You are dsh.".into());
    call.tools = vec![ToolSchema::new(
        "bash",
        "Run a command",
        &json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    )];
    call.config.reasoning_effort = Some("high".into());
    call.config.temperature = Some(0.5);
    call.config.max_tokens = Some(1000);
    call.config.stop = Some(vec!["END".into()]);
    assert_eq!(
        body(&AdapterConfig::deepseek(None), &call),
        json!({
            "model": "deepseek-v4-flash",
            "messages": [
                {"role": "system", "content": "You are dsh."},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "", "reasoning_content": "Use bash.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"file_path\":\"a\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a\nb\n"},
                {"role": "tool", "tool_call_id": "call_2", "content": "(no output)"},
                {"role": "assistant", "content": "", "reasoning_content": "Only thought."},
                {"role": "user", "content": "more!"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "thinking": {"type": "enabled"},
            "reasoning_effort": "high",
            "tools": [{"type": "function", "function": {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}],
            "temperature": 0.5,
            "max_tokens": 1000,
            "stop": ["END"],
        })
    );
}

#[test]
fn a_user_message_with_text_and_results_answers_the_calls_first() {
    let call = request(vec![message(
        Role::User,
        vec![
            tool_result("c", vec![ContentBlock::text("out")]),
            ContentBlock::text("and also"),
        ],
    )]);
    assert_eq!(
        body(&AdapterConfig::deepseek(None), &call)["messages"],
        json!([
            {"role": "tool", "tool_call_id": "c", "content": "out"},
            {"role": "user", "content": "and also"},
        ])
    );
    let empty = request(vec![message(Role::User, vec![])]);
    assert_eq!(
        body(&AdapterConfig::deepseek(None), &empty)["messages"],
        json!([{"role": "user", "content": ""}])
    );
}

#[test]
fn a_tool_call_without_reasoning_still_carries_the_field() {
    let call = request(vec![
        message(Role::User, vec![ContentBlock::text("go")]),
        message(
            Role::Assistant,
            vec![ContentBlock::tool_call("c", "bash", "{}")],
        ),
        message(Role::Assistant, vec![ContentBlock::text("plain")]),
    ]);
    let messages = &body(&AdapterConfig::deepseek(None), &call)["messages"];
    // Thinking mode refuses a tool-call message without `reasoning_content`; a plain answer
    // without reasoning does not need it.
    assert_eq!(messages[1]["reasoning_content"], "");
    assert!(messages[2].get("reasoning_content").is_none(), "{messages}");
}

#[test]
fn headers_carry_key_identity_and_attribution() {
    let mut call = request(vec![message(Role::User, vec![ContentBlock::text("hi")])]);
    call.session_id = Some("s-1".into());
    call.purpose = Some(Purpose::Compaction);
    let mut config = AdapterConfig::deepseek(Some("http://127.0.0.1:9/"));
    config.identity.version = "9.9.9".into();
    let wire = build_request(&config, &call, "  sk-test\n", &ids()).unwrap();
    assert_eq!(wire.url, "http://127.0.0.1:9/chat/completions");
    let headers: Vec<(&str, &str)> = wire
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        headers,
        [
            ("authorization", "Bearer sk-test"),
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
            ("user-agent", "dsh/9.9.9"),
            ("x-deepseek-harness-user-id", "anon-1"),
            ("x-deepseek-harness-session-id", "s-1"),
            ("x-deepseek-harness-compact", "1"),
        ]
    );
    assert_eq!(wire.header("Content-Type"), Some("application/json"));
    let bytes = wire.body_bytes();
    assert!(bytes.starts_with(b"{\"model\":\"deepseek-v4-flash\",\"messages\":"));
}

/// A compaction's summary request keeps the conversation's tools (the cached prefix) and
/// forbids calling them; every other request leaves the choice to the provider.
#[test]
fn a_compaction_request_keeps_its_tools_and_forbids_calls() {
    let tool = ToolSchema::new("bash", "run", &json!({"type": "object"}));
    let mut call = request(vec![message(Role::User, vec![ContentBlock::text("x")])]);
    call.tools = vec![tool];
    let config = AdapterConfig::deepseek(None);
    let plain = body(&config, &call);
    assert!(plain.get("tool_choice").is_none(), "{plain}");
    call.purpose = Some(Purpose::Compaction);
    let summary = body(&config, &call);
    assert_eq!(summary["tool_choice"], "none");
    assert_eq!(summary["tools"][0]["function"]["name"], "bash");
    // Without tools there is nothing to forbid (the API refuses a choice without tools).
    call.tools.clear();
    assert!(body(&config, &call).get("tool_choice").is_none());
}

fn thinking_fields(
    config: &AdapterConfig,
    effort: Option<&str>,
    purpose: Option<Purpose>,
) -> Value {
    let mut call = request(vec![message(Role::User, vec![ContentBlock::text("x")])]);
    call.config.reasoning_effort = effort.map(str::to_owned);
    call.purpose = purpose;
    let body = body(config, &call);
    json!({"thinking": body["thinking"], "effort": body["reasoning_effort"]})
}

#[test]
fn reasoning_effort_maps_to_thinking_fields() {
    let deepseek = AdapterConfig::deepseek(None);
    let fields = |thinking: Value, effort: Value| json!({"thinking": thinking, "effort": effort});
    assert_eq!(
        thinking_fields(&deepseek, Some("off"), None),
        fields(json!({"type": "disabled"}), Value::Null)
    );
    for effort in ["low", "high", "max"] {
        assert_eq!(
            thinking_fields(&deepseek, Some(effort), None),
            fields(json!({"type": "enabled"}), json!(effort))
        );
    }
    assert_eq!(
        thinking_fields(&deepseek, None, None),
        fields(Value::Null, Value::Null)
    );
    assert_eq!(
        thinking_fields(&deepseek, Some("max"), Some(Purpose::SessionTitle)),
        fields(json!({"type": "disabled"}), Value::Null)
    );
    let enabled = AdapterConfig {
        thinking: Some(Thinking::Enabled),
        ..AdapterConfig::deepseek(None)
    };
    assert_eq!(
        thinking_fields(&enabled, None, None),
        fields(json!({"type": "enabled"}), Value::Null)
    );
    let openai = AdapterConfig::openai_compatible("local", "http://x", "KEY");
    assert_eq!(
        thinking_fields(&openai, Some("high"), None),
        fields(Value::Null, Value::Null)
    );
}

#[test]
fn unsupported_efforts_are_refused() {
    let mut call = request(vec![]);
    call.config.reasoning_effort = Some("medium".into());
    let error = build_request(&AdapterConfig::deepseek(None), &call, "sk", &ids()).unwrap_err();
    assert_eq!(error.code.as_str(), "UNSUPPORTED_REASONING_EFFORT");
    assert_eq!(
        error.message,
        "DeepSeek does not support reasoning effort \"medium\""
    );
    let disabled = AdapterConfig {
        thinking: Some(Thinking::Disabled),
        ..AdapterConfig::deepseek(None)
    };
    call.config.reasoning_effort = Some("high".into());
    let error = build_request(&disabled, &call, "sk", &ids()).unwrap_err();
    assert_eq!(
        error.message,
        "DeepSeek deployment does not support reasoning effort \"high\""
    );
    call.config.reasoning_effort = Some("off".into());
    assert!(build_request(&disabled, &call, "sk", &ids()).is_ok());
}

#[test]
fn max_tokens_default_follows_compat_and_the_catalog() {
    let call = request(vec![]);
    let mut config = AdapterConfig::deepseek(None);
    assert_eq!(body(&config, &call)["max_tokens"], json!(256_000));
    config.models[0].max_tokens = Some(4096);
    assert_eq!(body(&config, &call)["max_tokens"], json!(4096));
    config.compat = Compat::OPENAI;
    assert_eq!(body(&config, &call)["max_tokens"], Value::Null);
}

#[test]
fn a_generic_endpoint_gets_no_deepseek_extras() {
    let mut call = request(vec![message(
        Role::Assistant,
        vec![ContentBlock::reasoning("r"), ContentBlock::text("t")],
    )]);
    call.session_id = Some("s".into());
    let config = AdapterConfig::openai_compatible("local", "http://gw/v1/", "LOCAL_KEY");
    let wire = build(&config, &call);
    assert_eq!(wire.url, "http://gw/v1/chat/completions");
    assert!(
        wire.headers
            .iter()
            .all(|(k, _)| !k.starts_with("x-deepseek"))
    );
    assert_eq!(
        serde_json::to_value(&wire.body).unwrap()["messages"],
        json!([{"role": "assistant", "content": "t"}])
    );
}

/// The failure a headless run logged for this credential case.
fn recorded_failure(case: &str) -> Value {
    let path = dsh_test_corpus::corpus()
        .expect("the recorded corpus (the test checks for it first)")
        .join("headless/snapshots")
        .join(case)
        .join("stream-json.expected.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["event"]["type"] == "assistant/chunk")
        .map(|line| line["event"]["data"]["chunk"]["reason"]["failure"].clone())
        .unwrap()
}

fn key_failure(key: &str) -> LlmFailure {
    build_request(
        &AdapterConfig::deepseek(None),
        &request(vec![]),
        key,
        &ids(),
    )
    .unwrap_err()
}

#[test]
fn credential_failures_match_the_recorded_messages() {
    dsh_test_corpus::needs_corpus!("credential_failures_match_the_recorded_messages");
    assert_eq!(
        serde_json::to_value(key_failure("")).unwrap(),
        recorded_failure("missing-credential")
    );
    for key in ["sk-ä", "sk 1", "sk-1\u{7f}", "sk-\r\n1"] {
        assert_eq!(
            serde_json::to_value(key_failure(key)).unwrap(),
            recorded_failure("invalid-credential"),
            "{key:?}"
        );
    }
    let blank = key_failure(" \t");
    assert_eq!(blank.code, FailureCode::InvalidCredential);
    assert!(blank.message.contains("is blank"));
}

fn image(bytes: u64) -> ContentBlock {
    ContentBlock::Image {
        attachment: ImageAttachment {
            attachment_id: format!("sha256:{bytes}"),
            media_type: "image/png".into(),
            bytes,
            width: 1,
            height: 1,
            name: None,
        },
    }
}

fn vision_config() -> AdapterConfig {
    let mut config = AdapterConfig::deepseek(None);
    config.models.push(CatalogModel {
        id: "vision".into(),
        name: None,
        description: None,
        input_modalities: Some(vec![Modality::Text, Modality::Image]),
        context_window: None,
        max_tokens: None,
        reasoning: None,
    });
    config
}

fn read_three(attachment: &ImageAttachment) -> Result<Vec<u8>, LlmFailure> {
    Ok(vec![b'a'; usize::try_from(attachment.bytes).unwrap()])
}

#[test]
fn images_become_data_urls_and_tool_images_follow_their_results() {
    let mut call = request(vec![
        message(Role::User, vec![ContentBlock::text("look"), image(3)]),
        message(Role::User, vec![tool_result("c1", vec![image(3)])]),
        message(
            Role::User,
            vec![tool_result(
                "c2",
                vec![ContentBlock::text("shot"), image(3)],
            )],
        ),
        message(Role::Assistant, vec![ContentBlock::text("seen")]),
    ]);
    call.config.model = "vision".into();
    let wire =
        build_request_with_images(&vision_config(), &call, "sk", &ids(), &read_three).unwrap();
    let url = json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,YWFh"}});
    assert_eq!(
        serde_json::to_value(&wire.body).unwrap()["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "look"}, url]},
            {"role": "tool", "tool_call_id": "c1", "content": "(see attached image)"},
            {"role": "tool", "tool_call_id": "c2", "content": "shot"},
            {"role": "user", "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, url, url]},
            {"role": "assistant", "content": "seen"},
        ])
    );
}

#[test]
fn oldest_images_are_offloaded_to_fit_the_budget() {
    let mut call = request(vec![message(Role::User, vec![image(3), image(3)])]);
    call.config.model = "vision".into();
    let mut config = vision_config();
    config.max_request_image_bytes = 4;
    let wire = build_request_with_images(&config, &call, "sk", &ids(), &read_three).unwrap();
    let content = &serde_json::to_value(&wire.body).unwrap()["messages"][0]["content"];
    assert_eq!(content[0]["text"], json!(dsh_llm_kit::OFFLOADED_IMAGE_TEXT));
    assert_eq!(content[1]["type"], "image_url");
}

#[test]
fn images_need_a_capable_model_a_reader_and_a_user_message() {
    let call = request(vec![message(Role::User, vec![image(3)])]);
    let error = build_request(&AdapterConfig::deepseek(None), &call, "sk", &ids()).unwrap_err();
    assert_eq!(error.code.as_str(), "UNSUPPORTED_CONTENT");
    assert_eq!(
        error.message,
        "DeepSeek model \"deepseek-v4-flash\" does not accept image input."
    );

    let mut vision = call.clone();
    vision.config.model = "vision".into();
    let error = build_request(&vision_config(), &vision, "sk", &ids()).unwrap_err();
    assert_eq!(
        error.message,
        "DeepSeek image conversion requires the durable attachment service."
    );

    vision.messages = vec![message(Role::Assistant, vec![image(3)])];
    let error = build_request_with_images(&vision_config(), &vision, "sk", &ids(), &read_three)
        .unwrap_err();
    assert_eq!(
        error.message,
        "The DeepSeek chat-completions adapter cannot represent image content in a assistant message."
    );
}

/// An endpoint that takes no key: none found is the empty key, and a request goes without an
/// authorization header; one that takes a key still refuses to go without it.
#[test]
fn a_keyless_endpoint_sends_no_authorization() {
    let mut config = AdapterConfig::openai_compatible("ollama", "http://127.0.0.1:11434/v1", "K");
    assert!(crate::request::check_api_key(&config, None).is_err());
    config.key_required = false;
    let key = crate::request::check_api_key(&config, None).unwrap();
    assert_eq!(key, "");
    let wire = build_request(&config, &request(Vec::new()), &key, &ids()).unwrap();
    assert!(wire.header("authorization").is_none(), "{:?}", wire.headers);
    let keyed = crate::request::check_api_key(&config, Some("sk-1")).unwrap();
    let wire = build_request(&config, &request(Vec::new()), &keyed, &ids()).unwrap();
    assert_eq!(wire.header("authorization"), Some("Bearer sk-1"));
}
