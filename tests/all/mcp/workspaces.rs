//! A project's MCP servers follow the sessions of its directory (issue 22 part 6): each
//! working directory with sessions runs the servers of its own `.mcp.json`, only its sessions
//! are offered their tools, and they stop with its last session; the row's and the user's
//! servers stay global. The servers are `tests/fixtures/mcp/revision-server` (Python, one
//! `add` tool), so these tests need no npm install; the model is the fake DeepSeek server.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against_patched;
use dsh_tests::http::Socket;
use dsh_tests::web::{Web, WebHost, fake_model_layer, turn_ended};
use dsh_tests::{TestDir, WAIT, workspace_root};
use serde_json::{Value, json};

/// A `.mcp.json` (or a user's file) naming one revision-server as `name`.
fn servers_file(name: &str) -> String {
    let script = workspace_root().join("tests/fixtures/mcp/revision-server");
    json!({"mcpServers": {name: {"command": script, "args": ["2025-06-18"]}}}).to_string()
}

/// Whether python3 runs here (the servers are Python scripts).
fn python() -> Result<(), String> {
    let ran = std::process::Command::new("python3")
        .arg("--version")
        .output();
    match ran {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err("no `python3` to run tests/fixtures/mcp/revision-server with".to_owned()),
    }
}

macro_rules! needs_python {
    ($test:literal) => {
        if let Err(reason) = python() {
            dsh_tests::skip($test, &reason);
            return;
        }
    };
}

/// The web profile in `dir/work` against `server`, its `mcp` row reading the user's file
/// `home/mcp.json` (whose servers work in `dir/work`), every project under `dir` trusted.
fn web_host(dir: &TestDir, server: &FakeDeepSeek) -> Web {
    dir.trust_projects();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let layer = format!(
        "{}- id: mcp\n  config:\n    files: [{}]\n    workspace: {}\n",
        fake_model_layer(&server.url(), ""),
        dir.home().join("mcp.json").display(),
        work.display(),
    );
    Web::from(WebHost::start(
        dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ))
}

/// A new session working in `cwd`, and an event socket subscribed to it.
fn session_in(web: &Web, cwd: &Path) -> (String, Socket) {
    let created = web.call("session.create", &json!({"cwd": cwd}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let mut socket = web.events();
    socket.send(&json!({"type": "subscribe", "sessionId": session}));
    socket.until(50, |frame| frame["type"] == "session/subscribed");
    (session, socket)
}

/// Prompts `session` and waits for its turn to end and its agent to be idle again (a moment
/// after the end is logged; a delete before it is refused as busy).
fn turn(web: &Web, socket: &mut Socket, session: &str, text: &str) {
    web.prompt(session, text);
    socket.until(300, turn_ended);
    socket.until(300, |frame| {
        frame["type"] == "host/session-status"
            && frame["sessionId"] == session
            && frame["running"] == false
    });
}

/// The tool names of the first model request with a user message `text`.
fn tools_of_request(server: &FakeDeepSeek, text: &str) -> Vec<String> {
    let request = server
        .requests()
        .into_iter()
        .find(|request| request.user_texts().iter().any(|said| said == text))
        .unwrap_or_else(|| panic!("no request for `{text}`"));
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The one call of `tool`, then a closing text.
fn add_then_text(tool: &str, closing: &str) -> Vec<Reply> {
    vec![
        Reply::tool_calls(&[("c1", tool, r#"{"a": 2, "b": 3}"#)]),
        Reply::text(closing),
    ]
}

/// The pid in the first stderr line saying `mcp `name`: started`.
fn server_pid(web: &Web, name: &str) -> i32 {
    let line = web
        .host
        .wait_stderr(&format!("mcp `{name}`: started `"), WAIT);
    line.split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line}"))
}

/// Whether process `pid` runs (exists and is not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

fn count_stderr(web: &Web, needle: &str) -> usize {
    web.host
        .stderr()
        .iter()
        .filter(|line| line.contains(needle))
        .count()
}

fn project(dir: &TestDir, name: &str, file: &str) -> PathBuf {
    dir.write(&format!("{name}/.mcp.json"), file);
    dir.join(name)
}

/// Two directories with a `.mcp.json` each, a third whose file does not parse, and a user's
/// server: each session is offered its own directory's tools and the user's, never another
/// directory's (a call of one is an unknown tool); the broken file is an error naming it, and
/// its directory's session still runs.
#[test]
fn each_directorys_sessions_see_only_their_own_projects_servers() {
    needs_python!("each_directorys_sessions_see_only_their_own_projects_servers");
    let dir = TestDir::new("mcp-dirs");
    dir.write("home/mcp.json", &servers_file("shared"));
    let alpha = project(&dir, "alpha", &servers_file("alpha"));
    let beta = project(&dir, "beta", &servers_file("beta"));
    let broken = project(&dir, "broken", "{\"mcpServers\": {");
    let mut script = add_then_text("mcp__alpha__add", "alpha done");
    script.push(Reply::tool_calls(&[
        ("c1", "mcp__beta__add", r#"{"a": 2, "b": 3}"#),
        ("c2", "mcp__alpha__add", r#"{"a": 2, "b": 3}"#),
    ]));
    script.push(Reply::text("beta done"));
    script.push(Reply::text("broken done"));
    let server = FakeDeepSeek::start(script);
    let web = web_host(&dir, &server);

    let (a, mut a_events) = session_in(&web, &alpha);
    let (b, mut b_events) = session_in(&web, &beta);
    let (c, mut c_events) = session_in(&web, &broken);
    turn(&web, &mut a_events, &a, "in alpha");
    assert_eq!(server.last_tool_texts(), ["sum 5"]);
    turn(&web, &mut b_events, &b, "in beta");
    let texts = server.last_tool_texts();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert_eq!(texts[0], "sum 5", "{texts:?}");
    assert!(
        texts[1].contains("unknown tool \"mcp__alpha__add\""),
        "another directory's tool is unknown here: {texts:?}"
    );
    turn(&web, &mut c_events, &c, "in broken");

    let listed = |text: &str, tool: &str| tools_of_request(&server, text).iter().any(|t| t == tool);
    assert!(listed("in alpha", "mcp__alpha__add") && listed("in alpha", "mcp__shared__add"));
    assert!(!listed("in alpha", "mcp__beta__add"));
    assert!(listed("in beta", "mcp__beta__add") && listed("in beta", "mcp__shared__add"));
    assert!(!listed("in beta", "mcp__alpha__add"));
    assert!(listed("in broken", "mcp__shared__add"));
    assert!(!listed("in broken", "mcp__alpha__add") && !listed("in broken", "mcp__beta__add"));
    let error = web.host.wait_stderr("not an mcpServers file", WAIT);
    assert!(
        error.contains(&broken.join(".mcp.json").display().to_string()),
        "the error names the file: {error}"
    );
    // One process per directory, however many requests; the user's server once for all.
    assert_eq!(count_stderr(&web, "mcp `alpha`: started"), 1);
    assert_eq!(count_stderr(&web, "mcp `shared`: started"), 1);
    server.assert_no_violations();
    let mut host = web.host;
    assert_eq!(host.stop(), Some(0));
}

/// A directory's server runs while any session works there: deleting one of two sessions
/// leaves it, deleting the last stops it (its process ends) while another directory's runs
/// on, and a new session there starts it again.
#[test]
fn a_directorys_servers_stop_with_its_last_session() {
    needs_python!("a_directorys_servers_stop_with_its_last_session");
    let dir = TestDir::new("mcp-dir-life");
    let alpha = project(&dir, "alpha", &servers_file("alpha"));
    let beta = project(&dir, "beta", &servers_file("beta"));
    // A session is stored (and can be deleted) once it ran a turn.
    let mut script = vec![Reply::text("first"), Reply::text("second")];
    script.extend(add_then_text("mcp__beta__add", "beta done"));
    script.extend(add_then_text("mcp__alpha__add", "alpha again"));
    let server = FakeDeepSeek::start(script);
    let web = web_host(&dir, &server);

    let (first, mut first_events) = session_in(&web, &alpha);
    let (second, mut second_events) = session_in(&web, &alpha);
    let (b, mut b_events) = session_in(&web, &beta);
    turn(&web, &mut first_events, &first, "first");
    turn(&web, &mut second_events, &second, "second");
    let alpha_pid = server_pid(&web, "alpha");
    let beta_pid = server_pid(&web, "beta");
    web.host.wait_stderr("mcp `alpha`: connected", WAIT);
    assert!(alive(alpha_pid) && alive(beta_pid));
    let stopped = format!("no session works in {} any more", alpha.display());

    web.call("session.delete", &json!({"sessionId": first}));
    // The stop would be logged before the delete answers (the agent's disposal runs it).
    assert_eq!(count_stderr(&web, &stopped), 0);
    assert!(alive(alpha_pid), "stopped with a session still in alpha");

    web.call("session.delete", &json!({"sessionId": second}));
    let line = web.host.wait_stderr(&stopped, WAIT);
    assert!(line.contains("`alpha`"), "{line}");
    let deadline = Instant::now() + WAIT;
    while alive(alpha_pid) {
        assert!(
            Instant::now() < deadline,
            "alpha's server {alpha_pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        alive(beta_pid),
        "beta's server stopped with alpha's sessions"
    );
    turn(&web, &mut b_events, &b, "beta still works");
    assert_eq!(server.last_tool_texts(), ["sum 5"]);

    let (again, mut again_events) = session_in(&web, &alpha);
    turn(&web, &mut again_events, &again, "alpha again");
    assert_eq!(server.last_tool_texts(), ["sum 5"]);
    assert_eq!(count_stderr(&web, "mcp `alpha`: started"), 2);
    assert_eq!(count_stderr(&web, "mcp `beta`: started"), 1);
    server.assert_no_violations();
    let mut host = web.host;
    assert_eq!(host.stop(), Some(0));
}

/// The headless runner's `--cwd DIR` runs DIR's `.mcp.json` servers, with the row naming no
/// workspace (the host's own working directory is elsewhere), and the first model request
/// already lists their tools.
#[test]
fn a_headless_run_uses_the_project_file_of_its_cwd() {
    needs_python!("a_headless_run_uses_the_project_file_of_its_cwd");
    let dir = TestDir::new("mcp-headless-cwd");
    dir.trust_projects();
    dir.write("work/.mcp.json", &servers_file("alpha"));
    let server = FakeDeepSeek::start(add_then_text("mcp__alpha__add", "done"));
    let row = "- id: mcp\n  config:\n    files: []\n";
    let out = against_patched(&server, &dir, row, &["add them"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let tools: Value = server.requests()[0].body["tools"].clone();
    assert!(tools.to_string().contains("mcp__alpha__add"), "{tools}");
    assert_eq!(server.last_tool_texts(), ["sum 5"]);
    server.assert_no_violations();
}
