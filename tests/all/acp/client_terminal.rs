//! The client's terminal in editor mode: with the row's `clientTerminal` (the bundle's) and a
//! client that has terminals, a full-access session's shell command runs in a terminal of the
//! client's (`terminal/create`, shown in its tool call at once, waited for, its output read,
//! released), a command past its timeout is killed there, and a session under a sandbox keeps
//! the sandbox: its commands never reach the client.

use dsh_tests::acp::{AcpClient, editor_agent};
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, WAIT};
use serde_json::{Value, json};

fn requests<'a>(frames: &'a [Value], method: &str) -> Vec<&'a Value> {
    frames
        .iter()
        .filter(|frame| frame["method"] == method)
        .collect()
}

/// An agent whose sessions run under `mode`, its client having terminals, and its session.
fn agent_with_terminals(server: &FakeDeepSeek, dir: &TestDir, mode: &str) -> (AcpClient, String) {
    let mut agent = editor_agent(server, dir, "", &[("DSH_PERMISSION_MODE", mode)]);
    let (session, _) = agent.open_with(&dir.join("work"), json!({"terminal": true}));
    (agent, session)
}

#[test]
fn a_full_access_command_runs_in_the_editors_terminal() {
    let dir = TestDir::new("acp-client-terminal");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_term",
            "bash",
            json!({"command": "echo IN_THE_EDITOR; echo oops >&2; exit 3", "description": "Try"}),
        ),
        Reply::tool_call(
            "call_slow",
            "bash",
            json!({"command": "sleep 30", "description": "Wait", "timeoutMs": 400}),
        ),
        Reply::text("Done."),
    ]);
    let (mut agent, session) = agent_with_terminals(&server, &dir, "danger-full-access");
    let answer = agent.prompt(&session, "Try it");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    let frames = agent.frames();
    let created = requests(&frames, "terminal/create");
    assert_eq!(created.len(), 2, "{created:?}");
    let work = dir.join("work").display().to_string();
    assert_eq!(created[0]["params"]["command"], "bash");
    assert_eq!(
        created[0]["params"]["args"],
        json!(["-c", "echo IN_THE_EDITOR; echo oops >&2; exit 3"])
    );
    assert_eq!(created[0]["params"]["cwd"], work.as_str());
    assert_eq!(created[0]["params"]["sessionId"], session.as_str());
    // The model reads the terminal's output and its exit; the slow one was killed.
    let sent = server.requests().last().unwrap().tool_texts();
    assert!(
        sent[0].contains("IN_THE_EDITOR") && sent[0].contains("oops"),
        "{}",
        sent[0]
    );
    assert!(sent[0].contains("[exit code: 3]"), "{}", sent[0]);
    assert!(sent[1].contains("timed out"), "{}", sent[1]);
    assert_eq!(requests(&frames, "terminal/kill").len(), 1);
    assert_eq!(requests(&frames, "terminal/release").len(), 2);
    // The editor shows each call's terminal from its start to its end.
    let updates = agent.updates(&session);
    let terminal = json!([{"type": "terminal", "terminalId": "term-1"}]);
    let shown: Vec<&Value> = updates
        .iter()
        .filter(|update| update["toolCallId"] == "call_term" && update["content"] == terminal)
        .collect();
    assert_eq!(shown.len(), 2, "{updates:?}");
    assert_eq!(shown[0]["status"], "in_progress");
    // A command's exit code is its result, not a failure of the call (as with our own shell).
    assert_eq!(shown[1]["status"], "completed");
    let terminals = agent.terminals.lock().unwrap();
    assert!(terminals.values().all(|t| *t.released.lock().unwrap()));
    drop(terminals);
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

#[test]
fn a_sandboxed_session_keeps_its_sandbox() {
    dsh_tests::needs_bubblewrap!("a workspace-write session's command");
    let dir = TestDir::new("acp-client-terminal-sandboxed");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_here",
            "bash",
            json!({"command": "echo IN_THE_SANDBOX", "description": "Say"}),
        ),
        Reply::text("Done."),
    ]);
    let (mut agent, session) = agent_with_terminals(&server, &dir, "workspace-write");
    let answer = agent.prompt(&session, "Say it");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(requests(&agent.frames(), "terminal/create").is_empty());
    let sent = server.requests().last().unwrap().tool_texts();
    assert!(sent[0].contains("IN_THE_SANDBOX"), "{}", sent[0]);
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

/// A full-access agent in `dir` whose prompt's one call, `sleep 30`, was just handed to the
/// editor's terminal: the fake model (kept alive), the agent, its session and the prompt's id.
fn waiting_in_the_terminal(dir: &TestDir) -> (FakeDeepSeek, AcpClient, String, i64) {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let server = FakeDeepSeek::start(vec![Reply::tool_call(
        "call_long",
        "bash",
        json!({"command": "sleep 30", "description": "Wait long"}),
    )]);
    let (mut agent, session) = agent_with_terminals(&server, dir, "danger-full-access");
    let prompt = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "Wait"}]}),
    );
    agent.wait_frame("the terminal", WAIT, |frame| {
        frame["method"] == "terminal/create"
    });
    (server, agent, session, prompt)
}

#[test]
fn a_cancelled_prompt_kills_the_command_in_the_editors_terminal() {
    let dir = TestDir::new("acp-client-terminal-cancel");
    let started = std::time::Instant::now();
    let (_server, mut agent, session, prompt) = waiting_in_the_terminal(&dir);
    agent.notify("session/cancel", json!({"sessionId": session}));
    let answer = agent.response(prompt, WAIT);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    agent.wait_frame("the release", WAIT, |frame| {
        frame["method"] == "terminal/release"
    });
    let frames = agent.frames();
    assert_eq!(requests(&frames, "terminal/kill").len(), 1);
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}

/// A signal to the agent while a command runs in the editor's terminal: the editor is still
/// there, so it is told to kill and release it before the agent exits.
#[test]
fn a_signal_kills_the_command_in_the_editors_terminal_before_the_agent_exits() {
    let dir = TestDir::new("acp-client-terminal-signal");
    let (_server, mut agent, _session, _prompt) = waiting_in_the_terminal(&dir);
    // SAFETY: a signal to the child this test started.
    #[allow(unsafe_code, reason = "libc::kill on our own child")]
    let sent = unsafe { libc::kill(agent.pid(), libc::SIGTERM) };
    assert_eq!(sent, 0);
    let code = agent.wait_exit(WAIT);
    assert_eq!(code, Some(0), "{:?}", agent.stderr());
    let frames = agent.frames();
    assert_eq!(requests(&frames, "terminal/kill").len(), 1, "{frames:?}");
    assert_eq!(requests(&frames, "terminal/release").len(), 1);
}
