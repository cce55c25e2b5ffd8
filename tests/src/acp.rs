//! Driving `dsh-host --profile acp` as an ACP client does: the real host with stdin and stdout
//! piped, frames sent and awaited by id, and the agent's permission questions answered from a
//! script (option kinds, first in first out; `cancelled` once it is empty), its `fs/*` requests
//! from the editor's buffers or the disk; an editor-mode
//! agent against the fake DeepSeek server; where the Node ACP clients are. The transcript's
//! normalization as the reference's snapshot suite does it is in `normalize`, the logs a run
//! stored in `stored`.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{WAIT, host_bin};

mod editor_side;
mod normalize;
mod stored;

pub use editor_side::{Buffers, Terminals};
pub use normalize::{Volatile, normalize_stdout, scrub_line};
pub use stored::{harvest, stored_children, stored_events, wait_stored};

type Shared<T> = Arc<(Mutex<T>, Condvar)>;

/// A running ACP agent and the client side of its connection.
pub struct AcpClient {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    stdout: Shared<Vec<String>>,
    stderr: Shared<Vec<String>>,
    next_id: i64,
    /// Answers to `session/request_permission`, by option kind (`ignore`: none is sent).
    pub answers: Arc<Mutex<VecDeque<String>>>,
    /// The editor's open buffers by path, as `fs/*` reads and writes them.
    pub buffers: Buffers,
    /// The terminals `terminal/*` created, by id.
    pub terminals: Terminals,
    exit: Option<Option<i32>>,
}

fn lines_of(stream: impl std::io::Read + Send + 'static) -> Shared<Vec<String>> {
    let lines: Shared<Vec<String>> = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            sink.0.lock().unwrap().push(line);
            sink.1.notify_all();
        }
    });
    lines
}

fn write_line(stdin: &Mutex<Option<ChildStdin>>, line: &str) {
    if let Some(pipe) = stdin.lock().unwrap().as_mut() {
        let _ = writeln!(pipe, "{line}");
        let _ = pipe.flush();
    }
}

impl AcpClient {
    /// Starts `dsh-host ARGS` in working directory `cwd` with home `home`; `envs` are added to
    /// a clean environment (no key, endpoint, log filter or preset of the developer's shell).
    pub fn start(home: &Path, cwd: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut command = Command::new(host_bin());
        for name in UNINHERITED {
            command.env_remove(name);
        }
        command
            .args(args)
            .envs(envs.iter().copied())
            .env("DSH_HOME", home)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start dsh-host");
        let stdin = Arc::new(Mutex::new(child.stdin.take()));
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        let answers: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let side = editor_side::EditorSide::default();
        let (buffers, terminals) = (side.buffers.clone(), side.terminals.clone());
        answer_client(stdout.clone(), stdin.clone(), answers.clone(), side);
        Self {
            child,
            stdin,
            stdout,
            stderr,
            next_id: 0,
            answers,
            buffers,
            terminals,
            exit: None,
        }
    }

    /// Sends one raw line.
    pub fn send_raw(&self, line: &str) {
        write_line(&self.stdin, line);
    }

    /// Sends request `method` and answers its id.
    pub fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&frame.to_string());
        id
    }

    pub fn notify(&self, method: &str, params: Value) {
        let frame = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&frame.to_string());
    }

    /// The answer to request `id` (`result` or `error` member whole), waiting at most `timeout`.
    pub fn response(&self, id: i64, timeout: Duration) -> Value {
        self.wait_frame(&format!("the answer to request {id}"), timeout, |frame| {
            frame["id"] == id && frame.get("method").is_none()
        })
    }

    /// Sends a request and waits for its answer.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id, WAIT)
    }

    /// The first frame that `matches`, waiting at most `timeout`.
    pub fn wait_frame(
        &self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        let (store, ready) = &*self.stdout;
        let mut lines = store.lock().unwrap();
        loop {
            if let Some(frame) = lines
                .iter()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .find(|frame| matches(frame))
            {
                return frame;
            }
            let now = Instant::now();
            assert!(
                now < deadline,
                "timed out after {timeout:?} waiting for {what}; stdout:\n{}\nstderr:\n{}",
                lines.join("\n"),
                self.stderr().join("\n")
            );
            lines = ready.wait_timeout(lines, deadline - now).unwrap().0;
        }
    }

    /// Every `session/update` of `session` so far, as its `update` member.
    pub fn updates(&self, session: &str) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|frame| {
                frame["method"] == "session/update" && frame["params"]["sessionId"] == session
            })
            .map(|frame| frame["params"]["update"].clone())
            .collect()
    }

    /// Every stdout line read as JSON (a line that is not JSON is left out: see
    /// [`normalize_stdout`] for the check that there is none).
    pub fn frames(&self) -> Vec<Value> {
        self.stdout()
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    pub fn stdout(&self) -> Vec<String> {
        self.stdout.0.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> Vec<String> {
        self.stderr.0.lock().unwrap().clone()
    }

    /// Closes stdin: the end of the connection.
    pub fn close(&self) {
        self.stdin.lock().unwrap().take();
    }

    /// Waits for the process to end (at most `timeout`, then it is killed and the test fails).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        if let Some(code) = self.exit {
            return code;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(50));
                self.exit = Some(status.code());
                return status.code();
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "dsh-host did not exit within {timeout:?}; stdout:\n{}\nstderr:\n{}",
                    self.stdout().join("\n"),
                    self.stderr().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }
}

impl Drop for AcpClient {
    fn drop(&mut self) {
        if self.exit.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Answers each `session/request_permission` as it arrives: the next scripted kind mapped to
/// the offered option of that kind; `cancelled` when the script is empty or offers no such
/// kind. Answers each `fs/*` and `terminal/*` request as an editor does
/// ([`editor_side::EditorSide`]).
fn answer_client(
    stdout: Shared<Vec<String>>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    answers: Arc<Mutex<VecDeque<String>>>,
    side: editor_side::EditorSide,
) {
    std::thread::spawn(move || {
        let mut seen = 0;
        loop {
            let fresh: Vec<String> = {
                let (store, ready) = &*stdout;
                let mut lines = store.lock().unwrap();
                while lines.len() == seen {
                    let (next, timeout) = ready
                        .wait_timeout(lines, Duration::from_millis(200))
                        .unwrap();
                    lines = next;
                    if timeout.timed_out() && stdin.lock().unwrap().is_none() {
                        return;
                    }
                }
                let fresh = lines[seen..].to_vec();
                seen = lines.len();
                fresh
            };
            for line in fresh {
                let Ok(frame) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let reply = stdin.clone();
                let answered = side.answer(&frame, move |answer: Value| {
                    write_line(&reply, &answer.to_string());
                });
                if answered {
                    continue;
                }
                if frame["method"] != "session/request_permission" {
                    continue;
                }
                let kind = answers.lock().unwrap().pop_front();
                // A client that never answers this one.
                if kind.as_deref() == Some("ignore") {
                    continue;
                }
                let option = kind.and_then(|kind| {
                    frame["params"]["options"]
                        .as_array()?
                        .iter()
                        .find(|option| option["kind"] == kind.as_str())
                        .map(|option| option["optionId"].clone())
                });
                let outcome = match option {
                    Some(id) => json!({"outcome": "selected", "optionId": id}),
                    None => json!({"outcome": "cancelled"}),
                };
                let answer =
                    json!({"jsonrpc": "2.0", "id": frame["id"], "result": {"outcome": outcome}});
                write_line(&stdin, &answer.to_string());
            }
        }
    });
}

/// The arguments of an editor-mode agent (the profile's default) whose model is `server`:
/// a patch layer (written into `dir`) with the fake endpoint, a plain store and `rows` (patch
/// entries), and the fake server's route.
pub fn editor_args(
    server: &crate::fake_deepseek::FakeDeepSeek,
    dir: &crate::TestDir,
    rows: &str,
) -> Vec<String> {
    let patch = dir.write(
        "fake.patch.yml",
        &format!(
            "- id: llm-deepseek\n  config:\n    baseURL: {}\n{}{rows}",
            server.url(),
            crate::sessions::PLAIN_STORE
        ),
    );
    [
        "--patch",
        patch.to_str().unwrap(),
        "--profile",
        "acp",
        "--",
        "--model",
        "deepseek-official/deepseek-v4-flash",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// An editor-mode agent in `dir/work` (see [`editor_args`]), with `envs` added and a key for
/// the fake server.
pub fn editor_agent(
    server: &crate::fake_deepseek::FakeDeepSeek,
    dir: &crate::TestDir,
    rows: &str,
    envs: &[(&str, &str)],
) -> AcpClient {
    let args = editor_args(server, dir, rows);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut all = vec![("DEEPSEEK_API_KEY", "sk-test")];
    all.extend_from_slice(envs);
    AcpClient::start(&dir.home(), &work, &args, &all)
}

/// An editor-mode agent whose sessions ask before every command (`ask-every-command`), its
/// client answering the first ask with `answer` (an option kind, or `ignore`: never).
pub fn asking_editor(
    server: &crate::fake_deepseek::FakeDeepSeek,
    dir: &crate::TestDir,
    answer: &str,
) -> AcpClient {
    let agent = editor_agent(
        server,
        dir,
        "",
        &[("DSH_PERMISSION_MODE", "ask-every-command")],
    );
    agent.answers.lock().unwrap().push_back(answer.to_owned());
    agent
}

/// The environment variables of the developer's shell a test's host must not inherit.
pub const UNINHERITED: [&str; 5] = [
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
    "RUST_LOG",
    "DSH_LOG",
    "DSH_PERMISSION_MODE",
];

/// `tests/acp`, where the Node ACP clients are installed, or why they cannot run here.
pub fn node_clients() -> Result<std::path::PathBuf, String> {
    if let Ok(reason) = std::env::var("DSH_ACP_CLIENTS_SKIP") {
        return Err(reason);
    }
    let dir = crate::workspace_root().join("tests/acp");
    let found = Command::new("node").arg("--version").output();
    if !found.is_ok_and(|out| out.status.success()) {
        return Err("node is not installed".to_owned());
    }
    for package in ["@agentclientprotocol/sdk", "acpx"] {
        if !dir.join("node_modules").join(package).is_dir() {
            return Err(format!(
                "tests/acp has no node_modules/{package} (`npm ci` in tests/acp installs it)"
            ));
        }
    }
    Ok(dir)
}

impl AcpClient {
    /// `initialize` then `session/new` in `cwd`: the new session's id and the whole answer.
    pub fn open(&mut self, cwd: &Path) -> (String, Value) {
        self.open_with(cwd, json!({}))
    }

    /// [`open`](Self::open) by a client that says it can do `capabilities`.
    pub fn open_with(&mut self, cwd: &Path, capabilities: Value) -> (String, Value) {
        let init = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        );
        assert!(init.get("result").is_some(), "{init}");
        let answer = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let id = answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new failed: {answer}"))
            .to_owned();
        (id, answer)
    }

    /// Sends a text prompt to `session` and waits for its answer (at most a minute).
    pub fn prompt(&mut self, session: &str, text: &str) -> Value {
        let id = self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
        self.response(id, Duration::from_secs(60))
    }
}

/// The option `id` of a `configOptions` list (`null` when it has none).
pub fn config_option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options
        .as_array()
        .and_then(|options| options.iter().find(|option| option["id"] == id))
        .unwrap_or(&Value::Null)
}

/// The values an option offers, in order.
pub fn offered_values(option: &Value) -> Vec<&str> {
    option["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|value| value["value"].as_str())
        .collect()
}
