//! The six terminal tools beyond the recorded case: a command interrupted, refusals, and a
//! send in the background.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against_patched;
use serde_json::json;

#[test]
fn a_terminal_runs_a_command_is_interrupted_and_stays_its_sessions() {
    let dir = TestDir::new("pty-terminals");
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        [
            ("terminal_open", &json!({"type": "shell", "name": "main"})),
            (
                "terminal_signal",
                &json!({"sessionId": "pty-1", "signal": "SIGKILL"}),
            ),
            (
                "terminal_send",
                &json!({"sessionId": "pty-1", "text": "export KEPT=yes; sleep 30"}),
            ),
            (
                "terminal_signal",
                &json!({"sessionId": "pty-1", "signal": "SIGINT"}),
            ),
            (
                "terminal_send",
                &json!({"sessionId": "pty-1", "text": "echo kept=$KEPT"}),
            ),
            ("terminal_open", &json!({"type": "python"})),
            ("terminal_list", &json!({})),
            ("terminal_close", &json!({"sessionId": "pty-1"})),
            (
                "terminal_send",
                &json!({"sessionId": "pty-1", "text": "echo gone"}),
            ),
        ],
        "done",
    ));
    let out = against_patched(
        &server,
        &dir,
        "- insert:\n    - id: tool-pty\n      name: tool-pty\n      config:\n        tools: [terminal]\n        silenceMs: 500\n",
        &["--output", "stream-json", "go"],
        &[("DSH_PERMISSION_MODE", "workspace-write")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let texts = server.last_tool_texts();
    assert_eq!(
        texts[0],
        "started terminal session pty-1 (main) [type: shell]\ndsh> "
    );
    assert!(
        texts[1].contains("SIGKILL would kill the terminal's shell itself"),
        "{texts:?}"
    );
    // The sleep holds the terminal: the send returns on silence, the shell still running.
    assert!(
        texts[2].ends_with("[wait: inferred_idle]\n[session: running]"),
        "{texts:?}"
    );
    assert!(
        texts[3].starts_with("sent SIGINT to process group "),
        "{texts:?}"
    );
    assert!(
        texts[4].contains("\nkept=yes\n")
            && texts[4].ends_with("[wait: stdin_read]\n[session: running]"),
        "{texts:?}"
    );
    assert!(
        texts[5].contains("unknown terminal type `python`"),
        "{texts:?}"
    );
    assert_eq!(texts[6], "pty-1 (main) [type: shell] running");
    assert_eq!(texts[7], "closed terminal session pty-1");
    assert_eq!(texts[8], "Error: unknown PTY session pty-1");
}

#[test]
fn a_terminal_send_in_the_background_is_a_job() {
    let dir = TestDir::new("pty-terminal-job");
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        [
            ("terminal_open", &json!({"type": "shell"})),
            (
                "terminal_send",
                &json!({"sessionId": "pty-1", "text": "sleep 0.5; echo bg-done", "run_in_background": true}),
            ),
            (
                "terminal_send",
                &json!({"sessionId": "pty-1", "text": "echo clash"}),
            ),
            ("job_output", &json!({"job_id": "terminal-1", "wait": true})),
            (
                "terminal_send",
                &json!({"sessionId": "pty-1", "text": "echo after"}),
            ),
        ],
        "done",
    ));
    let out = against_patched(
        &server,
        &dir,
        "- insert:\n    - id: tool-pty\n      name: tool-pty\n      config:\n        tools: [terminal]\n",
        &["--output", "stream-json", "go"],
        &[("DSH_PERMISSION_MODE", "workspace-write")],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let texts = server.last_tool_texts();
    assert_eq!(texts[1], "started background job terminal-1", "{texts:?}");
    assert!(
        texts[2].starts_with("Error: terminal pty-1 is busy with another send"),
        "{texts:?}"
    );
    assert!(
        texts[3].contains("bg-done") && texts[3].contains("completed"),
        "{texts:?}"
    );
    assert!(
        texts[4].contains("\nafter\n")
            && texts[4].ends_with("[wait: stdin_read]\n[session: running]"),
        "{texts:?}"
    );
}
