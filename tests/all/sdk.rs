//! `dsh-host --profile sdk` through the real binary and the `dsh-client` crate: the recorded
//! jsonrpc cases of the reference's SDK suite reproduce (notifications and result, normalized
//! as that suite normalizes them), and bad input is answered with named errors while the
//! connection lives: a line that is not JSON, an unknown method, bad params, a prompt before
//! `initialize`, a second prompt on a running session; the end of stdin cancels the running
//! turn, closes its log and ends the runtime with 0.

use std::time::{Duration, Instant};

use dsh_client::{Client, ClientError, RpcError};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::sdk::{
    CASES, Case, MODEL, PROVIDER, REPLAY_PATCH, RUN, Scrub, as_value, first_difference, hydrate,
    json_lines, normalize_notifications, ordering_problems, start, stderr_of,
};
use dsh_tests::sessions::{PLAIN_STORE, stored_logs};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

/// Cases we cannot run yet, and the feature each needs.
const SKIPPED: &[(&str, &str)] = &[];

/// What a case reproduced in part sets aside on both sides before comparing.
enum SetAside {
    /// The words of a child's delegation notice (the runtime-context message whose sections
    /// include `subagent:delegation`: its text and its source, once the section names are
    /// found equal) and the `meta` our subagent tool adds to its result.
    DelegationWording,
}

/// Cases that reproduce but for what our plugins log differently, what that is, and what is set
/// aside for it; every other notification is compared exactly.
const IN_PART: &[(&str, &str, SetAside)] = &[(
    "subagent-spawn-in-process",
    "the child's delegation notice is in our words and logged under our snapshot source (the same event at the same place, with the same section names), and our subagent tool's result carries `meta.subagentId`",
    SetAside::DelegationWording,
)];

/// The section names of a delegation notice (a `user/message` whose source's sections include
/// `subagent:delegation`), or `None` for any other notification.
fn delegation_sections(notification: &Value) -> Option<Vec<String>> {
    let event = &notification["params"]["event"];
    let names: Vec<String> = event["data"]["source"]["sections"]
        .as_array()?
        .iter()
        .filter_map(|section| section["name"].as_str().map(str::to_owned))
        .collect();
    (event["type"] == "user/message" && names.iter().any(|name| name == "subagent:delegation"))
        .then_some(names)
}

/// Puts a placeholder in place of the words and source of every delegation notice in
/// `notifications`; answers the section names of each, in order.
fn without_delegation_wording(notifications: &mut [Value]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for notification in notifications.iter_mut() {
        let Some(names) = delegation_sections(notification) else {
            continue;
        };
        let data = &mut notification["params"]["event"]["data"];
        data["content"] = json!("{{delegation notice}}");
        data["source"] = json!("{{delegation notice source}}");
        found.push(names);
    }
    found
}

/// Removes the `meta` of a `tool/result` that holds only `key` (what our tool adds; the
/// reference's result has none).
fn without_meta(notification: &mut Value, key: &str) {
    let Some(event) = notification
        .get_mut("params")
        .and_then(|params| params.get_mut("event"))
        .filter(|event| event["type"] == "tool/result")
    else {
        return;
    };
    if let Some(data) = event.get_mut("data").and_then(Value::as_object_mut)
        && data
            .get("meta")
            .and_then(Value::as_object)
            .is_some_and(|meta| meta.keys().all(|found| found == key))
    {
        data.remove("meta");
    }
}

/// Runs one recorded case; `Err` says what differs.
fn run_case(case: &Case) -> Result<(), String> {
    let folder = dsh_tests::corpus_dir()
        .join("jsonrpc/snapshots")
        .join(case.name);
    let dir = TestDir::new(&format!("sdk-{}", case.name));
    dir.write(
        "home/cordis.patch.yml",
        &format!("{REPLAY_PATCH}{}", case.patch),
    );
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let cwd = work.canonicalize().unwrap();
    let cwd_text = cwd.to_str().unwrap();
    let log = hydrate(&folder, case, &dir.join("replay"), cwd_text);
    let client = start(
        &dir,
        &["--replay", log.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "")],
    );
    let failed = |what: &str, error: &dyn std::fmt::Display| {
        format!(
            "{}: {what}: {error}\nstderr: {}",
            case.name,
            stderr_of(&dir)
        )
    };
    client
        .initialize(cwd_text, PROVIDER, MODEL, None, WAIT)
        .map_err(|error| failed("initialize", &error))?;
    let prompt = case.prompt.replace("{{cwd}}", cwd_text);
    let run = client
        .run(case.session_id, &prompt, RUN)
        .map_err(|error| failed("run", &error))?;
    client
        .shutdown(WAIT)
        .map_err(|error| failed("shutdown", &error))?;
    let exit = client.wait(WAIT).map_err(|error| failed("exit", &error))?;
    let mut problems = Vec::new();
    if exit.and_then(|status| status.code()) != Some(0) {
        problems.push(format!("the runtime exited {exit:?} after shutdown"));
    }
    if !client.stray_lines().is_empty() {
        problems.push(format!(
            "stdout carried non-frames: {:?}",
            client.stray_lines()
        ));
    }
    // The run's session ids: its own and every child's, as the stored logs' headers name them.
    let ids: Vec<String> = stored_logs(&dir.home())
        .iter()
        .filter_map(|(header, _)| header["id"].as_str().map(str::to_owned))
        .chain([case.session_id.to_owned()])
        .collect();
    let scrub = Scrub::new(ids, &cwd);
    let raw: Vec<Value> = run.notifications.iter().map(as_value).collect();
    let mut ours = normalize_notifications(&raw, &scrub);
    let mut expected = json_lines(&folder.join("notifications.expected.jsonl"));
    problems.extend(ordering_problems(&raw));
    let set_aside = IN_PART
        .iter()
        .find(|(name, _, _)| *name == case.name)
        .map(|(_, _, set_aside)| set_aside);
    if let Some(SetAside::DelegationWording) = set_aside {
        ours.iter_mut()
            .for_each(|notification| without_meta(notification, "subagentId"));
        let (ours_notices, expected_notices) = (
            without_delegation_wording(&mut ours),
            without_delegation_wording(&mut expected),
        );
        if ours_notices.is_empty() || ours_notices != expected_notices {
            problems.push(format!(
                "the delegation notices' sections differ: ours {ours_notices:?}, expected {expected_notices:?}"
            ));
        }
    }
    if let Some(difference) = first_difference(&ours, &expected) {
        problems.push(format!("notifications differ: {difference}"));
    }
    let result =
        scrub.value(&json!({"sessionId": run.session_id, "finalResponse": run.final_response}));
    let expected_result = json_lines(&folder.join("result.expected.json"));
    if expected_result.first() != Some(&result) {
        problems.push(format!("result {result}, expected {expected_result:?}"));
    }
    let last = run.notifications.last();
    if !last.is_some_and(|n| n.method == "session.status" && n.params["status"] == "idle") {
        problems.push(format!("the last notification is not idle: {last:?}"));
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(format!("{}:\n{}", case.name, problems.join("\n"))),
    }
}

#[test]
fn jsonrpc_recorded_cases_reproduce() {
    dsh_tests::needs_corpus!("jsonrpc_recorded_cases_reproduce");
    let mut reproduced = 0;
    let mut in_part = Vec::new();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    for case in &CASES {
        if let Some((_, reason)) = SKIPPED.iter().find(|(name, _)| *name == case.name) {
            eprintln!("jsonrpc: skipped {}: {reason}", case.name);
            skipped.push(case.name);
            continue;
        }
        let opening = IN_PART.iter().find(|(name, _, _)| *name == case.name);
        match (run_case(case), opening) {
            (Ok(()), None) => reproduced += 1,
            (Ok(()), Some((_, reason, _))) => {
                eprintln!("jsonrpc: {} reproduced in part: {reason}", case.name);
                in_part.push(case.name);
            }
            (Err(failure), _) => failures.push(failure),
        }
    }
    let mut line = format!(
        "jsonrpc recorded cases: {reproduced}/{} reproduced",
        CASES.len()
    );
    if !in_part.is_empty() {
        line.push_str(&format!(
            ", {} in part ({})",
            in_part.len(),
            in_part.join(", ")
        ));
    }
    if !skipped.is_empty() {
        line.push_str(&format!(
            ", {} skipped ({})",
            skipped.len(),
            skipped.join(", ")
        ));
    }
    println!("{line}");
    eprintln!("{line}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The error a request was answered with.
fn rpc_error(outcome: Result<Value, ClientError>) -> RpcError {
    match outcome {
        Err(ClientError::Rpc(error)) => error,
        other => panic!("expected an error answer, got {other:?}"),
    }
}

/// The `-32602` answer of `method` with `params`, asserting it names `field`.
fn names_field(client: &Client, method: &str, params: Value, field: &str) {
    let error = rpc_error(client.request(method, params.clone(), WAIT));
    assert_eq!(error.code, -32602, "{method} {params}: {error}");
    assert!(
        error.message.contains(field),
        "{method} {params}: `{}` does not name {field}",
        error.message
    );
    assert_eq!(
        error.data.as_ref().map(|data| &data["field"]),
        Some(&json!(field))
    );
}

#[test]
fn bad_input_is_answered_by_name_and_the_connection_lives() {
    let server = FakeDeepSeek::start(vec![Reply::text("still here")]);
    let dir = TestDir::new("sdk-bad-input");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    let client = start(&dir, &[], &[("DEEPSEEK_API_KEY", "sk-test")]);
    let cwd = dir.join("work");
    let cwd = cwd.to_str().unwrap();

    for line in [
        "this is not json",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"",
    ] {
        client.send_line(line).unwrap();
        let answer = client.next_unmatched(WAIT).unwrap();
        assert_eq!(answer["id"], Value::Null, "{answer}");
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
    }
    client.send_line("[1, 2]").unwrap();
    assert_eq!(
        client.next_unmatched(WAIT).unwrap()["error"]["code"],
        -32600
    );

    let unknown = rpc_error(client.request("session/teleport", json!({}), WAIT));
    assert_eq!(unknown.code, -32601);
    assert!(unknown.message.contains("session/teleport"), "{unknown}");
    assert_eq!(unknown.data, Some(json!({"method": "session/teleport"})));

    let early = rpc_error(client.request(
        "session/prompt",
        json!({"sessionId": "s-early", "contentBlocks": [{"type": "text", "text": "hi"}]}),
        WAIT,
    ));
    assert_eq!(
        (early.code, early.data.unwrap()["code"].clone()),
        (-32002, json!("not-initialized"))
    );

    names_field(
        &client,
        "initialize",
        json!({"cwd": cwd, "model": MODEL}),
        "provider",
    );
    names_field(
        &client,
        "initialize",
        json!({"cwd": cwd, "provider": PROVIDER}),
        "model",
    );
    let zero = json!({"cwd": cwd, "provider": PROVIDER, "model": MODEL, "maxTokens": 0});
    names_field(&client, "initialize", zero, "maxTokens");
    let nowhere = json!({"cwd": dir.join("missing"), "provider": PROVIDER, "model": MODEL});
    names_field(&client, "initialize", nowhere, "cwd");
    let stranger = json!({"cwd": cwd, "provider": "no-such-provider", "model": MODEL});
    names_field(&client, "initialize", stranger, "provider");
    names_field(&client, "initialize", json!([1]), "params");

    let info = client.initialize(cwd, PROVIDER, MODEL, None, WAIT).unwrap();
    assert_eq!(info["name"], "deepseek-harness-sdk-runtime");
    let text = |text: &str| json!([{"type": "text", "text": text}]);
    names_field(
        &client,
        "session/prompt",
        json!({"sessionId": "../escape", "contentBlocks": text("x")}),
        "sessionId",
    );
    names_field(
        &client,
        "session/prompt",
        json!({"sessionId": "s-1"}),
        "contentBlocks",
    );
    names_field(
        &client,
        "session/prompt",
        json!({"sessionId": "s-1", "contentBlocks": [{"type": "image"}]}),
        "contentBlocks[0]",
    );

    // After all of that, the connection still works end to end.
    let run = client.run("s-1", "are you there?", RUN).unwrap();
    assert_eq!(run.final_response, "still here");
    client.shutdown(WAIT).unwrap();
    let exit = client.wait(WAIT).unwrap();
    assert_eq!(
        exit.and_then(|status| status.code()),
        Some(0),
        "{}",
        stderr_of(&dir)
    );
    assert!(
        client.stray_lines().is_empty(),
        "{:?}",
        client.stray_lines()
    );
}

/// Waits for a `session.event` of `kind` in session `session`.
fn wait_for_event(client: &Client, session: &str, kind: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let notification = client
            .next_notification(left)
            .unwrap_or_else(|error| panic!("waiting for {kind} in {session}: {error}"));
        if notification.method == "session.event"
            && notification.params["sessionId"] == session
            && notification.params["event"]["type"] == kind
        {
            return;
        }
    }
}

#[test]
fn a_busy_session_refuses_a_second_prompt_and_the_end_of_stdin_cancels_its_turn() {
    // The model holds the request open with keep-alives: the turn runs until it is cancelled.
    let server = FakeDeepSeek::start(vec![Reply::KeepAliveOnly {
        every: Duration::from_millis(100),
    }]);
    let dir = TestDir::new("sdk-busy");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "{PLAIN_STORE}- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    let client = start(&dir, &[], &[("DEEPSEEK_API_KEY", "sk-test")]);
    let cwd = dir.join("work");
    client
        .initialize(cwd.to_str().unwrap(), PROVIDER, MODEL, Some(77), WAIT)
        .unwrap();
    client.prompt("s-busy", "take your time", WAIT).unwrap();
    wait_for_event(&client, "s-busy", "request/context");

    let busy = rpc_error(client.request(
        "session/prompt",
        json!({"sessionId": "s-busy", "contentBlocks": [{"type": "text", "text": "again"}]}),
        WAIT,
    ));
    assert_eq!(busy.code, -32001, "{busy}");
    assert_eq!(busy.data.as_ref().unwrap()["code"], "agent-busy");
    assert_eq!(busy.data.as_ref().unwrap()["sessionId"], "s-busy");

    // `initialize.maxTokens` capped what the model was asked for.
    let deadline = Instant::now() + WAIT;
    while server.requests().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.requests()[0].body["max_tokens"], 77);

    client.close_input();
    let exit = client.wait(WAIT).unwrap();
    assert_eq!(
        exit.and_then(|status| status.code()),
        Some(0),
        "{}",
        stderr_of(&dir)
    );
    let logs = stored_logs(&dir.home());
    let (_, events) = logs
        .iter()
        .find(|(header, _)| header["id"] == "s-busy")
        .expect("the session's log");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn/end", "{last}");
    assert_eq!(last["data"]["reason"]["kind"], "aborted", "{last}");
    assert!(
        client.stray_lines().is_empty(),
        "{:?}",
        client.stray_lines()
    );
}

#[test]
fn sigint_cancels_the_running_turn_and_exits_130() {
    let server = FakeDeepSeek::start(vec![Reply::KeepAliveOnly {
        every: Duration::from_millis(100),
    }]);
    let dir = TestDir::new("sdk-sigint");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "{PLAIN_STORE}- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    let client = start(&dir, &[], &[("DEEPSEEK_API_KEY", "sk-test")]);
    let cwd = dir.join("work");
    client
        .initialize(cwd.to_str().unwrap(), PROVIDER, MODEL, None, WAIT)
        .unwrap();
    client.prompt("s-int", "take your time", WAIT).unwrap();
    wait_for_event(&client, "s-int", "request/context");
    let pid = i32::try_from(client.pid().unwrap()).unwrap();
    // SAFETY: a plain signal to the child process this test started.
    #[allow(unsafe_code, reason = "kill(2) on the runtime this test started")]
    let sent = unsafe { libc::kill(pid, libc::SIGINT) };
    assert_eq!(sent, 0, "SIGINT to {pid}");
    let exit = client.wait(WAIT).unwrap();
    assert_eq!(
        exit.and_then(|status| status.code()),
        Some(130),
        "{}",
        stderr_of(&dir)
    );
    let logs = stored_logs(&dir.home());
    let (_, events) = logs
        .iter()
        .find(|(header, _)| header["id"] == "s-int")
        .expect("the session's log");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn/end", "{last}");
    assert_eq!(
        last["data"]["reason"],
        json!({"kind": "aborted", "reason": {"kind": "user"}}),
        "{last}"
    );
    assert!(
        client.stray_lines().is_empty(),
        "{:?}",
        client.stray_lines()
    );
}
