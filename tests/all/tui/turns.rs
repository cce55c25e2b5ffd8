//! A turn as a person sees it in `dsh` attached to a web host: an answer streamed with a bash
//! card (wide characters whole), an approval answered from the modal at 60 columns, Esc
//! cancelling mid-stream, a resize reflowing the history, a socket client sharing the turn and
//! answering its approval, questions answered in their modal, code highlighted and NO_COLOR.

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::{LineClient, client_socket};
use dsh_tests::tui::{Pane, assert_in_order, dsh_bin, lines};
use dsh_tests::web::{ASKING_POLICY, start_with, turn_ended, undecided_card};
use dsh_tests::{TestDir, needs_tmux};
use serde_json::json;

use super::{attached, bash_then_text};

#[test]
fn a_prompt_streams_an_answer_with_a_bash_card() {
    needs_tmux!("tui::turns::a_prompt_streams_an_answer_with_a_bash_card");
    let server = FakeDeepSeek::start(bash_then_text(
        "echo hello-from-bash",
        "The shell said **hello**. 日本語のテキスト",
    ));
    let dir = TestDir::new("tui-stream");
    let (mut web, pane) = attached(&server, &dir, "", (100, 30), &[]);
    pane.type_text("say hello through the shell");
    pane.keys(&["Enter"]);
    let screen = pane.wait_everything("the answer", |text| {
        text.contains("The shell said hello. 日本語のテキスト") && text.contains("idle")
    });
    assert_in_order(
        &screen,
        &[
            "› say hello through the shell",
            "✓ $ echo hello-from-bash",
            "│ hello-from-bash",
            "└ exit 0",
            "The shell said hello. 日本語のテキスト",
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
    let end = pane.wait_screen("dsh to exit", |screen| screen.contains("icanon"));
    assert!(end.contains("[exited 0]"), "{end}");
    assert!(
        end.contains("icanon echo"),
        "the terminal is out of raw mode:\n{end}"
    );
    assert!(
        !end.contains("Ask anything"),
        "the composer is cleared on exit:\n{end}"
    );
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn an_approval_is_answered_from_the_modal() {
    needs_tmux!("tui::turns::an_approval_is_answered_from_the_modal");
    dsh_tests::plugin_lib("hooks_probe");
    let server = FakeDeepSeek::start(bash_then_text("echo approved-run", "It ran."));
    let dir = TestDir::new("tui-approval");
    // At 60 columns, the narrowest terminal the UI promises to stay usable in.
    let (mut web, pane) = attached(&server, &dir, ASKING_POLICY, (60, 30), &[]);
    pane.type_text("run it after asking");
    pane.keys(&["Enter"]);
    let modal = pane.wait_screen("the approval modal", |screen| {
        screen.contains("Allow bash?")
    });
    assert_in_order(
        &modal,
        &[
            "Allow bash?",
            "the policy asks",
            "$ echo approved-run",
            "y  Allow once",
            "s  Allow this call for the session",
            "a  Always allow",
            "n  Reject",
        ],
    );
    pane.keys(&["s"]);
    let text = pane.wait_everything("the answer", |text| text.contains("It ran."));
    assert_in_order(
        &text,
        &[
            "› run it after asking",
            "✓ $ echo approved-run",
            "│ approved-run",
            "✔ Allowed bash for this session",
            "It ran.",
        ],
    );
    assert!(!pane.screen().contains("Allow bash?"), "the modal closed");
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn esc_cancels_a_turn_mid_stream() {
    needs_tmux!("tui::turns::esc_cancels_a_turn_mid_stream");
    let server = FakeDeepSeek::start(vec![Reply::Endless {
        chunk_bytes: 6,
        every: std::time::Duration::from_millis(20),
    }]);
    let dir = TestDir::new("tui-cancel");
    let (mut web, pane) = attached(&server, &dir, "", (80, 24), &[]);
    pane.type_text("talk forever");
    pane.keys(&["Enter"]);
    pane.wait_screen("the stream", |screen| {
        screen.contains("xxxxxxxxxxxx") && screen.contains("working")
    });
    pane.keys(&["Escape"]);
    let text = pane.wait_everything("the cancelled turn", |text| {
        text.contains("■ Cancelled") && text.contains("idle")
    });
    assert_in_order(
        &text,
        &["› talk forever", "xxxxxx", "(interrupted)", "■ Cancelled"],
    );
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_resize_reflows_the_history() {
    needs_tmux!("tui::turns::a_resize_reflows_the_history");
    let words: Vec<String> = (1..=40).map(|n| format!("word{n:02}")).collect();
    let answer = words.join(" ");
    let server = FakeDeepSeek::start(vec![Reply::text(&answer)]);
    let dir = TestDir::new("tui-resize");
    let (mut web, pane) = attached(&server, &dir, "", (100, 24), &[]);
    pane.type_text("a long line please");
    pane.keys(&["Enter"]);
    let wide = pane.wait_everything("the answer", |text| {
        text.contains("word40") && text.contains("idle")
    });
    let width = |text: &str| {
        lines(text)
            .iter()
            .filter(|line| line.contains("word"))
            .map(|line| line.chars().count())
            .max()
            .unwrap_or(0)
    };
    assert!(
        width(&wide) > 60,
        "at 100 columns the answer is wide:\n{wide}"
    );
    pane.resize(50, 24);
    // tmux cuts the old lines at the new width at once (`w` / `ord08`); dsh then prints
    // them again, wrapped at spaces: every word once, in order, nothing left at the old width.
    let intact = |text: &str| {
        let found: Vec<&str> = text
            .split_whitespace()
            .filter(|word| word.starts_with("word"))
            .collect();
        found == words && width(text) <= 50 && text.contains("idle")
    };
    let narrow = pane.wait_everything("the reflow", intact);
    assert_in_order(&narrow, &["› a long line please", "word01", "word40"]);
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_socket_client_and_the_terminal_share_a_turn_and_either_answers_its_approval() {
    needs_tmux!(
        "tui::turns::a_socket_client_and_the_terminal_share_a_turn_and_either_answers_its_approval"
    );
    dsh_tests::plugin_lib("hooks_probe");
    let server = FakeDeepSeek::start(bash_then_text("echo shared", "Shared answer."));
    let dir = TestDir::new("tui-shared");
    let web = start_with(&server, &dir, ASKING_POLICY);
    let socket = client_socket(&dir.home(), web.host.pid());
    // A second client (as the page would be) opens the session and answers approvals too.
    let mut other = LineClient::connect(&socket);
    other.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "other", "version": "0"}, "features": ["approvals"]}),
    );
    let created = other.call("session.create", json!({}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    other.call("session.subscribe", json!({"sessionId": session}));
    other.until(50, |frame| frame["type"] == "session/subscribed");
    let path = socket.to_string_lossy().into_owned();
    let pane = Pane::start(
        &dir,
        &dir.join("work"),
        (100, 30),
        &dsh_bin(),
        &["--attach", &path, "--resume", &session],
        &[],
    );
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    pane.type_text("a turn for both");
    pane.keys(&["Enter"]);
    // Both see the ask; the other client answers it, and the terminal's modal goes away.
    let mut seen = other.until(300, |frame| {
        undecided_card(std::slice::from_ref(frame), "approval").is_some()
    });
    pane.wait_screen("the modal", |screen| screen.contains("Allow bash?"));
    let ask = undecided_card(&seen, "approval").unwrap();
    let won = other.call(
        "approval.respond",
        json!({"approvalId": ask["id"], "outcome": "allowed-once"}),
    );
    assert_eq!(won["accepted"], true, "{won}");
    seen.extend(other.until(300, turn_ended));
    let text = pane.wait_everything("the answer", |text| text.contains("Shared answer."));
    assert_in_order(
        &text,
        &[
            "› a turn for both",
            "✓ $ echo shared",
            "│ shared",
            "✔ Allowed bash once",
            "Shared answer.",
        ],
    );
    assert!(!pane.screen().contains("Allow bash?"), "the modal closed");
    // What the terminal printed is what the other client was sent.
    let items: Vec<serde_json::Value> = seen
        .iter()
        .flat_map(|frame| frame["ops"].as_array().cloned().unwrap_or_default())
        .filter_map(|op| op.get("item").cloned())
        .collect();
    let user = items.iter().find(|item| item["kind"] == "user").unwrap();
    assert_eq!(user["text"], "a turn for both");
    let tool = items
        .iter()
        .rev()
        .find(|item| item["kind"] == "tool")
        .unwrap();
    assert_eq!(tool["status"], "ok", "{tool}");
    assert_eq!(tool["view"]["command"], "echo shared", "{tool}");
    let said: String = items
        .iter()
        .rev()
        .find(|item| item["kind"] == "assistant" && item["streaming"] == false)
        .and_then(|item| item["text"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(said, "Shared answer.");
    let mut web = web;
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn questions_are_answered_in_their_modal() {
    needs_tmux!("tui::turns::questions_are_answered_in_their_modal");
    let questions = json!({"questions": [
        {"id": "db", "header": "Storage", "question": "Which database should the service use?",
         "options": [{"label": "SQLite", "description": "one file, no server"}, {"label": "Postgres"}]},
        {"id": "extras", "question": "Which extras are wanted?", "multi_select": true,
         "options": [{"label": "Metrics"}, {"label": "Tracing"}, {"label": "Backups"}]},
        {"id": "name", "question": "What should the service be called?"}
    ]})
    .to_string();
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[("call_q", "ask_user_question", &questions)]),
        Reply::text("SQLite it is"),
    ]);
    let dir = TestDir::new("tui-questions");
    let (mut web, pane) = attached(&server, &dir, "", (80, 30), &[]);
    pane.type_text("plan the service");
    pane.keys(&["Enter"]);
    let first = pane.wait_screen("the first question", |screen| {
        screen.contains("Question 1/3")
    });
    assert_in_order(
        &first,
        &[
            "Storage",
            "Which database should the service use?",
            "SQLite",
            "Postgres",
        ],
    );
    pane.keys(&["Enter"]);
    pane.wait_screen("the second question", |screen| {
        screen.contains("Question 2/3")
    });
    pane.keys(&["Space", "Down", "Down", "Space"]);
    pane.wait_screen("two picked", |screen| {
        screen.contains("[x] Metrics") && screen.contains("[x] Backups")
    });
    pane.keys(&["Enter"]);
    pane.wait_screen("the third question", |screen| {
        screen.contains("Question 3/3")
    });
    pane.type_text("ledger");
    pane.keys(&["Enter"]);
    pane.wait_everything("the answer", |text| text.contains("SQLite it is"));
    assert_eq!(
        server.last_tool_texts()[0],
        "The person answered:\n\n[db] Which database should the service use?\nAnswer: SQLite\n\n[extras] Which extras are wanted?\nAnswer: Metrics, Backups\n\n[name] What should the service be called?\nAnswer: ledger"
    );
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn code_blocks_are_highlighted_and_no_color_turns_colours_off() {
    needs_tmux!("tui::turns::code_blocks_are_highlighted_and_no_color_turns_colours_off");
    let answer = "Like this:\n\n```rust\nfn main() {\n    let answer = 42;\n}\n```\n\nDone.";
    let server = FakeDeepSeek::start(vec![Reply::text(answer), Reply::text(answer)]);
    let dir = TestDir::new("tui-highlight");
    let (mut web, pane) = attached(&server, &dir, "", (80, 24), &[]);
    pane.type_text("show me code");
    pane.keys(&["Enter"]);
    pane.wait_everything("the answer", |text| text.contains("Done."));
    let text = pane.everything();
    assert_in_order(
        &text,
        &[
            "Like this:",
            "```rust",
            "  fn main() {",
            "let answer = 42;",
            "Done.",
        ],
    );
    // `fn` in the keywords' colour (magenta, palette 5), `42` in the numbers' (yellow, 3).
    let styled = pane.everything_styled();
    let line = styled.lines().find(|line| line.contains("main")).unwrap();
    assert!(
        line.contains("\u{1b}[35mfn") || line.contains("\u{1b}[38;5;5mfn"),
        "{line:?}"
    );
    let line = styled.lines().find(|line| line.contains("42")).unwrap();
    assert!(
        line.contains("\u{1b}[33m42") || line.contains("\u{1b}[38;5;3m42"),
        "{line:?}"
    );
    drop(pane);
    // With NO_COLOR the same answer has no colour at all; `--attach` alone finds the host's
    // socket in the home.
    let home = dir.home().to_string_lossy().into_owned();
    let pane = Pane::start(
        &dir,
        &dir.join("work"),
        (80, 24),
        &dsh_bin(),
        &["--attach"],
        &[("NO_COLOR", "1"), ("DSH_HOME", &home)],
    );
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    pane.type_text("show me code again");
    pane.keys(&["Enter"]);
    pane.wait_everything("the answer", |text| text.contains("Done."));
    let styled = pane.everything_styled();
    // Bold, dim and the resets to the default colours (39, 49) remain; no colour is set.
    let colours = (0..8).flat_map(|n| [format!("\u{1b}[3{n}m"), format!("\u{1b}[9{n}m")]);
    for colour in colours.chain(["\u{1b}[38;".to_owned()]) {
        assert!(
            !styled.contains(&colour),
            "{colour:?} with NO_COLOR: {styled:?}"
        );
    }
    assert_eq!(web.host.stop(), Some(0));
}
