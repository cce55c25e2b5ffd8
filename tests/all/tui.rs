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
        "The shell said **hello**. 日本語のテキスト",
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

/// `dsh` with a host of its own (`dsh-host --profile sdk` found beside it) in `dir`'s home,
/// the fake model set by a home patch.
fn own_host(server: &FakeDeepSeek, dir: &TestDir, size: (u16, u16), args: &[&str]) -> Pane {
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let home = dir.home().to_string_lossy().into_owned();
    let agents = dir.join("agents").to_string_lossy().into_owned();
    let pane = Pane::start(
        dir,
        &dir.join("work"),
        size,
        &dsh_bin(),
        args,
        &[
            ("DSH_HOME", &home),
            ("DSH_AGENTS_HOME", &agents),
            ("DEEPSEEK_API_KEY", "sk-test"),
        ],
    );
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    pane
}

#[test]
fn with_a_host_of_its_own_a_turn_runs_and_the_session_resumes_with_its_history() {
    needs_tmux!("tui::with_a_host_of_its_own_a_turn_runs_and_the_session_resumes_with_its_history");
    let mut script = bash_then_text("echo own-host", "Ran it on my own host.");
    script.push(Reply::text("Second turn, same session."));
    let server = FakeDeepSeek::start(script);
    let dir = TestDir::new("tui-own-host");
    let pane = own_host(&server, &dir, (90, 24), &[]);
    pane.type_text("use your own host");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the answer", |text| {
        text.contains("Ran it on my own host.") && text.contains("idle")
    });
    assert_in_order(
        &text,
        &[
            "› use your own host",
            "✓ $ echo own-host",
            "│ own-host",
            "Ran it on my own host.",
        ],
    );
    pane.keys(&["C-c", "C-c"]);
    pane.wait_screen("dsh to exit", |screen| screen.contains("[exited 0]"));
    drop(pane);
    // Continued in a new terminal: the history is printed, then a new turn runs.
    let pane = own_host(&server, &dir, (90, 24), &["--continue"]);
    pane.wait_everything("the history", |text| {
        text.contains("Ran it on my own host.")
    });
    pane.type_text("and again");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the second answer", |text| {
        text.contains("Second turn, same session.")
    });
    assert_in_order(
        &text,
        &[
            "› use your own host",
            "Ran it on my own host.",
            "› and again",
            "Second turn, same session.",
        ],
    );
}

#[test]
fn an_approval_is_answered_from_the_modal() {
    needs_tmux!("tui::an_approval_is_answered_from_the_modal");
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
    needs_tmux!("tui::esc_cancels_a_turn_mid_stream");
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
    needs_tmux!("tui::a_resize_reflows_the_history");
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
        "tui::a_socket_client_and_the_terminal_share_a_turn_and_either_answers_its_approval"
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
fn slash_opens_the_commands_and_compact_runs() {
    needs_tmux!("tui::slash_opens_the_commands_and_compact_runs");
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
    needs_tmux!("tui::at_completes_a_file_of_the_workspace");
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
    needs_tmux!("tui::a_message_sent_while_a_turn_runs_is_queued_and_runs_next");
    use dsh_tests::fake_deepseek::{SseEvent, first_chunk};
    let slow = Reply::Sse(vec![
        first_chunk(),
        SseEvent::content("Slow first "),
        SseEvent::Pause(std::time::Duration::from_millis(1500)),
        SseEvent::content("answer."),
        SseEvent::finish("stop"),
        SseEvent::Done,
    ]);
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
fn the_session_picker_opens_another_session_and_the_status_line_shows_the_meter() {
    needs_tmux!(
        "tui::the_session_picker_opens_another_session_and_the_status_line_shows_the_meter"
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
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_host_that_dies_is_reported_restarted_with_ctrl_r_and_sigterm_restores_the_terminal() {
    needs_tmux!(
        "tui::a_host_that_dies_is_reported_restarted_with_ctrl_r_and_sigterm_restores_the_terminal"
    );
    let server = FakeDeepSeek::start(vec![
        Reply::text("Before the crash."),
        Reply::text("After the restart."),
    ]);
    let dir = TestDir::new("tui-host-dies");
    let pane = own_host(&server, &dir, (90, 24), &[]);
    pane.type_text("first");
    pane.keys(&["Enter"]);
    pane.wait_screen("the first answer", |screen| {
        screen.contains("Before the crash.") && screen.contains("idle")
    });
    let (dsh, hosts) = pane.program_pids();
    assert_eq!(hosts.len(), 1, "one child host: {hosts:?}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &hosts[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    pane.wait_screen("the report", |screen| {
        screen.contains("The host stopped") && screen.contains("Ctrl-R restarts it")
    });
    pane.keys(&["C-r"]);
    // A new host, the same session: its history printed again, then a new turn.
    pane.wait_screen("the session again", |screen| {
        screen.contains("own host") && !screen.contains("The host stopped")
    });
    pane.type_text("second");
    pane.keys(&["Enter"]);
    let text = pane.wait_everything("the second answer", |text| {
        text.contains("After the restart.")
    });
    assert_in_order(
        &text,
        &[
            "› first",
            "Before the crash.",
            "› second",
            "After the restart.",
        ],
    );
    let (_, restarted) = pane.program_pids();
    assert!(
        restarted.len() == 1 && restarted != hosts,
        "a new host: {restarted:?}"
    );
    // SIGTERM: dsh leaves as on a quit (143), the terminal back in a shell's mode.
    std::process::Command::new("kill")
        .args(["-TERM", &dsh.to_string()])
        .status()
        .unwrap();
    let end = pane.wait_screen("dsh to exit", |screen| screen.contains("icanon"));
    assert!(end.contains("[exited 143]"), "{end}");
    assert!(end.contains("icanon echo"), "{end}");
}

#[test]
fn dsh_p_prints_the_answer_and_its_tool_lines() {
    let server = FakeDeepSeek::start(bash_then_text("echo one-shot", "One shot done."));
    let dir = TestDir::new("tui-print");
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let output = std::process::Command::new(dsh_bin())
        .args(["-p", "run it once"])
        .current_dir(dir.join("work"))
        .env("DSH_HOME", dir.home())
        .env("DSH_AGENTS_HOME", dir.join("agents"))
        .env("DEEPSEEK_API_KEY", "sk-test")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "One shot done.\n");
    assert!(stderr.contains("✓ $ echo one-shot"), "{stderr}");
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(sent.contains("run it once"), "{sent}");
}

#[test]
fn code_blocks_are_highlighted_and_no_color_turns_colours_off() {
    needs_tmux!("tui::code_blocks_are_highlighted_and_no_color_turns_colours_off");
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

#[test]
fn questions_are_answered_in_their_modal() {
    needs_tmux!("tui::questions_are_answered_in_their_modal");
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
fn a_paste_arrives_whole_and_tab_steers_into_the_running_turn() {
    needs_tmux!("tui::a_paste_arrives_whole_and_tab_steers_into_the_running_turn");
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
fn bad_command_lines_are_refused_before_the_screen_is_taken() {
    let dir = TestDir::new("tui-bad-args");
    let missing = dir.join("no-such.sock");
    let run = |args: &[&str]| {
        std::process::Command::new(dsh_bin())
            .args(args)
            .env("DSH_HOME", dir.home())
            .output()
            .unwrap()
    };
    let output = run(&["--attach", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no socket at") && stderr.contains("no-such.sock"),
        "{stderr}"
    );
    // `--attach` alone with no host running in the home says where it looked.
    let output = run(&["--attach"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no running host to attach to"), "{stderr}");
    let output = run(&["--resume", "x", "--continue"]);
    assert_eq!(output.status.code(), Some(2), "clap's usage error");
    // Not a terminal: dsh says how to run without one.
    let output = run(&[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("dsh -p"), "{stderr}");
}

#[test]
fn ctrl_t_shows_the_reasoning_and_hides_it_again() {
    needs_tmux!("tui::ctrl_t_shows_the_reasoning_and_hides_it_again");
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
