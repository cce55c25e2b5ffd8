//! `dsh`, the terminal UI, in a real terminal (tmux) against the real `dsh-host` and the fake
//! DeepSeek server: attached to a web host's socket, a prompt streams an answer with a bash
//! card, an approval is answered from the modal, Esc cancels a turn mid-stream, a resize
//! reflows the history, and a socket client following the same session sees the same turn.
//! What the pane shows (`capture-pane`) is compared, line by line.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::{LineClient, client_socket};
use dsh_tests::tui::{Pane, assert_in_order, dsh_bin, lines};
use dsh_tests::web::{ASKING_POLICY, Web, start_with, turn_ended, undecided_card};
use dsh_tests::{TestDir, needs_tmux};
use serde_json::json;

/// A web host against `server` with `rows` inserted, and `dsh --attach` to its socket in a
/// `size` pane working in `dir/work`.
fn attached(
    server: &FakeDeepSeek,
    dir: &TestDir,
    rows: &str,
    size: (u16, u16),
    args: &[&str],
) -> (Web, Pane) {
    let web = start_with(server, dir, rows);
    let socket = client_socket(&dir.home(), web.host.pid());
    let socket = socket.to_string_lossy().into_owned();
    let mut all = vec!["--attach", socket.as_str()];
    all.extend(args);
    let home = dir.home().to_string_lossy().into_owned();
    let pane = Pane::start(
        dir,
        &dir.join("work"),
        size,
        &dsh_bin(),
        &all,
        &[("DSH_HOME", &home)],
    );
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    (web, pane)
}

fn bash_then_text(command: &str, answer: &str) -> Vec<Reply> {
    let arguments = json!({"command": command, "description": "run it"}).to_string();
    vec![
        Reply::tool_calls(&[("call_1", "bash", &arguments)]),
        Reply::text(answer),
    ]
}

#[test]
fn a_prompt_streams_an_answer_with_a_bash_card() {
    needs_tmux!("tui::a_prompt_streams_an_answer_with_a_bash_card");
    let server = FakeDeepSeek::start(bash_then_text(
        "echo hello-from-bash",
        "The shell said **hello**.",
    ));
    let dir = TestDir::new("tui-stream");
    let (mut web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("say hello through the shell");
    pane.keys(&["Enter"]);
    let screen = pane.wait_everything("the answer", |text| text.contains("The shell said hello."));
    assert_in_order(
        &screen,
        &[
            "› say hello through the shell",
            "✓ $ echo hello-from-bash",
            "│ hello-from-bash",
            "└ exit 0",
            "The shell said hello.",
        ],
    );
    let last = pane.wait_screen("idle", |screen| screen.contains("idle"));
    assert!(!last.contains("working"), "{last}");
    // Ctrl-C twice quits, and the shell gets its terminal back.
    pane.keys(&["C-c"]);
    pane.wait_screen("the quit hint", |screen| {
        screen.contains("Ctrl-C again to quit")
    });
    pane.keys(&["C-c"]);
    let end = pane.wait_screen("dsh to exit", |screen| screen.contains("[exited 0]"));
    assert!(
        !end.contains("Ask anything"),
        "the composer is cleared on exit:\n{end}"
    );
    assert_eq!(web.host.stop(), Some(0));
}
