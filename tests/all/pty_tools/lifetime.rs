//! How long a persistent shell lives, through the web profile: it and the job it started end
//! with its session and with its row, and a session whose sandbox mode changed gets a new
//! shell under the new mode.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use serde_json::json;

/// Whether a process whose command line is `sleep <seconds>` runs on this machine.
fn sleeping(seconds: &str) -> bool {
    let wanted = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| cmdline == wanted.as_bytes())
}

/// A web host whose persistent shell started `sleep <seconds>` as a background job in a
/// session: the host, the session and its event socket, and the patch layer's text.
fn sleeper(
    dir: &TestDir,
    seconds: &str,
) -> (
    dsh_tests::web::Web,
    FakeDeepSeek,
    String,
    dsh_tests::http::Socket,
    String,
) {
    use dsh_tests::web::{Web, WebHost, turn_ended};
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": format!("sleep {seconds} & echo started")}),
        ),
        Reply::text("done"),
    ]);
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n\
         - id: tool-bash\n  disabled: true\n\
         - insert:\n    - id: tool-pty\n      name: tool-pty\n",
        server.url()
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let web = Web::from(WebHost::start(
        dir,
        &layer,
        &[],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ));
    let (session, mut socket) = web.followed_session();
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": "start a sleeper"}),
    );
    socket.until(300, turn_ended);
    let texts = server.last_tool_texts();
    assert!(texts[0].ends_with("started"), "{texts:?}");
    assert!(
        sleeping(seconds),
        "the shell's job runs while the session lives"
    );
    (web, server, session, socket, layer)
}

/// Waits up to 10 s for the sleeper to be gone; whether it is.
fn sleeper_gone(seconds: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sleeping(seconds) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    !sleeping(seconds)
}

#[test]
fn a_sessions_shell_and_what_it_started_end_with_the_session() {
    let dir = TestDir::new("pty-session-end");
    // A duration no other process uses, so the sleep is known by its command line.
    let seconds = format!("86399.{}1", std::process::id());
    let (web, _server, session, mut socket, _) = sleeper(&dir, &seconds);
    // Idle once its driver went quiet (after the turn's end): then it may be deleted.
    socket.until(100, |frame| {
        frame["type"] == "host/session-status"
            && frame["sessionId"] == session
            && frame["running"] == false
    });
    web.call("session.delete", &json!({"sessionId": session}));
    assert!(
        sleeper_gone(&seconds),
        "the shell's job outlived its deleted session"
    );
    let mut host = web.host;
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn the_shells_end_when_the_row_unloads() {
    let dir = TestDir::new("pty-unload");
    let seconds = format!("86399.{}2", std::process::id());
    let (web, _server, _session, _socket, layer) = sleeper(&dir, &seconds);
    // The patch layer is watched: without the row, the host unmounts it.
    let without = layer
        .replace("- id: tool-bash\n  disabled: true\n", "")
        .replace("- insert:\n    - id: tool-pty\n      name: tool-pty\n", "");
    dir.write("web.patch.yml", &without);
    assert!(
        sleeper_gone(&seconds),
        "the shell's job outlived the unloaded row"
    );
    let mut host = web.host;
    assert_eq!(host.stop(), Some(0));
}

#[test]
fn a_new_sandbox_mode_takes_a_new_shell() {
    use dsh_tests::web::{Web, WebHost, turn_ended};
    let dir = TestDir::new("pty-mode-change");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": "export KEPT=yes; echo made > made.txt"}),
        ),
        Reply::text("made"),
        Reply::tool_call(
            "call_2",
            "bash",
            json!({"command": "echo ${KEPT:-reset}; echo again > again.txt"}),
        ),
        Reply::text("tried"),
    ]);
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n\
         - id: tool-bash\n  disabled: true\n\
         - insert:\n    - id: tool-pty\n      name: tool-pty\n",
        server.url()
    );
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let web = Web::from(WebHost::start(
        &dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ));
    let (session, mut socket) = web.followed_session();
    for (text, preset) in [("make it", "workspace-write"), ("again", "read-only")] {
        web.call(
            "session.setPermission",
            &json!({"sessionId": session, "preset": preset}),
        );
        web.call(
            "session.prompt",
            &json!({"sessionId": session, "text": text}),
        );
        socket.until(300, turn_ended);
    }
    let texts = server.last_tool_texts();
    assert!(work.join("made.txt").exists(), "{texts:?}");
    assert!(!work.join("again.txt").exists(), "{texts:?}");
    assert!(
        texts[1].starts_with(
            "[the session's sandbox mode changed to read-only; this command ran in a new shell"
        ) && texts[1].contains("\nreset\n"),
        "{texts:?}"
    );
    let mut host = web.host;
    assert_eq!(host.stop(), Some(0));
}
