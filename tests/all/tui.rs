//! `dsh`, the terminal UI, in a real terminal (tmux) against the real `dsh-host` and the fake
//! DeepSeek server, attached to a web host's socket or with a host of its own: a turn as a
//! person sees it (`turns`), what a person types (`controls`), the host's and the terminal's
//! life (`lifecycle`), and the browser page beside it on one session (`page`). What the pane
//! shows (`capture-pane`) is compared, line by line; without tmux the tests are skipped, saying
//! so. The helpers here start the two setups.

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::line_client::client_socket;
use dsh_tests::tui::{Pane, dsh_bin};
use dsh_tests::web::{Web, start_with};
use serde_json::json;

mod controls;
mod editor;
mod lifecycle;
mod page;
mod plan;
mod turns;

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

/// `dsh --attach SOCKET --resume SESSION` in a 100x30 pane working in `dir/work`, once its
/// composer shows.
fn attach_pane(dir: &TestDir, socket: &std::path::Path, session: &str) -> Pane {
    let socket = socket.to_string_lossy().into_owned();
    let home = dir.home().to_string_lossy().into_owned();
    let pane = Pane::start(
        dir,
        &dir.join("work"),
        (100, 30),
        &dsh_bin(),
        &["--attach", &socket, "--resume", session],
        &[("DSH_HOME", &home)],
    );
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    pane
}

fn bash_then_text(command: &str, answer: &str) -> Vec<Reply> {
    call_then_text("call_1", command, answer)
}

/// A bash call `id` running `command`, then `answer` (a turn after another needs its own id).
fn call_then_text(id: &str, command: &str, answer: &str) -> Vec<Reply> {
    let arguments = json!({"command": command, "description": "run it"}).to_string();
    vec![
        Reply::tool_calls(&[(id, "bash", &arguments)]),
        Reply::text(answer),
    ]
}

/// The environment of `dsh` with a host of its own (`dsh-host --profile sdk` found beside it)
/// in `dir`'s home, the fake model set by a home patch.
fn own_host_env(server: &FakeDeepSeek, dir: &TestDir) -> Vec<(&'static str, String)> {
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n",
            server.url()
        ),
    );
    std::fs::create_dir_all(dir.join("work")).unwrap();
    vec![
        ("DSH_HOME", dir.home().to_string_lossy().into_owned()),
        (
            "DSH_AGENTS_HOME",
            dir.join("agents").to_string_lossy().into_owned(),
        ),
        ("DEEPSEEK_API_KEY", "sk-test".to_owned()),
    ]
}

/// `dsh` with a host of its own in `dir`, started as the pane's program.
fn own_host(server: &FakeDeepSeek, dir: &TestDir, size: (u16, u16), args: &[&str]) -> Pane {
    let envs = own_host_env(server, dir);
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let pane = Pane::start(dir, &dir.join("work"), size, &dsh_bin(), args, &envs);
    pane.wait_screen("the composer", |screen| screen.contains("Ask anything"));
    pane
}
