//! The hook files of Claude Code and Codex through the real headless runner (`hook-scripts`,
//! on by default): a hook that exits 2 blocks with its stderr, JSON decisions deny and ask,
//! additional context reaches the model's request, a timeout, an invalid matcher and a hook
//! that is not executable each say what happened and block nothing, and the host stays up.

use std::path::Path;

use dsh_tests::events::{first_tool_result_text, of_type};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent};
use dsh_tests::headless::{against_with_env, stream_json};
use dsh_tests::{Output, TestDir};
use serde_json::Value;

/// One headless run against a fake DeepSeek with `files` written under the working directory
/// (`~/` ones under the user's home), a home of the test's own (so the machine's own hook files never apply) and `script` as the
/// model's replies.
fn headless_run(
    name: &str,
    files: &[(&str, &str)],
    script: Vec<Reply>,
) -> (Output, Vec<Value>, Run) {
    let server = FakeDeepSeek::start(script);
    let dir = TestDir::new(name);
    dir.trust_projects();
    let work = dir.join("work");
    let user = dir.join("user");
    for (path, text) in files {
        let path = match path.strip_prefix("~/") {
            Some(under_home) => user.join(under_home),
            None => work.join(path),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&user).unwrap();
    let out = against_with_env(
        &server,
        &dir,
        &["--output", "stream-json", "run the check"],
        &[("HOME", user.to_str().unwrap())],
    );
    let events = stream_json(&out.stdout).0;
    (out, events, Run { server, dir })
}

struct Run {
    server: FakeDeepSeek,
    dir: TestDir,
}

impl Run {
    fn work(&self, path: &str) -> std::path::PathBuf {
        self.dir.join("work").join(path)
    }

    /// The messages of model request `index`, as JSON text.
    fn request(&self, index: usize) -> String {
        self.server.requests()[index].body["messages"].to_string()
    }
}

/// A Claude Code project settings file with `hooks` for `event`.
fn claude(event: &str, matcher: &str, hook: &str) -> String {
    format!(
        r#"{{"permissions": {{}}, "hooks": {{"{event}": [{{"matcher": "{matcher}", "hooks": [{hook}]}}]}}}}"#
    )
}

fn command(text: &str) -> String {
    format!(r#"{{"type": "command", "command": {}}}"#, Value::from(text))
}

fn bash_call(command: &str) -> Reply {
    let arguments = serde_json::json!({"command": command, "description": "run it"}).to_string();
    Reply::tool_calls(&[("call_1", "bash", &arguments)])
}

#[test]
fn a_pre_tool_hook_that_exits_2_blocks_the_call_with_its_stderr() {
    let hook = command("cat > pre.json; echo 'no shell here' >&2; exit 2");
    let (out, events, run) = headless_run(
        "hooks-exit-2",
        &[(
            ".claude/settings.json",
            &claude("PreToolUse", "bash", &hook),
        )],
        vec![bash_call("touch ran.txt"), Reply::text("understood")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(first_tool_result_text(&events), "Error: no shell here");
    assert!(!run.work("ran.txt").exists(), "the blocked command ran");
    let result = of_type(&events, "hook/result")[0]["data"].clone();
    assert_eq!(result["decision"], "block");
    assert_eq!(result["exitCode"], 2);
    assert_eq!(result["stderrSummary"], "no shell here");
    let invoked = &of_type(&events, "hook/invoked")[0]["data"];
    assert_eq!(invoked["dialect"], "claude-code");
    assert_eq!(invoked["matcher"], "bash");
    assert!(
        run.request(1).contains("no shell here"),
        "{}",
        run.request(1)
    );
    // The hook read Claude Code's input on stdin.
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(run.work("pre.json")).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert_eq!(input["tool_input"]["command"], "touch ran.txt");
    assert_eq!(input["tool_use_id"], "call_1");
    assert!(
        input["session_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(
        Path::new(input["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        run.work("").canonicalize().unwrap()
    );
}

#[test]
fn json_decisions_deny_and_ask_reach_the_pipeline() {
    let deny = command(
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on Fridays"}}'"#,
    );
    let (out, events, run) = headless_run(
        "hooks-json-deny",
        &[(".claude/settings.json", &claude("PreToolUse", "*", &deny))],
        vec![bash_call("touch ran.txt"), Reply::text("ok")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(first_tool_result_text(&events), "Error: not on Fridays");
    assert!(!run.work("ran.txt").exists());
    assert_eq!(
        of_type(&events, "hook/result")[0]["data"]["decision"],
        "deny"
    );

    let ask = command(
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"a person decides"}}'"#,
    );
    let (out, events, run) = headless_run(
        "hooks-json-ask",
        &[(".claude/settings.json", &claude("PreToolUse", "ba.*", &ask))],
        vec![bash_call("touch ran.txt"), Reply::text("ok")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    // Headless has no one to ask: the approval is unavailable, and the call does not run.
    let asked = &of_type(&events, "approval/asked")[0]["data"];
    assert_eq!(asked["reason"], "a person decides");
    assert_eq!(
        of_type(&events, "approval/decided")[0]["data"]["outcome"],
        "unavailable"
    );
    assert!(!run.work("ran.txt").exists());
}

#[test]
fn additional_context_reaches_the_models_requests() {
    let prompt = command(
        r#"echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"PROMPT-CONTEXT"}}'"#,
    );
    let post = command(
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"POST-CONTEXT"}}'"#,
    );
    let settings = format!(
        r#"{{"hooks": {{"UserPromptSubmit": [{{"hooks": [{prompt}]}}], "PostToolUse": [{{"matcher": "bash", "hooks": [{post}]}}]}}}}"#
    );
    // Codex's plain stdout is context too.
    let codex = r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo CODEX-CONTEXT"}]}]}}"#;
    let (out, events, run) = headless_run(
        "hooks-context",
        &[
            (".claude/settings.local.json", &settings),
            (".codex/hooks.json", codex),
        ],
        vec![bash_call("echo hi"), Reply::text("done")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let first = run.request(0);
    assert!(
        first.contains("PROMPT-CONTEXT") && first.contains("CODEX-CONTEXT"),
        "{first}"
    );
    assert!(!first.contains("POST-CONTEXT"), "{first}");
    assert!(
        run.request(1).contains("POST-CONTEXT"),
        "{}",
        run.request(1)
    );
    // Each reached the model as a logged message from its format's plugin.
    let sources: Vec<&Value> = of_type(&events, "user/message")
        .into_iter()
        .map(|event| &event["data"]["source"]["plugin"])
        .filter(|plugin| plugin.is_string())
        .collect();
    assert!(
        sources.contains(&&Value::from("hooks-claude-code")),
        "{sources:?}"
    );
    assert!(
        sources.contains(&&Value::from("hooks-codex")),
        "{sources:?}"
    );
}

#[test]
fn a_hook_past_its_timeout_is_stopped_and_blocks_nothing() {
    let hook = r#"{"type": "command", "command": "sleep 30; exit 2", "timeout": 1}"#;
    let (out, events, run) = headless_run(
        "hooks-timeout",
        &[(".claude/settings.json", &claude("PreToolUse", "bash", hook))],
        vec![bash_call("touch ran.txt"), Reply::text("done")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        run.work("ran.txt").exists(),
        "a timed-out hook blocked the call"
    );
    let result = &of_type(&events, "hook/result")[0]["data"];
    assert_eq!(result["decision"], "pass");
    assert!(result["exitCode"].is_null(), "{result}");
    assert!(
        result["stderrSummary"]
            .as_str()
            .is_some_and(|text| text.contains("timed out after 1000 ms")),
        "{result}"
    );
    assert!(
        out.stderr.contains("did not finish") && out.stderr.contains("sleep 30"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_invalid_matcher_refuses_its_whole_file_and_names_it() {
    let settings = r#"{"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo must not run >&2; exit 2"}]}],
        "PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "exit 2"}]}]}}"#;
    let (out, events, run) = headless_run(
        "hooks-bad-matcher",
        &[(".claude/settings.json", settings)],
        vec![Reply::text("PONG")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(of_type(&events, "hook/invoked").is_empty(), "{events:?}");
    let file = run.work(".claude/settings.json");
    assert!(
        out.stderr.contains(file.to_str().unwrap())
            && out
                .stderr
                .contains("invalid claude-code regex matcher \"(\"")
            && out.stderr.contains("\"PreToolUse\""),
        "{}",
        out.stderr
    );
    assert_eq!(run.server.requests().len(), 1);
}

#[test]
fn a_hook_that_is_not_executable_fails_and_blocks_nothing() {
    let hook = command("./check.sh");
    let (out, events, run) = headless_run(
        "hooks-not-executable",
        &[
            (
                ".codex/hooks.json",
                &format!(
                    r#"{{"hooks": {{"PreToolUse": [{{"matcher": "bash", "hooks": [{hook}]}}]}}}}"#
                ),
            ),
            ("check.sh", "#!/bin/sh\nexit 2\n"),
        ],
        vec![bash_call("touch ran.txt"), Reply::text("done")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(run.work("ran.txt").exists(), "the call did not run");
    let result = &of_type(&events, "hook/result")[0]["data"];
    assert_eq!(result["exitCode"], 126, "{result}");
    assert_eq!(result["decision"], "pass");
    assert!(
        out.stderr.contains("exit code 126") && out.stderr.contains("./check.sh"),
        "{}",
        out.stderr
    );
    assert_eq!(
        of_type(&events, "hook/invoked")[0]["data"]["dialect"],
        "codex"
    );
}

#[test]
fn a_blocking_prompt_hook_ends_the_turn_before_any_request() {
    let settings = claude(
        "UserPromptSubmit",
        "[",
        &command("echo 'not that' >&2; exit 2"),
    );
    let (out, events, run) = headless_run(
        "hooks-prompt-block",
        &[(".claude/settings.json", &settings)],
        vec![Reply::text("never")],
    );
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(run.server.requests().is_empty());
    let end = &of_type(&events, "turn/end")[0]["data"]["reason"];
    assert_eq!(end["kind"], "blocked");
    assert_eq!(end["reason"], "not that");
    assert!(of_type(&events, "step/start").is_empty());
}

#[test]
fn the_users_session_start_hook_gives_context_to_the_first_request() {
    // A slow hook still reaches the first request: the prompt waits for it.
    let settings = r#"{"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "sleep 1; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",\"additionalContext\":\"START-CONTEXT\"}}'"}]}]}}"#;
    let (out, _, run) = headless_run(
        "hooks-session-start",
        &[("~/.claude/settings.json", settings)],
        vec![Reply::text("done")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        run.request(0).contains("START-CONTEXT"),
        "{}",
        run.request(0)
    );
}

#[test]
fn a_subagent_start_hook_gives_the_child_context() {
    let start = command(
        r#"echo '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"CHILD-CONTEXT"}}'"#,
    );
    let settings = format!(
        r#"{{"hooks": {{"SubagentStart": [{{"matcher": "general-purpose", "hooks": [{start}]}}], "SubagentStop": [{{"matcher": "code-reviewer", "hooks": [{start}]}}]}}}}"#
    );
    let call = serde_json::json!({"description": "check", "prompt": "say CHILD", "run_in_background": false})
        .to_string();
    let (out, _, run) = headless_run(
        "hooks-subagent-start",
        &[(".claude/settings.json", &settings)],
        vec![
            Reply::tool_calls(&[("call_1", "subagent", &call)]),
            Reply::text("CHILD"),
            Reply::text("done"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        !run.request(0).contains("CHILD-CONTEXT"),
        "{}",
        run.request(0)
    );
    let child = run.request(1);
    assert!(
        child.contains("say CHILD") && child.contains("CHILD-CONTEXT"),
        "{child}"
    );
}

/// SubagentStop runs when a child's run settles, with Claude Code's input (the child's id and
/// kind, `stop_hook_active` false); a matcher naming another kind does not select it.
#[test]
fn a_subagent_stop_hook_runs_with_the_childs_id_when_it_settles() {
    let record = command("cat > subagent-stop.json");
    let other = command("touch other-kind-ran");
    let settings = format!(
        r#"{{"hooks": {{"SubagentStop": [{{"matcher": "general-purpose", "hooks": [{record}]}}, {{"matcher": "code-reviewer", "hooks": [{other}]}}]}}}}"#
    );
    let call = serde_json::json!({"description": "check", "prompt": "say CHILD", "run_in_background": false})
        .to_string();
    let (out, events, run) = headless_run(
        "hooks-subagent-stop",
        &[(".claude/settings.json", &settings)],
        vec![
            Reply::tool_calls(&[("call_1", "subagent", &call)]),
            Reply::text("CHILD"),
            Reply::text("done"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    // The hook runs detached once the child settles; give it a moment to have written.
    let path = run.work("subagent-stop.json");
    for _ in 0..100 {
        if std::fs::metadata(&path).is_ok_and(|meta| meta.len() > 0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "SubagentStop", "{input}");
    assert_eq!(input["agent_type"], "general-purpose");
    assert_eq!(input["stop_hook_active"], false);
    // The child's id is its session's: the session the hook's input names is the child's.
    let child = input["agent_id"].as_str().unwrap_or_default();
    assert_eq!(input["session_id"], child, "{input}");
    assert_eq!(child.len(), 36, "{input}");
    assert!(!of_type(&events, "tool/result").is_empty());
    assert!(!run.work("other-kind-ran").exists());
}

/// A run whose first call (`first`) writes a PreToolUse hook for `bash` into the project's
/// settings; the second call, at the very next step, must meet it.
fn hook_written_by(name: &str, first: Reply) {
    let (out, events, run) = headless_run(
        name,
        &[],
        vec![first, bash_call("touch ran.txt"), Reply::text("understood")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        !run.work("ran.txt").exists(),
        "the hook written first did not run"
    );
    let results = of_type(&events, "hook/result");
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        results[0]["data"]["stderrSummary"],
        "written in the session"
    );
}

fn blocking_settings() -> String {
    claude(
        "PreToolUse",
        "bash",
        &command("echo 'written in the session' >&2; exit 2"),
    )
}

/// `.claude` is protected: the `write` tool's change of a hook file is put to a person first,
/// and with no one to ask (headless) it is refused naming the file, so no hook of the agent's
/// own making applies.
#[test]
fn a_hook_file_the_agent_writes_is_put_to_a_person_and_refused_headless() {
    let write = serde_json::json!({
        "file_path": ".claude/settings.json",
        "content": blocking_settings(),
    })
    .to_string();
    let (out, events, run) = headless_run(
        "hooks-written",
        &[],
        vec![
            Reply::tool_calls(&[("call_0", "write", &write)]),
            bash_call("touch ran.txt"),
            Reply::text("understood"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let results = of_type(&events, "tool/result");
    let refused = results[0].to_string();
    assert!(
        refused.contains(".claude/settings.json is protected")
            && refused.contains("not approved (unavailable)"),
        "{refused}"
    );
    assert!(!run.work(".claude/settings.json").exists());
    assert!(run.work("ran.txt").exists(), "a hook applied");
    assert!(of_type(&events, "hook/result").is_empty());
}

#[test]
fn a_hook_file_a_command_writes_applies_from_its_next_call() {
    let script = format!(
        "mkdir -p .claude && printf '%s' {} > .claude/settings.json",
        shell_quote(&blocking_settings())
    );
    let arguments = serde_json::json!({"command": script, "description": "set up"}).to_string();
    hook_written_by(
        "hooks-written-by-bash",
        Reply::tool_calls(&[("call_0", "bash", &arguments)]),
    );
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[test]
fn a_hook_file_changed_outside_the_agents_calls_applies_once_the_watch_saw_it() {
    // The first call tells where the work is; the test then writes the hook file itself (as
    // an editor would) while the second reply waits, so only the watch can make it known.
    let marks = TestDir::new("hooks-watch-marks");
    let mark = marks.join("cwd");
    let pwd = format!("pwd > {}", shell_quote(mark.to_str().unwrap()));
    let writer = {
        let mark = mark.clone();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !mark.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            // Past the first call's own look at the files.
            std::thread::sleep(std::time::Duration::from_millis(200));
            let cwd = std::fs::read_to_string(&mark).unwrap_or_default();
            let settings = Path::new(cwd.trim()).join(".claude/settings.json");
            std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
            std::fs::write(settings, blocking_settings()).unwrap();
        })
    };
    let Reply::Sse(mut later) = bash_call("touch ran.txt") else {
        panic!("a tool call is an SSE reply");
    };
    later.insert(0, SseEvent::Pause(std::time::Duration::from_secs(2)));
    let (out, events, run) = headless_run(
        "hooks-watched",
        &[],
        vec![
            bash_call(&pwd),
            Reply::Sse(later),
            Reply::text("understood"),
        ],
    );
    writer.join().unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        !run.work("ran.txt").exists(),
        "the hook written meanwhile did not run"
    );
    assert_eq!(
        of_type(&events, "hook/result")[0]["data"]["stderrSummary"],
        "written in the session"
    );
}
