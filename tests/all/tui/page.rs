//! The browser page and `dsh` on one live session: the terminal attaches to a web host's
//! socket, the page (a real headless Chromium running `tests/web/terminal.mjs`) opens the same
//! session, and two turns typed in the terminal show in both; the page answers the first
//! turn's approval, the terminal's modal the second's, and each sees the other's answer.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use dsh_tests::fake_deepseek::FakeDeepSeek;
use dsh_tests::line_client::client_socket;
use dsh_tests::tui::assert_in_order;
use dsh_tests::web::{ASKING_POLICY, browser, start_with};
use dsh_tests::{TestDir, WAIT, needs_tmux, workspace_root};

use super::{attach_pane, call_then_text};

/// Waits for the line `wanted` among the lines the page's script prints.
fn page_says(lines: &mpsc::Receiver<String>, wanted: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left.max(Duration::from_millis(1))) {
            Ok(line) if line.trim() == wanted => return,
            Ok(_) => {}
            Err(error) => panic!("the page never said `{wanted}`: {error}"),
        }
    }
}

#[test]
fn a_browser_page_and_the_terminal_share_turns_and_either_answers_an_approval() {
    needs_tmux!(
        "tui::page::a_browser_page_and_the_terminal_share_turns_and_either_answers_an_approval"
    );
    let (scripts, chromium) = match browser() {
        Ok(found) => found,
        Err(reason) => {
            dsh_tests::skip(
                "tui::page::a_browser_page_and_the_terminal_share_turns_and_either_answers_an_approval",
                &reason,
            );
            return;
        }
    };
    let mut replies = call_then_text("call_1", "echo one", "First answer.");
    replies.extend(call_then_text("call_2", "echo two", "Second answer."));
    let server = FakeDeepSeek::start(replies);
    let dir = TestDir::new("tui-page");
    let mut web = start_with(&server, &dir, ASKING_POLICY);
    let session = web.new_session();
    let pane = attach_pane(&dir, &client_socket(&dir.home(), web.host.pid()), &session);
    let shots = workspace_root().join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let url = web.sign_in_url();
    let mut page = Command::new("node")
        .arg(scripts.join("scenarios.mjs"))
        .args(["terminal", url.as_str(), shots.to_str().unwrap()])
        .env("DSH_CHROMIUM", &chromium)
        .env("DSH_SHARED_SESSION", &session)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    let (sender, lines) = mpsc::channel();
    let stdout = page.stdout.take().expect("the page's stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    page_says(&lines, "page: ready");
    // Turn 1: typed in the terminal, its ask answered in the page.
    pane.type_text("first from the terminal");
    pane.keys(&["Enter"]);
    pane.wait_screen("the terminal's modal", |screen| {
        screen.contains("Allow bash?")
    });
    page_says(&lines, "page: first answered");
    let first = pane.wait_everything("the first answer", |text| text.contains("First answer."));
    assert_in_order(
        &first,
        &[
            "› first from the terminal",
            "✓ $ echo one",
            "✔ Allowed bash once",
            "First answer.",
        ],
    );
    pane.wait_screen("the modal closed", |screen| !screen.contains("Allow bash?"));
    // Turn 2: its ask answered from the terminal's modal; the page sees it decided.
    pane.type_text("second from the terminal");
    pane.keys(&["Enter"]);
    pane.wait_screen("the second modal", |screen| screen.contains("Allow bash?"));
    pane.keys(&["y"]);
    let both = pane.wait_everything("the second answer", |text| text.contains("Second answer."));
    assert_in_order(
        &both,
        &[
            "› second from the terminal",
            "✓ $ echo two",
            "✔ Allowed bash once",
            "Second answer.",
        ],
    );
    let status = page.wait().expect("the page's script ends");
    reader.join().expect("the page's output is read");
    let mut stderr = String::new();
    if let Some(mut err) = page.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
    }
    let said: Vec<String> = lines.try_iter().collect();
    assert!(
        status.success() && said.iter().any(|line| line == "scenario terminal: ok"),
        "the page's scenario failed: {stderr}\n{said:?}\nhost stderr:\n{}",
        web.host.stderr().join("\n")
    );
    assert_eq!(web.host.stop(), Some(0));
}
