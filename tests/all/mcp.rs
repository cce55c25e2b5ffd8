//! The `mcp` plugin through the real `dsh-host` against the reference MCP servers from npm
//! (`@modelcontextprotocol/server-everything` over stdio and Streamable HTTP,
//! `@modelcontextprotocol/server-filesystem` over stdio), installed into `tests/mcp` by
//! `cargo xtask test`; where it could not, the reason is in `DSH_MCP_SKIP` and these tests are
//! skipped with it. The model is the fake DeepSeek server; every server talks only to this
//! machine (stdio, or loopback HTTP). `workspaces` holds the tests of project servers per
//! working directory.

mod workspaces;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use dsh_tests::fake_deepseek::{FakeDeepSeek, Reply};
use dsh_tests::headless::against_patched;
use dsh_tests::web::{Web, WebHost, fake_model_layer, turn_ended};
use dsh_tests::{TestDir, WAIT, workspace_root};
use serde_json::{Value, json};

/// The reference servers' entry scripts, or why they are not there.
struct Servers {
    everything: PathBuf,
    filesystem: PathBuf,
    loopback: PathBuf,
}

fn servers() -> Result<Servers, String> {
    if let Ok(reason) = std::env::var("DSH_MCP_SKIP") {
        return Err(reason);
    }
    let dir = workspace_root().join("tests/mcp");
    let modules = dir.join("node_modules/@modelcontextprotocol");
    let found = Servers {
        everything: modules.join("server-everything/dist/index.js"),
        filesystem: modules.join("server-filesystem/dist/index.js"),
        loopback: dir.join("loopback.cjs"),
    };
    if !found.everything.is_file() || !found.filesystem.is_file() {
        return Err(
            "tests/mcp has no node_modules (cargo xtask test installs the reference servers)"
                .to_owned(),
        );
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|out| out.status.success()) {
        return Err("no `node` to run the reference servers with".to_owned());
    }
    Ok(found)
}

macro_rules! needs_servers {
    ($test:literal) => {
        match servers() {
            Ok(found) => found,
            Err(reason) => {
                dsh_tests::skip($test, &reason);
                return;
            }
        }
    };
}

fn stdio_entry(script: &Path, args: &[&str]) -> Value {
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|arg| (*arg).to_owned()));
    json!({"command": "node", "args": all})
}

/// The `mcp` row's config: `files` and the workspace, with `extra` (YAML lines) added.
fn mcp_row(dir: &TestDir, extra: &str) -> String {
    format!(
        "- id: mcp\n  config:\n    files: [{}]\n    workspace: {}\n{extra}",
        dir.home().join("mcp.json").display(),
        dir.join("work").display()
    )
}

#[test]
fn stdio_servers_tools_are_listed_and_called_through_the_pipeline() {
    let found = needs_servers!("stdio_servers_tools_are_listed_and_called_through_the_pipeline");
    let dir = TestDir::new("mcp-stdio");
    dir.trust_projects();
    let work = dir.join("work");
    dir.write("work/note.txt", "the note says PELICAN\n");
    // The user's file names one server, the workspace's `.mcp.json` the other.
    let user = json!({"mcpServers": {"everything": stdio_entry(&found.everything, &["stdio"])}});
    dir.write("home/mcp.json", &user.to_string());
    let project =
        json!({"mcpServers": {"files": stdio_entry(&found.filesystem, &[work.to_str().unwrap()])}});
    dir.write("work/.mcp.json", &project.to_string());
    // Rules name MCP tools like any other.
    dir.write(
        "home/settings.yaml",
        "permissions:\n  deny: [\"mcp__files__write_*\"]\n",
    );
    let note = work.join("note.txt").display().to_string();
    let calls = [
        (
            "c1",
            "mcp__everything__echo",
            json!({"message": "hello mcp"}),
        ),
        ("c2", "mcp__everything__get-sum", json!({"a": 2, "b": 3})),
        ("c3", "mcp__everything__get-tiny-image", json!({})),
        ("c4", "mcp__files__read_text_file", json!({"path": note})),
        (
            "c5",
            "mcp__files__read_text_file",
            json!({"path": "/etc/hostname"}),
        ),
        ("c6", "mcp__everything__get-sum", json!({"a": "two"})),
        (
            "c7",
            "mcp__files__write_file",
            json!({"path": work.join("new.txt"), "content": "x"}),
        ),
    ];
    let calls: Vec<(&str, &str, String)> = calls
        .iter()
        .map(|(id, name, args)| (*id, *name, args.to_string()))
        .collect();
    let borrowed: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, name, args)| (*id, *name, args.as_str()))
        .collect();
    let server = FakeDeepSeek::start(vec![Reply::tool_calls(&borrowed), Reply::text("done")]);
    let out = against_patched(&server, &dir, &mcp_row(&dir, ""), &["use the servers"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{out:?}");
    // Listed: the servers' tools with their own schemas.
    let tools = requests[0].body["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp__everything__echo")
        .unwrap_or_else(|| panic!("no echo tool in {tools:?}"));
    assert_eq!(
        echo["function"]["parameters"]["properties"]["message"]["type"], "string",
        "{echo}"
    );
    assert!(
        tools
            .iter()
            .any(|tool| tool["function"]["name"] == "mcp__files__read_text_file"),
        "{tools:?}"
    );
    // Called: text, a structured sum, an image described, a file read, and two errors.
    let texts = server.last_tool_texts();
    assert_eq!(texts.len(), 7, "{texts:?}");
    assert!(texts[0].contains("Echo: hello mcp"), "{texts:?}");
    assert!(texts[1].contains('5'), "{texts:?}");
    assert!(texts[2].contains("[image: image/png"), "{texts:?}");
    assert!(texts[3].contains("the note says PELICAN"), "{texts:?}");
    assert!(
        texts[4].contains("Error") && texts[4].contains("denied"),
        "a path outside the server's root is an error result: {texts:?}"
    );
    assert!(
        texts[5].contains("Error") && !texts[5].contains("Echo"),
        "invalid arguments are an error result: {texts:?}"
    );
    assert!(
        texts[6].contains("Error") && !work.join("new.txt").exists(),
        "a deny rule stops an MCP tool: {texts:?}"
    );
    server.assert_no_violations();
}

/// A reference server the test starts itself: server-everything's Streamable HTTP mode (or
/// its legacy HTTP+SSE one), bound to loopback on a port the system chose. Killed (by its pid)
/// when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(found: &Servers) -> Self {
        Self::start_on(found, 0)
    }

    /// On `port` (0: one the system chooses).
    fn start_on(found: &Servers, port: u16) -> Self {
        Self::launch(found, "streamableHttp", port)
    }

    /// The legacy HTTP+SSE mode: a GET stream at `/sse` that names its POST endpoint.
    fn start_legacy_sse(found: &Servers) -> Self {
        Self::launch(found, "sse", 0)
    }

    fn launch(found: &Servers, mode: &str, port: u16) -> Self {
        let mut child = Command::new("node")
            .arg("--require")
            .arg(&found.loopback)
            .arg(&found.everything)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start server-everything");
        let stderr = child.stderr.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        // Reads until the port line, then drains what the server logs, until it exits.
        std::thread::spawn(move || {
            let mut sender = Some(sender);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = line.strip_prefix("dsh-test-port=")
                    && let Some(sender) = sender.take()
                {
                    let _ = sender.send(port.trim().to_owned());
                }
            }
        });
        let port = receiver
            .recv_timeout(WAIT)
            .expect("server-everything did not say its port");
        let path = if mode == "sse" { "sse" } else { "mcp" };
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/{path}"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One headless turn with `entry` as the user's only MCP server `name`: the model calls
/// `calls` (`(tool, arguments)`, each `mcp__<name>__<tool>`), then answers. Checks the run
/// ended 0, the tools were offered and the server connected; answers the run's stderr, the
/// tools' texts and the fake model, for the caller's own checks.
fn one_remote_turn(
    dir: &TestDir,
    name: &str,
    entry: Value,
    calls: &[(&str, &str)],
) -> (String, Vec<String>, FakeDeepSeek) {
    let config = json!({"mcpServers": {name: entry}});
    dir.write("home/mcp.json", &config.to_string());
    let named: Vec<(String, String, &str)> = calls
        .iter()
        .enumerate()
        .map(|(at, (tool, arguments))| {
            (
                format!("c{}", at + 1),
                format!("mcp__{name}__{tool}"),
                *arguments,
            )
        })
        .collect();
    let calls: Vec<(&str, &str, &str)> = named
        .iter()
        .map(|(id, tool, arguments)| (id.as_str(), tool.as_str(), *arguments))
        .collect();
    let server = FakeDeepSeek::start(vec![Reply::tool_calls(&calls), Reply::text("done")]);
    let out = against_patched(
        &server,
        dir,
        &mcp_row(dir, ""),
        &[&format!("use the {name} server")],
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(tools.contains(&format!("mcp__{name}__echo")), "{tools}");
    assert!(
        out.stderr.contains(&format!("mcp `{name}`: connected")),
        "{}",
        out.stderr
    );
    let texts = server.last_tool_texts();
    (out.stderr, texts, server)
}

#[test]
fn a_streamable_http_server_is_listed_and_called() {
    let found = needs_servers!("a_streamable_http_server_is_listed_and_called");
    let http = HttpServer::start(&found);
    let dir = TestDir::new("mcp-http");
    let (stderr, texts, server) = one_remote_turn(
        &dir,
        "remote",
        json!({"type": "http", "url": http.url}),
        &[
            ("echo", r#"{"message": "over http"}"#),
            ("get-structured-content", r#"{"location": "New York"}"#),
        ],
    );
    assert!(texts[0].contains("Echo: over http"), "{texts:?}");
    assert!(texts[1].contains("temperature"), "{texts:?}");
    assert!(stderr.contains("(MCP 2025-11-25)"), "{stderr}");
    server.assert_no_violations();
}

/// A server that speaks only the legacy HTTP+SSE transport (MCP 2024-11-05: a GET event
/// stream whose first event names the endpoint messages are POSTed to, every answer coming
/// back on the stream) is listed and called like any other.
#[test]
fn a_legacy_sse_server_is_listed_and_called() {
    let found = needs_servers!("a_legacy_sse_server_is_listed_and_called");
    let sse = HttpServer::start_legacy_sse(&found);
    let dir = TestDir::new("mcp-sse");
    let (_, texts, server) = one_remote_turn(
        &dir,
        "legacy",
        json!({"type": "sse", "url": sse.url}),
        &[
            ("echo", r#"{"message": "over sse"}"#),
            ("get-sum", r#"{"a": 20, "b": 22}"#),
        ],
    );
    assert!(texts[0].contains("Echo: over sse"), "{texts:?}");
    assert!(texts[1].contains("42"), "{texts:?}");
    server.assert_no_violations();
}

/// Waits until `count` stderr lines of `host` contain `needle`.
fn wait_stderr_count(host: &dsh_tests::HostProcess, needle: &str, count: usize) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let lines = host.stderr();
        if lines.iter().filter(|line| line.contains(needle)).count() >= count {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {count} stderr lines with `{needle}`:\n{}",
            lines.join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The tool message of the model's last request that answered the latest call.
fn last_tool_text(server: &FakeDeepSeek) -> String {
    server.last_tool_texts().pop().unwrap_or_default()
}

fn count_stderr(host: &dsh_tests::HostProcess, needle: &str) -> usize {
    host.stderr()
        .iter()
        .filter(|line| line.contains(needle))
        .count()
}

/// One model call of `tool` with `arguments`, then a closing text.
fn call_then_text(tool: &str, arguments: Value, closing: &str) -> Vec<Reply> {
    vec![
        Reply::tool_calls(&[("c1", tool, &arguments.to_string())]),
        Reply::text(closing),
    ]
}

/// Prompts a session of `web` and waits for its turn to end.
fn turn(web: &Web, socket: &mut dsh_tests::http::Socket, session: &str, text: &str) {
    web.call(
        "session.prompt",
        &json!({"sessionId": session, "text": text}),
    );
    socket.until(300, turn_ended);
}

/// Kills `everything`'s process group: its tools answer why, and it is started again.
fn crash_and_come_back(
    web: &Web,
    socket: &mut dsh_tests::http::Socket,
    session: &str,
    server: &FakeDeepSeek,
) {
    let line = web
        .host
        .wait_stderr("mcp `everything`: started `node` (pid ", WAIT);
    let pid: i32 = line
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line}"));
    // SAFETY: SIGKILL to the process group the host started for this server.
    #[allow(unsafe_code, reason = "kill(2) on the server's process group")]
    let killed = unsafe { libc::kill(-pid, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill the server's group {pid}");
    web.host.wait_stderr("restarting in 5000 ms", WAIT);
    turn(web, socket, session, "echo again");
    let down = last_tool_text(server);
    assert!(
        down.contains("MCP server `everything` is not running") && down.contains("restarted"),
        "{down:?}"
    );
    wait_stderr_count(&web.host, "mcp `everything`: connected", 2);
    turn(web, socket, session, "echo once more");
    assert!(
        last_tool_text(server).contains("Echo: after restart"),
        "{:?}",
        server.last_tool_texts()
    );
}

/// The web profile in `dir/work`, its model `server`, the `mcp` row's config with `extra`.
fn live_web(dir: &TestDir, server: &FakeDeepSeek, extra: &str) -> Web {
    let layer = format!(
        "{}{}",
        fake_model_layer(&server.url(), ""),
        mcp_row(dir, extra)
    );
    let work = dir.join("work");
    Web::from(WebHost::start(
        dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ))
}

#[test]
fn a_running_host_restarts_a_dead_server_follows_changes_and_reloads_its_file() {
    let found = needs_servers!(
        "a_running_host_restarts_a_dead_server_follows_changes_and_reloads_its_file"
    );
    let dir = TestDir::new("mcp-live");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let everything = stdio_entry(&found.everything, &["stdio"]);
    let first = json!({"mcpServers": {
        "everything": everything,
        "broken": {"args": ["no command"]},
    }});
    let file = dir.write("home/mcp.json", &first.to_string());
    let mut script = call_then_text("mcp__everything__echo", json!({"message": "first"}), "one");
    script.extend(call_then_text(
        "mcp__everything__gzip-file-as-resource",
        json!({"name": "note.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}),
        "two",
    ));
    script.extend(call_then_text(
        "mcp__everything__echo",
        json!({"message": "while down"}),
        "three",
    ));
    script.extend(call_then_text(
        "mcp__everything__echo",
        json!({"message": "after restart"}),
        "four",
    ));
    script.extend(call_then_text(
        "mcp__second__echo",
        json!({"message": "from second"}),
        "five",
    ));
    script.extend(call_then_text(
        "mcp__second__echo",
        json!({"message": "from the edited second"}),
        "six",
    ));
    let server = FakeDeepSeek::start(script);
    let web = live_web(&dir, &server, "    restartDelayMs: 5000\n");
    // The bad entry is named with its file, and the good one runs.
    let bad = web.host.wait_stderr("server `broken`", WAIT);
    assert!(bad.contains(&file.display().to_string()), "{bad}");
    web.host.wait_stderr("mcp `everything`: connected", WAIT);
    // server-everything adds tools once it knows the client's capabilities and says so.
    let changed = web
        .host
        .wait_stderr("mcp `everything`: tools changed", WAIT);
    assert!(
        changed.contains("mcp__everything__get-roots-list"),
        "{changed}"
    );
    let (session, mut socket) = web.followed_session();
    turn(&web, &mut socket, &session, "echo");
    assert!(
        last_tool_text(&server).contains("Echo: first"),
        "{:?}",
        server.last_tool_texts()
    );
    // A resource the server makes during a call: its list change is followed too.
    turn(&web, &mut socket, &session, "gzip");
    let resources = web
        .host
        .wait_stderr("mcp `everything`: resources changed", WAIT);
    assert!(resources.contains("note.gz"), "{resources}");

    crash_and_come_back(&web, &mut socket, &session, &server);
    // The file changes: the new server starts, the unchanged one is left alone.
    // `second` takes the whole kill grace to go (unconfined, so that no wrapper dies at once
    // for it: it ignores SIGTERM and lingers after its input ends), so its replacement below
    // is up while it is still stopping.
    let lingering = json!({"command": "sh", "sandbox": "danger-full-access", "args": ["-c", format!(
        "trap '' TERM; node {} stdio; sleep 5",
        found.everything.display()
    )]});
    let second = json!({"mcpServers": {
        "everything": stdio_entry(&found.everything, &["stdio"]),
        "second": lingering,
    }});
    std::fs::write(&file, second.to_string()).unwrap();
    web.host.wait_stderr("mcp `second`: connected", WAIT);
    assert_eq!(count_stderr(&web.host, "mcp `everything`: started"), 2);
    turn(&web, &mut socket, &session, "the second server");
    assert!(
        last_tool_text(&server).contains("Echo: from second"),
        "{:?}",
        server.last_tool_texts()
    );
    // An edited entry restarts its server, whose tools (the same names the old one held until
    // it was stopped) are registered again.
    let mut edited = lingering.clone();
    edited["env"] = json!({"EDITED": "1"});
    let third = json!({"mcpServers": {
        "everything": stdio_entry(&found.everything, &["stdio"]),
        "second": edited,
    }});
    std::fs::write(&file, third.to_string()).unwrap();
    wait_stderr_count(&web.host, "mcp `second`: connected", 2);
    turn(&web, &mut socket, &session, "the edited second server");
    assert!(
        last_tool_text(&server).contains("Echo: from the edited second"),
        "{:?}",
        server.last_tool_texts()
    );
    assert_eq!(count_stderr(&web.host, "not registered"), 0);
    server.assert_no_violations();
    let mut host = web.host;
    assert_eq!(host.stop(), Some(0));
}

/// Runs a project's server that prints what it got and dies, its entry carrying loader
/// variables, with `sandbox` (YAML config lines of the sandbox row, empty: the default); answers
/// the host's stderr and the loader's debug files found in the dsh home. The witness is the
/// loader's own debug output, asked of whichever process starts with the entry's variables,
/// into the dsh home, which no confined process can write (bubblewrap binds it read-only; under
/// Landlock it is outside the writable roots): only an unconfined wrapper could write there.
fn loader_variables_probe(dir: &TestDir, sandbox: &str) -> (String, String, Vec<String>) {
    std::fs::create_dir_all(dir.home()).unwrap();
    let witness = dir.home().join("loader-debug");
    let preload = dir.join("work/missing-preload.so").display().to_string();
    // Killed by itself, so no exit-time loader output follows its line on stderr; alive a
    // moment first, so the host's `initialize` is written and its failure is the exit, which
    // names the stderr's last line (a server gone before the write fails it with a broken pipe,
    // which names nothing). The line is said again after `sleep`, whose own loader complains.
    let script = "line=\"inner preload=[$LD_PRELOAD] probe=[$MCP_PROBE]\"; echo \"$line\" >&2; \
                  sleep 0.3; echo \"$line\" >&2; kill -9 $$";
    let project = json!({"mcpServers": {"probe": {
        "command": "sh",
        "args": ["-c", script],
        "env": {
            "LD_PRELOAD": preload,
            "LD_DEBUG": "files",
            "LD_DEBUG_OUTPUT": witness.display().to_string(),
            "MCP_PROBE": "seen",
        },
    }}});
    dir.write("work/.mcp.json", &project.to_string());
    let server = FakeDeepSeek::start(vec![Reply::text("done")]);
    let mut rows = mcp_row(
        dir,
        "    startupTimeoutMs: 5000\n    restartDelayMs: 60000\n",
    );
    if !sandbox.is_empty() {
        rows.push_str(&format!("- id: sandbox\n  config:\n{sandbox}"));
    }
    let out = against_patched(&server, dir, &rows, &["hello"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let written: Vec<String> = std::fs::read_dir(dir.home())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("loader-debug"))
        .collect();
    let inner = format!("inner preload=[{preload}] probe=[seen]");
    (out.stderr, inner, written)
}

/// A stdio entry's `env` is set inside the sandbox, not on the wrapper that confines the
/// server: a project's `LD_PRELOAD` reaches the confined process but never runs in bubblewrap.
#[test]
fn an_entrys_loader_variables_reach_the_server_and_not_the_sandbox_wrapper() {
    dsh_tests::needs_bubblewrap!(
        "an_entrys_loader_variables_reach_the_server_and_not_the_sandbox_wrapper"
    );
    let dir = TestDir::new("mcp-env");
    dir.trust_projects();
    let (stderr, inner, written) = loader_variables_probe(&dir, "");
    assert!(stderr.contains(&inner), "{stderr}");
    assert!(
        written.is_empty(),
        "bwrap started with the entry's loader variables: {written:?}"
    );
}

/// The same under Landlock: `sandbox-exec` sets the entry's variables only once it is
/// restricted.
#[test]
fn under_landlock_an_entrys_loader_variables_are_set_after_the_restriction() {
    let dir = TestDir::new("mcp-env-landlock");
    dir.trust_projects();
    let (stderr, inner, written) = loader_variables_probe(
        &dir,
        "    bwrap: /nonexistent/bwrap\n    writableRoots: []\n    tempWritable: false\n",
    );
    if stderr.contains("no sandbox backend") {
        dsh_tests::skip(
            "under_landlock_an_entrys_loader_variables_are_set_after_the_restriction",
            "this kernel has no usable Landlock",
        );
        return;
    }
    assert!(stderr.contains(&inner), "{stderr}");
    assert!(
        written.is_empty(),
        "sandbox-exec started with the entry's loader variables: {written:?}"
    );
}

/// A project's `.mcp.json` cannot add an HTTP server (the host would reach it outside the
/// sandbox): the entry is refused with a warning naming the file and the server, nothing
/// contacts its URL, and the file's other servers still start. The row's `projectHttp` lifts it.
#[test]
fn a_projects_http_server_is_refused_unless_the_row_allows_it() {
    let dir = TestDir::new("mcp-project-http");
    dir.trust_projects();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let project = json!({"mcpServers": {
        "exfil": {"type": "http", "url": url},
        "local": {"command": "sh", "args": ["-c", "exit 3"]},
    }});
    let file = dir.write("work/.mcp.json", &project.to_string());
    let timing = "    startupTimeoutMs: 2000\n    restartDelayMs: 60000\n";
    let server = FakeDeepSeek::start(vec![Reply::text("done")]);
    let out = against_patched(&server, &dir, &mcp_row(&dir, timing), &["hello"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let refusal = format!("{}: server `exfil` refused", file.display());
    assert!(out.stderr.contains(&refusal), "{}", out.stderr);
    assert!(
        out.stderr.contains("mcp `local`: started `sh`"),
        "{}",
        out.stderr
    );
    assert!(
        listener.accept().is_err(),
        "the project's URL was contacted"
    );

    let allowed = format!("{timing}    projectHttp: true\n");
    let server = FakeDeepSeek::start(vec![Reply::text("done")]);
    let out = against_patched(&server, &dir, &mcp_row(&dir, &allowed), &["hello"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stderr.contains("refused"), "{}", out.stderr);
    assert!(
        listener.accept().is_ok(),
        "with projectHttp the project's server is reached: {}",
        out.stderr
    );
}

/// A server that speaks an older revision (`tests/fixtures/mcp/revision-server`): the client
/// asks for 2025-11-25, takes any revision it speaks in the answer and calls the server's
/// tools; a revision it does not speak is refused, naming the server and what it speaks.
#[test]
fn servers_of_older_revisions_are_spoken_to_and_unknown_ones_refused() {
    let script = workspace_root().join("tests/fixtures/mcp/revision-server");
    for revision in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let dir = TestDir::new(&format!("mcp-revision-{revision}"));
        let log = dir.join("server.log");
        let entry = json!({"command": script, "args": [revision, log]});
        dir.write(
            "home/mcp.json",
            &json!({"mcpServers": {"old": entry}}).to_string(),
        );
        let server = FakeDeepSeek::start(vec![
            Reply::tool_calls(&[("c1", "mcp__old__add", r#"{"a": 2, "b": 3}"#)]),
            Reply::text("done"),
        ]);
        let out = against_patched(&server, &dir, &mcp_row(&dir, ""), &["add them"], &[]);
        assert_eq!(out.code, Some(0), "{out:?}");
        assert!(
            out.stderr.contains(&format!("(MCP {revision})")),
            "{revision}: {}",
            out.stderr
        );
        assert_eq!(server.last_tool_texts(), ["sum 5"], "{revision}");
        let first: Value = serde_json::from_str(
            std::fs::read_to_string(&log)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(first["method"], "initialize");
        assert_eq!(first["params"]["protocolVersion"], "2025-11-25");
    }
    let dir = TestDir::new("mcp-revision-unknown");
    let entry = json!({"command": script, "args": ["2023-01-01"]});
    dir.write(
        "home/mcp.json",
        &json!({"mcpServers": {"ancient": entry}}).to_string(),
    );
    let server = FakeDeepSeek::start(vec![Reply::text("no tools")]);
    let out = against_patched(&server, &dir, &mcp_row(&dir, ""), &["anything"], &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains("mcp `ancient`")
            && out.stderr.contains("2023-01-01")
            && out.stderr.contains("2024-11-05"),
        "{}",
        out.stderr
    );
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(!tools.contains("mcp__ancient__"), "{tools}");
}

/// A Streamable HTTP server that goes away is noticed (its event stream ends and cannot be
/// reopened), its tools answer why while the client tries again with backoff, and once a
/// server listens at the URL again the client reconnects and its tools work.
#[test]
fn an_http_server_that_goes_away_is_reconnected_once_it_is_back() {
    let found = needs_servers!("an_http_server_that_goes_away_is_reconnected_once_it_is_back");
    let http = HttpServer::start(&found);
    let url = http.url.clone();
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let dir = TestDir::new("mcp-http-reconnect");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let config = json!({"mcpServers": {"remote": {"type": "http", "url": url}}});
    dir.write("home/mcp.json", &config.to_string());
    let mut script = call_then_text("mcp__remote__echo", json!({"message": "first"}), "one");
    script.extend(call_then_text(
        "mcp__remote__echo",
        json!({"message": "while away"}),
        "two",
    ));
    script.extend(call_then_text(
        "mcp__remote__echo",
        json!({"message": "back again"}),
        "three",
    ));
    let server = FakeDeepSeek::start(script);
    let web = live_web(
        &dir,
        &server,
        "    restartDelayMs: 500\n    maxRestartDelayMs: 1000\n",
    );
    web.host.wait_stderr("mcp `remote`: connected", WAIT);
    let (session, mut socket) = web.followed_session();
    turn(&web, &mut socket, &session, "echo");
    assert!(
        last_tool_text(&server).contains("Echo: first"),
        "{:?}",
        server.last_tool_texts()
    );
    drop(http);
    web.host.wait_stderr("mcp `remote` (", WAIT);
    turn(&web, &mut socket, &session, "echo while away");
    let away = last_tool_text(&server);
    assert!(
        away.contains("MCP server `remote` is not running"),
        "{away:?}"
    );
    let _back = HttpServer::start_on(&found, port);
    wait_stderr_count(&web.host, "mcp `remote`: connected", 2);
    turn(&web, &mut socket, &session, "echo once it is back");
    assert!(
        last_tool_text(&server).contains("Echo: back again"),
        "{:?}",
        server.last_tool_texts()
    );
    server.assert_no_violations();
    let mut host = web.host;
    assert_eq!(host.stop(), Some(0));
}
