//! Plan mode in `dsh` (the terminal UI, in tmux): `/plan` turns it on, the plan comes up in
//! the approval modal as a review, `n` and a typed note keep planning (the note reaches the
//! model), `y` approves the second plan and the write runs.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::{TestDir, needs_tmux};
use serde_json::json;

use super::attached;

#[test]
fn a_plan_is_reviewed_in_the_modal() {
    needs_tmux!("tui::plan::a_plan_is_reviewed_in_the_modal");
    let plan = |text: &str| json!({ "plan": text }).to_string();
    let write = json!({"file_path": "a.txt", "content": "hello\n"}).to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[(
            "call_p1",
            "exit_plan_mode",
            &plan("# Add a.txt\n\n1. Write a.txt."),
        )]),
        Reply::tool_calls(&[(
            "call_p2",
            "exit_plan_mode",
            &plan("# Add a.txt, checked\n\n1. Write a.txt.\n2. Read it back."),
        )]),
        Reply::tool_calls(&[("call_w", "write", &write)]),
        Reply::text("Done."),
    ]);
    let dir = TestDir::new("tui-plan");
    let (mut web, pane) = attached(&server, &dir, "", (80, 40), &[]);
    pane.type_text("/plan");
    pane.keys(&["Enter"]);
    pane.wait_everything("plan mode on", |text| text.contains("Plan mode on"));
    pane.type_text("add a.txt");
    pane.keys(&["Enter"]);
    let modal = pane.wait_screen("the review", |screen| {
        screen.contains("Review the plan") && screen.contains("Keep planning")
    });
    dsh_tests::tui::assert_in_order(
        &modal,
        &[
            "Review the plan",
            "# Add a.txt",
            "1. Write a.txt.",
            "y  Approve",
        ],
    );
    pane.keys(&["n"]);
    pane.wait_screen("the note", |screen| screen.contains("A note for the agent"));
    pane.type_text("check it");
    pane.keys(&["Enter"]);
    pane.wait_screen("the second plan", |screen| {
        screen.contains("Review the plan") && screen.contains("2. Read it back.")
    });
    pane.keys(&["y"]);
    pane.wait_everything("the answer", |text| text.contains("Done."));
    let kept = server.requests()[1].tool_texts();
    assert!(kept[0].ends_with("Their note: check it"), "{kept:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("work/a.txt"))
            .ok()
            .as_deref(),
        Some("hello\n")
    );
    assert!(
        !pane.screen().contains("Review the plan"),
        "the modal closed"
    );
    assert_eq!(web.host.stop(), Some(0));
}
