//! `dsh --attach` on an editor's live session: the terminal joins the session an ACP client
//! (the editor) opened on `dsh-host --profile acp`, sees the editor's turn and its ask without
//! a modal (the editor answers this host's asks, and the terminal says so), and a turn typed
//! in the terminal shows in both, the editor seeing the terminal's message too.

use std::time::{Duration, Instant};

use dsh_tests::acp::asking_editor;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::client_socket;
use dsh_tests::tui::assert_in_order;
use dsh_tests::{TestDir, WAIT, needs_tmux};
use serde_json::json;

use super::attach_pane;

#[test]
fn the_terminal_follows_and_prompts_an_editors_session_and_leaves_its_asks_to_the_editor() {
    needs_tmux!(
        "tui::editor::the_terminal_follows_and_prompts_an_editors_session_and_leaves_its_asks_to_the_editor"
    );
    let command = json!({"command": "echo from the editor", "description": "Say it"});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_1", "bash", command),
        Reply::text("Answered for the terminal."),
    ]);
    let dir = TestDir::new("tui-editor");
    // The editor leaves its ask open until it cancels the turn.
    let mut agent = asking_editor(&server, &dir, "ignore");
    let (session, _) = agent.open(&dir.join("work"));
    let pane = attach_pane(&dir, &client_socket(&dir.home(), agent.pid()), &session);

    // The editor's turn: its ask shows in the terminal as waiting, with no modal to answer.
    let prompt = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "from the editor"}]}),
    );
    let waiting = pane.wait_screen("the ask left to the editor", |screen| {
        screen.contains("the acp host's own client answers its asks")
    });
    assert!(!waiting.contains("Allow bash?"), "{waiting}");
    assert_in_order(
        &pane.everything(),
        &["› from the editor", "echo from the editor"],
    );
    agent.notify("session/cancel", json!({"sessionId": session}));
    let answer = agent.response(prompt, WAIT);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");

    // A turn typed in the terminal: both see it.
    pane.type_text("from the terminal");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the terminal's answer", |text| {
        text.contains("Answered for the terminal.")
    });
    assert_in_order(
        &text,
        &[
            "Approval of bash cancelled",
            "› from the terminal",
            "Answered for the terminal.",
        ],
    );
    pane.wait_screen("the wait over", |screen| {
        !screen.contains("host's own client answers its asks")
    });
    let deadline = Instant::now() + WAIT;
    while !agent.updates(&session).iter().any(|update| {
        update["sessionUpdate"] == "user_message_chunk"
            && update["content"]["text"] == "from the terminal"
    }) {
        assert!(
            Instant::now() < deadline,
            "the editor never saw the terminal's message"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    agent.close();
    assert_eq!(agent.wait_exit(WAIT), Some(0));
}
