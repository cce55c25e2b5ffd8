//! Product subagents through the real `dsh-host`: Codex and Claude Code run as child agents
//! behind their delegation tools, against the test doubles in `tests/fixtures/products`
//! (which speak the products' own wires: Codex's app-server JSON-RPC, Claude Code's
//! stream-json) for what a real product cannot be made to do on cue (fail with a given
//! category, ask for approval, hang). The real products are in `products_real`, the
//! reference's recorded cases in `products_recorded`.

use std::path::Path;

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::{against, stream_json};
use dsh_tests::products::{codex_double, double, product_row, run_task, run_task_with_env};
use serde_json::{Value, json};

/// The row that runs the Claude Code double behind `subagent_claude_code`.
fn claude_double(env: &[(&str, &str)]) -> String {
    product_row(
        "claude",
        "claude-code",
        "subagent_claude_code",
        &double("fake-claude"),
        env,
    )
}

/// The messages the Codex double received, one `<method> <params>` per line.
fn codex_log(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn thread_start(log: &[String]) -> Value {
    let line = log
        .iter()
        .find_map(|line| line.strip_prefix("thread/start "))
        .expect("thread/start was sent");
    serde_json::from_str(line).unwrap()
}

#[test]
fn a_codex_child_answers_and_is_never_wider_than_its_parent() {
    for (mode, sandbox) in [
        ("workspace-write", "workspace-write"),
        ("read-only", "read-only"),
    ] {
        let dir = TestDir::new(&format!("products-codex-{mode}"));
        let log = dir.join("codex.log");
        let server = FakeDeepSeek::start(vec![
            Reply::tool_call(
                "c1",
                "subagent_codex",
                json!({"description": "count files", "prompt": "Count the files."}),
            ),
            Reply::text("the child answered"),
        ]);
        let rows = codex_double(&[("FAKE_CODEX_LOG", log.to_str().unwrap())]);
        let out = run_task(&server, &dir, &rows, "delegate it", mode);
        assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
        assert_eq!(server.last_tool_texts(), ["ANSWER: Count the files."]);
        let log = codex_log(&log);
        let methods: Vec<&str> = log
            .iter()
            .map(|line| line.split(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(
            &methods[..4],
            ["initialize", "initialized", "thread/start", "turn/start"],
            "{log:?}"
        );
        let thread = thread_start(&log);
        assert_eq!(thread["approvalPolicy"], "never");
        assert_eq!(thread["sandbox"], sandbox, "{thread}");
        assert_eq!(thread["ephemeral"], true);
        assert_eq!(thread["cwd"], dir.join("work").to_str().unwrap());
        server.assert_no_violations();
    }
}

#[test]
fn codex_failures_reach_the_parent_as_diagnostics_with_the_partial_answer() {
    let dir = TestDir::new("products-codex-failures");
    let log = dir.join("codex.log");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "c1",
            "subagent_codex",
            json!({"description": "503", "prompt": "FAKE_FAIL_HTTP=503"}),
        ),
        Reply::tool_call(
            "c2",
            "subagent_codex",
            json!({"description": "exit", "prompt": "FAKE_EXIT=3"}),
        ),
        Reply::tool_call(
            "c3",
            "subagent_codex",
            json!({"description": "approval", "prompt": "FAKE_ASK_APPROVAL"}),
        ),
        Reply::tool_call(
            "c4",
            "subagent_codex",
            json!({"description": "usage", "prompt": "FAKE_FAIL=usageLimitExceeded FAKE_NO_PARTIAL"}),
        ),
        Reply::text("seen"),
    ]);
    let rows = codex_double(&[("FAKE_CODEX_LOG", log.to_str().unwrap())]);
    let out = run_task(&server, &dir, &rows, "delegate it", "workspace-write");
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let texts = server.last_tool_texts();
    assert_eq!(
        texts[0],
        "Error: subagent run failed\nDiagnostic: Product subagent failure (product: Codex; stage: turn; category: httpConnectionFailed; HTTP status: 503)\nPartial output before the run ended:\npartial assistant text"
    );
    assert_eq!(
        texts[1],
        "Error: subagent run failed\nDiagnostic: Product subagent failure (product: Codex; stage: process; category: unknown; exit code: 3)"
    );
    // The approval was declined without anyone asked; the turn went on and answered.
    assert_eq!(texts[2], "DECISION: decline");
    assert!(
        codex_log(&log)
            .iter()
            .any(|line| line.starts_with("response {\"decision\":\"decline\"}")),
        "{:?}",
        codex_log(&log)
    );
    assert_eq!(
        texts[3],
        "Error: subagent run failed\nDiagnostic: Product subagent failure (product: Codex; stage: turn; category: usageLimitExceeded)"
    );
}

/// The processes of this user still running with `FAKE_TAG=<tag>` in their environment.
fn tagged_processes(tag: &str) -> Vec<String> {
    let needle = format!("FAKE_TAG={tag}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|entry| {
            std::fs::read(entry.path().join("environ")).is_ok_and(|environ| {
                environ
                    .split(|byte| *byte == 0)
                    .any(|var| var == needle.as_bytes())
            })
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_background_codex_run_is_a_job_collected_or_killed_with_its_process() {
    let dir = TestDir::new("products-codex-jobs");
    let log = dir.join("codex.log");
    let tag = dir.path.display().to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "c1",
            "subagent_codex",
            json!({"description": "quick one", "prompt": "FAKE_SLEEP_MS=1000 Be quick.", "run_in_background": true}),
        ),
        Reply::tool_call(
            "c2",
            "subagent_codex",
            json!({"description": "endless one", "prompt": "FAKE_HANG", "run_in_background": true}),
        ),
        Reply::tool_call(
            "c3",
            "job_output",
            json!({"job_id": "subagent-1", "wait": true, "timeout_ms": 20000}),
        ),
        Reply::tool_call("c4", "job_list", json!({})),
        Reply::tool_call(
            "c5",
            "job_kill",
            json!({"job_id": "subagent-2", "reason": "not needed"}),
        ),
        Reply::tool_call(
            "c6",
            "job_output",
            json!({"job_id": "subagent-2", "wait": true, "timeout_ms": 20000}),
        ),
        Reply::text("collected"),
    ]);
    let rows = codex_double(&[
        ("FAKE_CODEX_LOG", log.to_str().unwrap()),
        ("FAKE_TAG", &tag),
    ]);
    let out = run_task(&server, &dir, &rows, "delegate them", "workspace-write");
    // Both children's processes are gone: the collected one ended, the killed one was ended.
    assert_eq!(tagged_processes(&tag), Vec::<String>::new());
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let texts = server.last_tool_texts();
    assert_eq!(texts[0], "started background subagent job subagent-1");
    assert_eq!(texts[1], "started background subagent job subagent-2");
    assert_eq!(
        texts[2],
        "ANSWER: FAKE_SLEEP_MS=1000 Be quick.\n[status: completed]"
    );
    // The wait collected subagent-1's end: no notice of it beside the answer.
    let last = server.requests().last().unwrap().body["messages"].to_string();
    assert!(!last.contains("background job subagent-1 ("), "{last}");
    assert!(
        texts[3].contains("subagent-1 [subagent] completed — quick one")
            && texts[3].contains("subagent-2 [subagent] running — endless one"),
        "{texts:?}"
    );
    assert_eq!(texts[4], "requested cancellation of job subagent-2");
    assert_eq!(texts[5], "(no new output)\n[status: killed]");
    // The kill reached the product as an interrupt of its turn, before its process ended.
    assert!(
        codex_log(&log)
            .iter()
            .any(|line| line.starts_with("turn/interrupt")),
        "{:?}",
        codex_log(&log)
    );
}

/// The `argv` and environment the Claude Code double was started with, then what it read.
fn claude_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn flag_value<'a>(argv: &'a Value, name: &str) -> Option<&'a str> {
    argv.as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find_map(|arg| arg.strip_prefix(&format!("{name}=")))
}

#[test]
fn a_claude_code_child_answers_without_the_hosts_secrets_and_never_wider_than_its_parent() {
    for (mode, permission) in [("workspace-write", "acceptEdits"), ("read-only", "plan")] {
        let dir = TestDir::new(&format!("products-claude-{mode}"));
        let log = dir.join("claude.log");
        let server = FakeDeepSeek::start(vec![
            Reply::tool_call(
                "c1",
                "subagent_claude_code",
                json!({"description": "review", "prompt": "Review the change."}),
            ),
            Reply::text("the child answered"),
        ]);
        let mut rows = claude_double(&[
            ("FAKE_CLAUDE_LOG", log.to_str().unwrap()),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
        ]);
        rows.push_str("        permissionMode: acceptEdits\n");
        // A key in the host's environment is not the child's unless its row passes it on.
        let out = run_task_with_env(
            &server,
            &dir,
            &rows,
            "delegate it",
            &[
                ("DSH_PERMISSION_MODE", mode),
                ("ANTHROPIC_API_KEY", "sk-ant-host"),
                ("SSH_AUTH_SOCK", "/nonexistent/agent.sock"),
            ],
        );
        assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
        assert_eq!(server.last_tool_texts(), ["ANSWER: Review the change."]);
        let log = claude_log(&log);
        let argv = &log[0]["argv"];
        assert_eq!(
            flag_value(argv, "--permission-mode"),
            Some(permission),
            "{argv}"
        );
        assert_eq!(flag_value(argv, "--permission-prompt-tool"), Some("stdio"));
        assert!(
            argv.to_string().contains("--no-session-persistence"),
            "{argv}"
        );
        assert_eq!(log[0]["cwd"], dir.join("work").to_str().unwrap());
        let env = &log[0]["env"];
        assert!(env.get("ANTHROPIC_API_KEY").is_none(), "{env}");
        assert!(env.get("SSH_AUTH_SOCK").is_none(), "{env}");
        assert_eq!(env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9");
        assert_eq!(
            log[1]["stdin"]["message"]["content"][0]["text"],
            "Review the change."
        );
    }
}

#[test]
fn claude_code_failures_and_denied_prompts_reach_the_parent_with_their_category() {
    let dir = TestDir::new("products-claude-failures");
    let log = dir.join("claude.log");
    let prompts = [
        "FAKE_RESULT=error_max_budget_usd",
        "FAKE_EXIT=3",
        "FAKE_NO_RESULT",
        "FAKE_BLANK_SUCCESS",
        "FAKE_ASK_PERMISSION",
        "FAKE_RESULT=success FAKE_NO_PARTIAL",
    ];
    let mut script: Vec<Reply> = prompts
        .iter()
        .enumerate()
        .map(|(n, prompt)| {
            Reply::tool_call(
                &format!("c{n}"),
                "subagent_claude_code",
                json!({"description": "case", "prompt": prompt}),
            )
        })
        .collect();
    script.push(Reply::text("seen"));
    let server = FakeDeepSeek::start(script);
    let rows = claude_double(&[("FAKE_CLAUDE_LOG", log.to_str().unwrap())]);
    let out = run_task(&server, &dir, &rows, "delegate it", "workspace-write");
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let texts = server.last_tool_texts();
    let failure = |facts: &str| {
        format!(
            "Error: subagent run failed\nDiagnostic: Product subagent failure (product: Claude Code; {facts})"
        )
    };
    assert_eq!(
        texts[0],
        format!(
            "{}\nPartial output before the run ended:\npartial assistant text",
            failure("stage: query-run; category: error_max_budget_usd")
        )
    );
    assert!(
        texts[1].starts_with(&failure(
            "stage: process; category: process-exit; exit code: 3"
        )),
        "{texts:?}"
    );
    assert!(
        texts[2].starts_with(&failure("stage: query-run; category: missing-result")),
        "{texts:?}"
    );
    assert!(
        texts[3].starts_with(&failure("stage: query-run; category: invalid-success")),
        "{texts:?}"
    );
    // The prompt was denied at once, with no one asked, and the child went on to answer.
    assert_eq!(texts[4], "PERMISSION: deny");
    let answered = claude_log(&log)
        .iter()
        .any(|entry| entry["stdin"]["response"]["response"]["behavior"] == "deny");
    assert!(answered, "{:?}", claude_log(&log));
    // An error-marked success (an API error) is a failure too.
    assert_eq!(
        texts[5],
        failure("stage: query-run; category: invalid-success")
    );
}

/// Headless runs end once what was delegated is done: a background product run is waited
/// for (its notice opens the turn that answers), a command left running in the background
/// is not (it is ended with the run).
#[test]
fn headless_waits_for_a_background_product_run_but_not_for_a_background_command() {
    let dir = TestDir::new("products-headless-settles");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[
            (
                "c1",
                "subagent_codex",
                &json!({"description": "slow child", "prompt": "FAKE_SLEEP_MS=2000 Take your time.", "run_in_background": true}).to_string(),
            ),
            (
                "c2",
                "bash",
                &json!({"command": "sleep 30", "description": "endless", "run_in_background": true}).to_string(),
            ),
        ]),
        Reply::text("started both"),
        // The turn the child's notice opens.
        Reply::text("the child is done"),
    ]);
    let rows = codex_double(&[]);
    dir.write("home/cordis.patch.yml", &format!("- insert:\n{rows}"));
    let started = std::time::Instant::now();
    let out = against(&server, &dir, &["--output", "stream-json", "delegate"]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let (_, result) = stream_json(&out.stdout);
    assert_eq!(result["output"], "the child is done", "{}", out.stdout);
    let requests = server.requests();
    let woken = requests[2].body["messages"].to_string();
    assert!(
        woken.contains(
            "background job subagent-1 (subagent: slow child) finished [status: completed]"
        ),
        "{woken}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the run waited for the background command"
    );
}

/// A run past the row's `timeoutMs` is stopped (Codex's turn interrupted, its process ended)
/// and fails with category `timeout`, before the pipeline's own limit would cut it off.
#[test]
fn a_run_past_its_timeout_is_stopped_and_says_so() {
    let dir = TestDir::new("products-timeout");
    let log = dir.join("codex.log");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "c1",
            "subagent_codex",
            json!({"description": "hang", "prompt": "FAKE_HANG"}),
        ),
        Reply::text("gave up"),
    ]);
    let rows = codex_double(&[("FAKE_CODEX_LOG", log.to_str().unwrap())])
        .replace("timeoutMs: 60000", "timeoutMs: 1500");
    let started = std::time::Instant::now();
    let out = run_task(&server, &dir, &rows, "delegate it", "workspace-write");
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        server.last_tool_texts(),
        [
            "Error: subagent run failed\nDiagnostic: Product subagent failure (product: Codex; stage: turn; category: timeout)"
        ]
    );
    assert!(
        codex_log(&log)
            .iter()
            .any(|line| line.starts_with("turn/interrupt"))
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

/// With its wakes spent (`maxConsecutiveWakes: 0`) a background run's notice is held back;
/// a headless run has no person to open the next turn, so it opens it itself, and answers
/// from the notice.
#[test]
fn headless_delivers_a_notice_held_back_for_lack_of_wakes() {
    let dir = TestDir::new("products-headless-held");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "c1",
            "subagent_codex",
            json!({"description": "slow child", "prompt": "FAKE_SLEEP_MS=2000 Take your time.", "run_in_background": true}),
        ),
        Reply::text("started it"),
        Reply::text("the held notice arrived"),
    ]);
    let rows = codex_double(&[]);
    dir.write(
        "home/cordis.patch.yml",
        &format!("- id: jobs\n  config:\n    maxConsecutiveWakes: 0\n- insert:\n{rows}"),
    );
    let out = against(&server, &dir, &["--output", "stream-json", "delegate"]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let (_, result) = stream_json(&out.stdout);
    assert_eq!(
        result["output"], "the held notice arrived",
        "{}",
        out.stdout
    );
    let woken = server.requests()[2].body["messages"].to_string();
    assert!(
        woken.contains("background job subagent-1 (subagent: slow child) finished"),
        "{woken}"
    );
}
