//! ACP clients nobody here wrote, from npm, through the real `dsh-host --profile acp` and the
//! fake DeepSeek server: the official TypeScript SDK's client driving every method the agent
//! serves (`tests/acp/sdk-client.mjs`), and `acpx`, a headless ACP client, running a prompt
//! with a tool call it approves. Skipped, saying why, where node or the packages are missing.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dsh_tests::acp::{UNINHERITED, editor_args, node_clients, stored_events};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply, SseEvent, first_chunk};
use dsh_tests::{TestDir, host_bin};
use serde_json::{Value, json};

/// Runs `node ARGS` in `cwd` with `envs` (and none of the developer's keys or log filters), at
/// most two minutes.
fn node(cwd: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new("node");
    for name in UNINHERITED {
        command.env_remove(name);
    }
    let mut child = command
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The kinds of `updates`, in order.
fn kinds(updates: &Value) -> Vec<String> {
    updates
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|update| update["sessionUpdate"].as_str().map(str::to_owned))
        .collect()
}

fn agent_messages(updates: &Value) -> String {
    updates
        .as_array()
        .into_iter()
        .flatten()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|update| update["content"]["text"].as_str())
        .collect()
}

#[test]
fn the_official_sdk_client_drives_every_method() {
    dsh_tests::needs_bubblewrap!("the SDK client's approved shell command");
    let clients = match node_clients() {
        Ok(dir) => dir,
        Err(reason) => return dsh_tests::skip("the ACP SDK client", &reason),
    };
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_sdk",
            "bash",
            json!({"command": "echo SDK_OK", "description": "Run the check"}),
        ),
        Reply::text("The check passed."),
        Reply::Sse(vec![
            first_chunk(),
            SseEvent::content("partial"),
            SseEvent::Pause(Duration::from_secs(30)),
            SseEvent::finish("stop"),
            SseEvent::Done,
        ]),
        Reply::tool_call(
            "call_fs",
            "write",
            json!({"file_path": "sdk.txt", "content": "from the sdk\n"}),
        ),
        Reply::text("Resumed and answering."),
    ]);
    let dir = TestDir::new("acp-sdk-client");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let host = host_bin();
    let script = clients.join("sdk-client.mjs");
    let mut args = vec![
        script.to_str().unwrap(),
        work.to_str().unwrap(),
        "--",
        host.to_str().unwrap(),
    ];
    let agent = editor_args(&server, &dir, "");
    args.extend(agent.iter().map(String::as_str));
    let home = dir.home();
    let out = node(
        &work,
        &args,
        &[
            ("DSH_HOME", home.to_str().unwrap()),
            ("DEEPSEEK_API_KEY", "sk-test"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK client failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|error| {
        panic!(
            "{error}: {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let first = &seen["first"];
    let session = first["opened"]["sessionId"].as_str().unwrap();
    assert_eq!(first["initialized"]["protocolVersion"], 1, "{first}");
    assert_eq!(
        first["initialized"]["agentCapabilities"]["loadSession"],
        true
    );
    assert_eq!(first["opened"]["modes"]["currentModeId"], "workspace-write");
    assert_eq!(first["opened"]["configOptions"][0]["id"], "model");
    assert!(first["mode"].get("error").is_none(), "{}", first["mode"]);
    assert_eq!(first["prompted"]["stopReason"], "end_turn");
    // The mode's shell commands are put to the client, which allowed this one.
    let asked = first["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_sdk");
    let updates = &first["updates"];
    let order = kinds(updates);
    for kind in [
        "available_commands_update",
        "current_mode_update",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "usage_update",
    ] {
        assert!(order.contains(&kind.to_owned()), "no {kind} in {order:?}");
    }
    let closed = updates
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|update| update["toolCallId"] == "call_sdk")
        .unwrap();
    assert_eq!(closed["status"], "completed", "{closed}");
    assert!(
        closed["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("SDK_OK")
    );
    assert!(agent_messages(updates).starts_with("The check passed."));
    assert_eq!(
        first["model"]["configOptions"][0]["currentValue"], "deepseek-official/deepseek-v4-pro",
        "{}",
        first["model"]
    );
    assert_eq!(
        first["cancelled"]["stopReason"], "cancelled",
        "{}",
        first["cancelled"]
    );
    assert_eq!(
        first["listed"]["sessions"][0]["sessionId"], session,
        "{}",
        first["listed"]
    );
    assert_eq!(
        first["unknown"]["error"]["code"], -32602,
        "{}",
        first["unknown"]
    );
    assert_eq!(first["exitCode"], 0);
    // The cancelled prompt went to the model the client chose.
    let sent = server.requests();
    assert_eq!(sent[2].body["model"], "deepseek-v4-pro");

    let second = &seen["second"];
    assert!(second["loaded"]["modes"].is_object(), "{second}");
    let replayed = &second["updates"];
    assert!(second["beforeAnswer"].as_u64().unwrap() >= 4, "{second}");
    assert_eq!(kinds(replayed)[0], "user_message_chunk", "{replayed}");
    assert_eq!(replayed[0]["content"]["text"], "Run the check");
    assert!(agent_messages(replayed).contains("The check passed."));
    assert_eq!(second["exitCode"], 0);

    let third = &seen["third"];
    assert!(third["resumed"]["configOptions"].is_array(), "{third}");
    assert_eq!(third["prompted"]["stopReason"], "end_turn");
    assert_eq!(agent_messages(&third["updates"]), "Resumed and answering.");
    // Its client keeps the files: the write went to its buffer, not to the disk.
    let written = work.join("sdk.txt").display().to_string();
    assert_eq!(
        third["files"],
        json!([{"write": written, "content": "from the sdk\n"}]),
        "{third}"
    );
    assert!(!work.join("sdk.txt").exists());
    assert!(first["files"].as_array().unwrap().is_empty(), "{first}");
    assert_eq!(third["exitCode"], 0);
    let events = stored_events(&home, session);
    let aborted = events
        .iter()
        .any(|event| event["type"] == "turn/end" && event["data"]["reason"]["kind"] == "aborted");
    assert!(aborted, "the cancelled turn is logged aborted");
}

/// `acpx exec PROMPT` against our agent on `server` with sessions under `mode`, approving
/// everything it is asked: the frames it printed (`--format json`), and its stdout and stderr.
fn acpx_exec(
    clients: &std::path::Path,
    server: &FakeDeepSeek,
    dir: &TestDir,
    mode: &str,
    prompt: &str,
) -> (Vec<Value>, String) {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let home = dir.home();
    let mut agent = vec![host_bin().display().to_string()];
    agent.extend(editor_args(server, dir, ""));
    let agent = agent.join(" ");
    let acpx = clients.join("node_modules/acpx/dist/cli.js");
    let acpx_home = dir.join("acpx-home");
    std::fs::create_dir_all(&acpx_home).unwrap();
    let out = node(
        &work,
        &[
            acpx.to_str().unwrap(),
            "--agent",
            &agent,
            "--cwd",
            work.to_str().unwrap(),
            "--approve-all",
            "--format",
            "json",
            "--timeout",
            "60",
            "exec",
            prompt,
        ],
        &[
            ("DSH_HOME", home.to_str().unwrap()),
            ("DEEPSEEK_API_KEY", "sk-test"),
            ("DSH_PERMISSION_MODE", mode),
            ("HOME", acpx_home.to_str().unwrap()),
        ],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "acpx failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    // `--format json` prints the frames acpx exchanged with the agent.
    let frames: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (frames, format!("{stdout}\n{stderr}"))
}

/// What the agent said in `frames`.
fn said(frames: &[Value]) -> String {
    frames
        .iter()
        .filter(|frame| frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|frame| frame["params"]["update"]["content"]["text"].as_str())
        .collect()
}

#[test]
fn acpx_runs_a_prompt_with_a_tool_call_and_an_approval() {
    dsh_tests::needs_bubblewrap!("acpx's approved shell command");
    let clients = match node_clients() {
        Ok(dir) => dir,
        Err(reason) => return dsh_tests::skip("acpx", &reason),
    };
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_acpx",
            "bash",
            json!({"command": "echo ACPX_OK", "description": "Run the check"}),
        ),
        Reply::text("The check printed ACPX_OK."),
    ]);
    let dir = TestDir::new("acp-acpx");
    // Every shell command is put to the client, which approves it.
    let (frames, output) = acpx_exec(
        &clients,
        &server,
        &dir,
        "ask-every-command",
        "Run the check",
    );
    assert_eq!(said(&frames), "The check printed ACPX_OK.", "{output}");
    // The session is sandboxed: the command ran in our sandbox, not in acpx's terminal.
    assert!(
        !frames
            .iter()
            .any(|frame| frame["method"] == "terminal/create")
    );
    let answered = frames
        .iter()
        .any(|frame| frame["result"]["outcome"]["optionId"] == "allow-once");
    assert!(answered, "acpx approved the call: {output}");
    assert!(
        server
            .last_tool_texts()
            .iter()
            .any(|text| text.contains("ACPX_OK")),
        "{:?}",
        server.last_tool_texts()
    );
    let logs = dsh_tests::sessions::stored_logs(&dir.home());
    let decided: Vec<&Value> = logs
        .iter()
        .flat_map(|(_, events)| events)
        .filter(|event| event["type"] == "approval/decided")
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["data"]["outcome"], "allowed-once");
}

/// acpx has terminals and files: a full-access session's command runs in its terminal, and a
/// write goes through its `fs/write_text_file`.
#[test]
fn acpx_runs_a_full_access_command_in_its_terminal_and_keeps_the_files() {
    let clients = match node_clients() {
        Ok(dir) => dir,
        Err(reason) => return dsh_tests::skip("acpx", &reason),
    };
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_term",
            "bash",
            json!({"command": "echo FROM_ACPX_TERMINAL", "description": "Say"}),
        ),
        Reply::tool_call(
            "call_file",
            "write",
            json!({"file_path": "acpx.txt", "content": "written by acpx\n"}),
        ),
        Reply::text("Both done."),
    ]);
    let dir = TestDir::new("acp-acpx-terminal");
    let (frames, output) = acpx_exec(&clients, &server, &dir, "danger-full-access", "Do both");
    assert_eq!(said(&frames), "Both done.", "{output}");
    let asked = |method: &str| frames.iter().filter(|f| f["method"] == method).count();
    assert_eq!(asked("terminal/create"), 1, "{output}");
    assert_eq!(asked("terminal/release"), 1, "{output}");
    assert_eq!(asked("fs/write_text_file"), 1, "{output}");
    let sent = server.last_tool_texts();
    assert!(sent[0].contains("FROM_ACPX_TERMINAL"), "{sent:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("work/acpx.txt")).unwrap(),
        "written by acpx\n"
    );
}
