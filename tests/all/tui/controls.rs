//! What a person types in `dsh`: `/` commands (`/compact` runs), `@` files, a message queued
//! while a turn runs, a paste and a steer, the session and model pickers with rename and
//! fork, `/jobs` stopping a background job, Alt-Up editing and removing a queued message, a goal
//! on the status line from `/goal` to its completion, `/undo` taking a turn's write back, and
//! Ctrl-T for the reasoning.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::tui::{assert_in_order, lines};
use dsh_tests::{TestDir, needs_tmux};
use serde_json::json;

use super::attached;

/// "Slow first answer.", its second half after `pause`: a turn that runs while keys are sent.
fn slow_answer(pause: std::time::Duration) -> Reply {
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk};
    Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("Slow first "),
        SseEvent::Pause(pause),
        SseEvent::content("answer."),
        SseEvent::finish("stop"),
        SseEvent::Done,
    ])
}

#[test]
fn slash_opens_the_commands_and_compact_runs() {
    needs_tmux!("tui::controls::slash_opens_the_commands_and_compact_runs");
    let server = FakeDeepSeek::start(vec![
        Reply::text("The codeword is PELICAN."),
        Reply::text("compacted-summary: the codeword is PELICAN"),
    ]);
    let dir = TestDir::new("tui-commands");
    let (mut web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("remember a codeword");
    pane.keys(&["Enter"]);
    pane.wait_everything("the answer", |text| {
        text.contains("The codeword is PELICAN.") && text.contains("idle")
    });
    pane.type_text("/");
    let listed = pane.wait_screen("the commands", |screen| screen.contains("/compact"));
    assert_in_order(&listed, &["─ commands", "/compact", "/help"]);
    pane.type_text("comp");
    pane.wait_screen("the narrowed list", |screen| !screen.contains("/help"));
    pane.keys(&["Tab"]);
    pane.wait_screen("the completed command", |screen| {
        screen.contains("› /compact")
    });
    pane.type_text("the codeword");
    pane.wait_screen("the command line", |screen| {
        screen.contains("› /compact the codeword")
    });
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the compaction", |text| text.contains("Compacted"));
    assert_in_order(
        &text,
        &[
            "The codeword is PELICAN.",
            "/compact the codeword",
            "Compacted",
        ],
    );
    let ask = server.requests()[1].body["messages"].to_string();
    assert!(ask.contains("Above all, keep: the codeword."), "{ask}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn at_completes_a_file_of_the_workspace() {
    needs_tmux!("tui::controls::at_completes_a_file_of_the_workspace");
    let server = FakeDeepSeek::start(vec![Reply::text("Seen.")]);
    let dir = TestDir::new("tui-files");
    dir.write("work/src/main.rs", "fn main() {}\n");
    dir.write("work/src/lib.rs", "\n");
    dir.write("work/notes.md", "\n");
    let (mut web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("look at @src/ma");
    pane.wait_screen("the file list", |screen| {
        screen.contains("─ files") && screen.contains("src/main.rs")
    });
    pane.keys(&["Tab"]);
    pane.wait_screen("the completed path", |screen| {
        screen.contains("› look at @src/main.rs")
    });
    pane.keys(&["Enter"]);
    pane.wait_everything("the answer", |text| text.contains("Seen."));
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("look at @src/main.rs"), "{sent}");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_message_sent_while_a_turn_runs_is_queued_and_runs_next() {
    needs_tmux!("tui::controls::a_message_sent_while_a_turn_runs_is_queued_and_runs_next");
    let slow = slow_answer(std::time::Duration::from_millis(1500));
    let server = FakeDeepSeek::start(vec![slow, Reply::text("Second answer.")]);
    let dir = TestDir::new("tui-queue");
    let (mut web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("first");
    pane.keys(&["Enter"]);
    pane.wait_screen("the first turn", |screen| screen.contains("Slow first"));
    pane.type_text("second");
    pane.keys(&["Enter"]);
    pane.wait_screen("the queued message", |screen| {
        screen.contains("↳ queued: second")
    });
    let text = pane.wait_everything("both turns", |text| text.contains("Second answer."));
    assert_in_order(
        &text,
        &[
            "› first",
            "Slow first answer.",
            "› second",
            "Second answer.",
        ],
    );
    assert!(!pane.screen().contains("↳ queued"), "the queue emptied");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_paste_arrives_whole_and_tab_steers_into_the_running_turn() {
    needs_tmux!("tui::controls::a_paste_arrives_whole_and_tab_steers_into_the_running_turn");
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk};
    let arguments = json!({"command": "echo step", "description": "a step"}).to_string();
    let slow_step = Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("Checking first."),
        SseEvent::Pause(std::time::Duration::from_millis(1500)),
        SseEvent::tool_call(0, Some("call_1"), Some("bash"), &arguments),
        SseEvent::finish("tool_calls"),
        SseEvent::Done,
    ]);
    let server = FakeDeepSeek::start(vec![slow_step, Reply::text("Steered answer.")]);
    let dir = TestDir::new("tui-steer");
    let (mut web, pane) = attached(&server, &dir, "", (80, 30), &[]);
    // A bracketed paste of two lines: both in the composer, nothing sent.
    pane.paste("first pasted line\nsecond pasted line");
    pane.wait_screen("the pasted lines", |screen| {
        screen.contains("› first pasted line") && screen.contains("  second pasted line")
    });
    pane.keys(&["C-u", "BSpace", "C-u"]);
    pane.wait_screen("an empty composer", |screen| {
        screen.contains("Ask anything")
    });
    pane.type_text("start");
    pane.keys(&["Enter"]);
    pane.wait_screen("the first step", |screen| {
        screen.contains("Checking first.")
    });
    pane.type_text("also mention the weather");
    pane.keys(&["Tab"]);
    pane.wait_everything("the answer", |text| text.contains("Steered answer."));
    let second = server.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("also mention the weather"),
        "the steer joined the turn's next step: {second}"
    );
    assert_eq!(server.requests().len(), 2, "one turn, two steps");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn the_session_picker_opens_another_session_and_the_status_line_shows_the_meter() {
    needs_tmux!(
        "tui::controls::the_session_picker_opens_another_session_and_the_status_line_shows_the_meter"
    );
    let server = FakeDeepSeek::start(vec![
        Reply::text("Alpha answer."),
        Reply::text("Beta answer."),
    ]);
    let dir = TestDir::new("tui-picker");
    let (mut web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("alpha question");
    pane.keys(&["Enter"]);
    let screen = pane.wait_screen("the first answer and its meter", |screen| {
        screen.contains("Alpha answer.") && screen.contains("idle") && screen.contains("ctx ")
    });
    assert!(screen.contains("deepseek-v4-flash"), "{screen}");
    pane.type_text("/new");
    pane.keys(&["Enter"]);
    pane.wait_screen("a fresh screen", |screen| !screen.contains("Alpha answer."));
    pane.type_text("beta question");
    pane.keys(&["Enter"]);
    pane.wait_screen("the second answer", |screen| {
        screen.contains("Beta answer.")
    });
    pane.keys(&["C-o"]);
    let picker = pane.wait_screen("the picker", |screen| screen.contains("─ sessions"));
    assert!(
        picker.contains("open"),
        "the open session is marked:\n{picker}"
    );
    // Newest first: the open one, then the first session.
    pane.wait_screen("both listed", |screen| {
        lines(screen)
            .iter()
            .filter(|line| line.contains("/work"))
            .count()
            == 2
    });
    pane.keys(&["Down", "Enter"]);
    let text = pane.wait_everything("the first session", |text| {
        text.contains("Alpha answer.") && !text.contains("Beta answer.")
    });
    assert_in_order(&text, &["› alpha question", "Alpha answer."]);
    // Renamed, it is found by its title; a fork opens with the same conversation.
    pane.type_text("/rename Alpha work");
    pane.keys(&["Enter"]);
    pane.wait_screen("the rename", |screen| {
        screen.contains("renamed: Alpha work")
    });
    pane.keys(&["C-o"]);
    pane.type_text("alph");
    let found = pane.wait_screen("the renamed session", |screen| {
        screen.contains("─ sessions › alph") && screen.contains("Alpha work")
    });
    assert!(!found.contains("beta"), "{found}");
    // (Escape and the next key in one read would be Alt and the key: wait for it alone.)
    pane.keys(&["Escape"]);
    pane.wait_screen("the picker closed", |screen| !screen.contains("─ sessions"));
    pane.type_text("/model");
    pane.keys(&["Enter"]);
    pane.wait_screen("the model picker", |screen| {
        screen.contains("─ model") && screen.contains("(current)")
    });
    pane.keys(&["Escape"]);
    pane.wait_screen("the picker closed", |screen| !screen.contains("─ model"));
    pane.type_text("/fork");
    pane.keys(&["Enter"]);
    pane.wait_screen("the fork", |screen| {
        screen.contains("forked") && screen.contains("Alpha answer.")
    });
    pane.keys(&["C-o"]);
    let listed = pane.wait_screen("three sessions", |screen| {
        lines(screen)
            .iter()
            .filter(|line| line.contains("/work"))
            .count()
            == 3
    });
    assert!(listed.contains("open"), "{listed}");
    // Ctrl-X deletes the selected session (the first: the beta one, not the open fork).
    let first = lines(&listed)
        .into_iter()
        .find(|line| line.contains("/work"))
        .unwrap();
    assert!(first.contains("beta question"), "{listed}");
    pane.keys(&["C-x"]);
    pane.wait_screen("the session deleted", |screen| {
        !screen.contains("beta question")
            && lines(screen)
                .iter()
                .filter(|line| line.contains("/work"))
                .count()
                == 2
    });
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn ctrl_t_shows_the_reasoning_and_hides_it_again() {
    needs_tmux!("tui::controls::ctrl_t_shows_the_reasoning_and_hides_it_again");
    let server = FakeDeepSeek::start(vec![Reply::reasoning_then_text(
        "First I weigh the options carefully.",
        "The answer is four.",
    )]);
    let dir = TestDir::new("tui-reasoning");
    let (mut web, pane) = attached(&server, &dir, "", (80, 24), &[]);
    pane.type_text("what is two plus two");
    pane.keys(&["Enter"]);
    let collapsed = pane.wait_everything("the answer", |text| {
        text.contains("The answer is four.") && text.contains("idle")
    });
    assert_in_order(
        &collapsed,
        &[
            "› what is two plus two",
            "✻ Thought (6 words; Ctrl-T shows reasoning)",
            "The answer is four.",
        ],
    );
    assert!(!collapsed.contains("weigh the options"), "{collapsed}");
    pane.keys(&["C-t"]);
    let shown = pane.wait_everything("the reasoning", |text| text.contains("weigh the options"));
    assert_in_order(
        &shown,
        &[
            "› what is two plus two",
            "✻ First I weigh the options carefully.",
            "The answer is four.",
        ],
    );
    assert!(
        !shown.contains("Thought (6 words"),
        "printed again, not twice:\n{shown}"
    );
    pane.keys(&["C-t"]);
    pane.wait_everything("collapsed again", |text| {
        text.contains("Thought (6 words") && !text.contains("weigh the options")
    });
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn slash_jobs_lists_the_background_jobs_and_enter_stops_one() {
    needs_tmux!("tui::controls::slash_jobs_lists_the_background_jobs_and_enter_stops_one");
    let arguments =
        json!({"command": "sleep 60", "description": "a long wait", "run_in_background": true})
            .to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_1", "bash", &arguments)]),
        Reply::text("It waits in the background."),
    ]);
    let dir = TestDir::new("tui-jobs");
    let (_web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("/jobs");
    pane.keys(&["Enter"]);
    pane.wait_screen("the hint that there are none", |screen| {
        screen.contains("no background jobs")
    });
    pane.type_text("wait in the background");
    pane.keys(&["Enter"]);
    pane.wait_screen("the answer and the job on the status line", |screen| {
        screen.contains("It waits in the background.") && screen.contains("1 jobs")
    });
    pane.type_text("/jobs");
    pane.keys(&["Enter"]);
    let picker = pane.wait_screen("the jobs picker", |screen| {
        screen.contains("─ background jobs")
    });
    assert!(
        picker.contains("bash-1") && picker.contains("sleep 60") && picker.contains("running"),
        "the job, what it runs and its state:\n{picker}"
    );
    pane.keys(&["Enter"]);
    pane.wait_screen("the picker closed", |screen| {
        !screen.contains("─ background jobs")
    });
    // Stopped: the registry says so, and the list shows it.
    pane.type_text("/jobs");
    pane.keys(&["Enter"]);
    pane.wait_screen("the job killed", |screen| {
        screen.contains("─ background jobs") && screen.contains("killed")
    });
}

#[test]
fn alt_up_edits_a_queued_message_in_place_and_an_emptied_one_leaves_the_queue() {
    needs_tmux!(
        "tui::controls::alt_up_edits_a_queued_message_in_place_and_an_emptied_one_leaves_the_queue"
    );
    // Longer than the edits take (a cancel would drop the queue with the turn).
    let slow = slow_answer(std::time::Duration::from_secs(10));
    let server = FakeDeepSeek::start(vec![slow, Reply::text("Answer to the edited one.")]);
    let dir = TestDir::new("tui-queue-edit");
    let (_web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("first");
    pane.keys(&["Enter"]);
    pane.wait_screen("the first turn", |screen| screen.contains("Slow first"));
    pane.type_text("draft with a typo");
    pane.keys(&["Enter"]);
    pane.type_text("never mind this one");
    pane.keys(&["Enter"]);
    pane.wait_screen("both queued", |screen| {
        screen.contains("↳ queued: draft with a typo") && screen.contains("↳ queued: never mind")
    });
    // The newest is taken out for editing; emptied and sent, it leaves the queue.
    pane.keys(&["M-Up"]);
    pane.wait_screen("the edit mode", |screen| {
        screen.contains("editing a queued message") && screen.contains("› never mind this one")
    });
    pane.keys(&["C-u", "Enter"]);
    pane.wait_screen("the removed one gone", |screen| {
        !screen.contains("never mind") && screen.contains("↳ queued: draft with a typo")
    });
    // The other one is edited in place and keeps its turn.
    pane.keys(&["M-Up"]);
    pane.wait_screen("the edit mode again", |screen| {
        screen.contains("› draft with a typo")
    });
    pane.keys(&["C-u"]);
    pane.type_text("the corrected message");
    pane.keys(&["Enter"]);
    pane.wait_screen("the edited text queued", |screen| {
        screen.contains("↳ queued: the corrected message")
    });
    // The slow turn ends, then the queued one runs with its new text.
    let text = pane.wait_everything("the queued turn", |text| {
        text.contains("Answer to the edited one.")
    });
    assert_in_order(
        &text,
        &[
            "› first",
            "Slow first answer.",
            "› the corrected message",
            "Answer to the edited one.",
        ],
    );
    assert!(!text.contains("› draft with a typo"), "{text}");
    assert!(!text.contains("› never mind"), "{text}");
}

#[test]
fn a_goal_set_with_slash_goal_shows_on_the_status_line_until_it_is_complete() {
    needs_tmux!(
        "tui::controls::a_goal_set_with_slash_goal_shows_on_the_status_line_until_it_is_complete"
    );
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call("call_get", "get_goal", json!({})),
        Reply::text("Round 1: two tests still fail."),
    ]);
    let dir = TestDir::new("tui-goal");
    let (web, pane) = attached(&server, &dir, "", (120, 30), &[]);
    pane.type_text("/goal Make the build green");
    pane.keys(&["Enter"]);
    pane.wait_screen("the goal on the status line", |screen| {
        screen.contains("goal active") && screen.contains("/256: Make the build green")
    });
    // The model completes it in its second round, naming the revision it read.
    let listed = web.call("session.list", &json!({}));
    let session = listed["sessions"][0]["id"]
        .as_str()
        .expect("one session")
        .to_owned();
    let goal = web.call("goal.get", &json!({"sessionId": session}))["goal"].clone();
    server.push(vec![Reply::tool_call(
        "call_done",
        "update_goal",
        json!({"goal_id": goal["id"], "revision": 1, "action": "complete"}),
    )]);
    pane.wait_screen("the goal complete", |screen| {
        screen.contains("goal complete 2/256: Make the build green") && screen.contains("idle")
    });
}

#[test]
fn slash_undo_takes_the_last_turns_write_back() {
    needs_tmux!("tui::controls::slash_undo_takes_the_last_turns_write_back");
    let server = FakeDeepSeek::start(vec![
        Reply::tool_call(
            "call_w",
            "write",
            json!({"file_path": "notes.txt", "content": "draft\n"}),
        ),
        Reply::text("Wrote the notes."),
    ]);
    let dir = TestDir::new("tui-undo");
    let (_web, pane) = attached(&server, &dir, "", (120, 30), &[]);
    pane.type_text("write the notes");
    pane.keys(&["Enter"]);
    pane.wait_screen("the turn's answer", |screen| {
        screen.contains("Wrote the notes.") && screen.contains("idle")
    });
    let notes = dir.join("work/notes.txt");
    assert_eq!(
        std::fs::read_to_string(&notes).ok().as_deref(),
        Some("draft\n")
    );
    pane.type_text("/undo");
    pane.keys(&["Enter"]);
    pane.wait_screen("the undo's outcome", |screen| {
        screen.contains("Undid turn 1: 1 path(s) put back: notes.txt.")
    });
    assert!(!notes.exists(), "the written file is gone again");
    assert_eq!(server.requests().len(), 2, "/undo did not reach the model");
}
