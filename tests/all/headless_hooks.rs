//! The loop's and the pipeline's hooks through the real headless runner: `hooks-probe` answers
//! `agent/pre-step`, `tools/pre-execute` and `tools/post-execute` and registers a guard, on the
//! recorded bash round trip.

use serde_json::Value;

use dsh_tests::events::{durable_types, first_tool_result_text};
use dsh_tests::headless::{against, stream_json};
use dsh_tests::recorded::round_trip_with;

/// The recorded bash round trip with `hooks-probe` configured by `config` (YAML, indented).
fn with_hooks(name: &str, config: &str, envs: &[(&str, &str)]) -> (dsh_tests::Output, Vec<Value>) {
    dsh_tests::plugin_lib("hooks_probe");
    let (out, events, _) = round_trip_with(
        name,
        &format!("    - id: hooks\n      name: hooks-probe\n      config:\n{config}"),
        envs,
    );
    (out, events)
}

#[test]
fn a_rejected_pre_step_ends_the_turn_blocked_with_no_step() {
    dsh_tests::needs_corpus!("a_rejected_pre_step_ends_the_turn_blocked_with_no_step");
    let (out, events) = with_hooks("headless-pre-step", "        rejectStep: not now\n", &[]);
    assert_eq!(out.code, Some(3), "{out:?}");
    // The task was claimed at the turn's start (as the turn flow says), then the step refused.
    assert_eq!(
        durable_types(&events),
        [
            "agent/inbox/spliced",
            "turn/start",
            "agent/inbox/spliced",
            "turn/end"
        ],
        "{events:?}"
    );
    let end = events
        .iter()
        .find(|event| event["type"] == "turn/end")
        .unwrap();
    assert_eq!(end["data"]["reason"]["kind"], "blocked");
}

#[test]
fn an_ask_with_no_answerer_is_unavailable_and_audited() {
    dsh_tests::needs_corpus!("an_ask_with_no_answerer_is_unavailable_and_audited");
    let (out, events) = with_hooks(
        "headless-ask",
        "        preExecute: {kind: ask, reason: check first}\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let decided = events
        .iter()
        .find(|event| event["type"] == "approval/decided")
        .unwrap();
    assert_eq!(decided["data"]["outcome"], "unavailable");
    assert!(
        events
            .iter()
            .any(|event| event["type"] == "approval/asked" && event["data"]["toolName"] == "bash")
    );
    let text = first_tool_result_text(&events);
    assert!(
        text.starts_with("Error: ") && text.contains("no approval channel"),
        "{text}"
    );
}

#[test]
fn under_full_access_an_ask_is_rejected_before_anyone_is_asked() {
    dsh_tests::needs_corpus!("under_full_access_an_ask_is_rejected_before_anyone_is_asked");
    let (out, events) = with_hooks(
        "headless-ask-never",
        "        preExecute: {kind: ask}\n",
        &[("DSH_PERMISSION_MODE", "danger-full-access")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let decided = events
        .iter()
        .find(|event| event["type"] == "approval/decided")
        .unwrap();
    assert_eq!(decided["data"]["outcome"], "rejected");
    assert!(
        first_tool_result_text(&events).contains("rejected"),
        "{events:?}"
    );
}

#[test]
fn a_guard_denial_reaches_the_model_as_an_error_result() {
    dsh_tests::needs_corpus!("a_guard_denial_reaches_the_model_as_an_error_result");
    let (out, events) = with_hooks("headless-guard", "        guard: CLI_TOOL\n", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = first_tool_result_text(&events);
    assert!(
        text.contains("hooks-probe guards against `CLI_TOOL`"),
        "{text}"
    );
}

#[test]
fn context_added_after_a_call_is_logged_as_a_user_message_after_the_results() {
    dsh_tests::needs_corpus!(
        "context_added_after_a_call_is_logged_as_a_user_message_after_the_results"
    );
    let (out, events) = with_hooks(
        "headless-context",
        "        postExecute: {kind: accept, additionalContexts: [{role: user, source: {kind: plugin, plugin: hooks-probe}, content: [{type: text, text: remember the tests}]}]}\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    let result = kinds
        .iter()
        .position(|kind| *kind == "tool/result")
        .unwrap();
    let context = events
        .iter()
        .position(|event| {
            event["type"] == "user/message"
                && event["data"]["content"][0]["text"] == "remember the tests"
        })
        .unwrap_or_else(|| panic!("context not logged: {events:?}"));
    assert!(context > result, "{kinds:?}");
    assert_eq!(events[context]["data"]["source"]["kind"], "plugin");
}

/// A message queued on `next-step` while a step runs enters at the next step boundary, before
/// that step's request, with both splices logged.
#[test]
fn steering_input_enters_at_the_next_step() {
    dsh_tests::needs_corpus!("steering_input_enters_at_the_next_step");
    let (out, events) = with_hooks(
        "headless-steer",
        "        steer: also check the docs\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let position = |kind: &str, step: u64| {
        events
            .iter()
            .position(|event| event["type"] == kind && event["data"]["step"] == step)
            .unwrap_or_else(|| panic!("no {kind} of step {step}: {events:?}"))
    };
    let steer = events
        .iter()
        .position(|event| {
            event["type"] == "user/message"
                && event["data"]["content"][0]["text"] == "also check the docs"
        })
        .unwrap_or_else(|| panic!("steering not logged: {events:?}"));
    assert!(position("step/start", 2) < steer, "{events:?}");
    assert!(steer < position("assistant/message", 2), "{events:?}");
    let splices: Vec<&Value> = events
        .iter()
        .filter(|event| {
            event["type"] == "agent/inbox/spliced" && event["data"]["target"] == "next-step"
        })
        .collect();
    assert_eq!(splices.len(), 2, "inserted then claimed: {splices:?}");
}

/// `tools/post-execute` may replace a result's value; the tool's output renderer turns the new
/// value into the content the model gets (bash renders its value's `output`).
#[test]
fn a_replaced_value_is_rendered_by_the_tool() {
    dsh_tests::needs_corpus!("a_replaced_value_is_rendered_by_the_tool");
    let (out, events) = with_hooks(
        "headless-revalue",
        "        postExecute: {kind: accept, value: {exitCode: 0, timedOut: false, output: \"[redacted by policy]\"}}\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(first_tool_result_text(&events), "[redacted by policy]");
}

/// A value without what the renderer needs cannot be rendered: the call fails, naming why.
#[test]
fn a_value_the_tool_cannot_render_fails_the_call() {
    dsh_tests::needs_corpus!("a_value_the_tool_cannot_render_fails_the_call");
    let (out, events) = with_hooks(
        "headless-revalue-bad",
        "        postExecute: {kind: accept, value: {something: else}}\n",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = first_tool_result_text(&events);
    assert!(
        text.starts_with("Error: ") && text.contains("output renderer cannot render"),
        "{text}"
    );
}

/// The argument check is the first gate: a call whose arguments break the schema fails with
/// `INVALID_ARGS` before any hook or approval sees it (no approval is asked for it).
#[test]
fn invalid_arguments_fail_before_hooks_and_approval() {
    use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
    dsh_tests::plugin_lib("hooks_probe");
    let missing_command = serde_json::json!({"description": "no command"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &missing_command)]),
        Reply::text("ok"),
    ]);
    let dir = dsh_tests::TestDir::new("headless-invalid-args");
    dir.write(
        "home/cordis.patch.yml",
        "- insert:\n    - id: hooks\n      name: hooks-probe\n      config:\n        preExecute: {kind: ask, reason: check first}\n",
    );
    let out = against(&server, &dir, &["--output", "stream-json", "go"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let (events, _) = stream_json(&out.stdout);
    assert!(
        !events.iter().any(|event| event["type"] == "approval/asked"),
        "an invalid call reached approval: {events:?}"
    );
    let text = first_tool_result_text(&events);
    assert!(text.starts_with("Error: invalid arguments"), "{text}");
    assert!(text.contains("command"), "{text}");
}
