//! `dsh --attach` on an editor's live session: the terminal joins the session an ACP client
//! (the editor) opened on `dsh-host --profile acp`, sees the editor's turn and its ask, answers
//! the ask from its modal while the editor's question is still open (the editor's is then
//! withdrawn), and a turn typed in the terminal shows in both, the editor seeing the
//! terminal's message too.

use std::time::{Duration, Instant};

use dsh_tests::acp::asking_editor;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::client_socket;
use dsh_tests::tui::assert_in_order;
use dsh_tests::{TestDir, WAIT, needs_tmux};
use serde_json::json;

use super::attach_pane;

#[test]
fn the_terminal_follows_prompts_and_answers_the_asks_of_an_editors_session() {
    needs_tmux!(
        "tui::editor::the_terminal_follows_prompts_and_answers_the_asks_of_an_editors_session"
    );
    let command = json!({"command": "echo from the editor", "description": "Say it"});
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_1", "bash", command),
        Reply::text("Ran it for the editor."),
        Reply::text("Answered for the terminal."),
    ]);
    let dir = TestDir::new("tui-editor");
    // The editor leaves its question open.
    let mut agent = asking_editor(&server, &dir, "ignore");
    let (session, _) = agent.open(&dir.join("work"));
    let pane = attach_pane(&dir, &client_socket(&dir.home(), agent.pid()), &session);

    // The editor's turn: its ask is put to the terminal too, which answers first.
    let prompt = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "from the editor"}]}),
    );
    let question = agent.wait_frame("the editor's question", WAIT, |frame| {
        frame["method"] == "session/request_permission"
    });
    pane.wait_screen("the approval modal", |screen| {
        screen.contains("Allow bash?")
    });
    assert_in_order(
        &pane.everything(),
        &["› from the editor", "echo from the editor"],
    );
    pane.keys(&["y"]);
    let answer = agent.response(prompt, WAIT);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let withdrawn = agent.wait_frame("the editor's question withdrawn", WAIT, |frame| {
        frame["method"] == "$/cancel_request"
    });
    assert_eq!(
        withdrawn["params"]["requestId"], question["id"],
        "{withdrawn}"
    );

    // A turn typed in the terminal: both see it.
    pane.type_text("from the terminal");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the terminal's answer", |text| {
        text.contains("Answered for the terminal.")
    });
    assert_in_order(
        &text,
        &[
            "│ from the editor",
            "Ran it for the editor.",
            "› from the terminal",
            "Answered for the terminal.",
        ],
    );
    assert!(!pane.screen().contains("Allow bash?"), "the modal closed");
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
