//! What the test client does for the agent as an editor would: its open buffers for `fs/*`,
//! and terminals for `terminal/*`, each a real `bash` process whose output (both streams) the
//! client keeps and whose end it reports.

use std::collections::HashMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{Value, json};

/// An editor's open buffers by absolute path: what `fs/read_text_file` answers before the
/// disk, and where `fs/write_text_file` writes (the disk is left as it was, as an editor's
/// unsaved buffer leaves it).
pub type Buffers = Arc<Mutex<HashMap<String, String>>>;

/// The terminals the agent created, by id, kept after their release (a test reads them).
pub type Terminals = Arc<Mutex<HashMap<String, Arc<Terminal>>>>;

/// One terminal: the command it runs, its output so far and how it ended.
pub struct Terminal {
    pub command: Vec<String>,
    pub cwd: String,
    pub output: Mutex<Vec<u8>>,
    child: Mutex<Child>,
    exit: (Mutex<Option<Value>>, Condvar),
    pub released: Mutex<bool>,
}

impl Terminal {
    /// `{exitCode, signal}` once it ended.
    fn wait(&self) -> Value {
        let (exit, ended) = &self.exit;
        let mut exit = exit.lock().unwrap();
        while exit.is_none() {
            exit = ended.wait(exit).unwrap();
        }
        exit.clone().unwrap_or_default()
    }

    fn output_text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }
}

#[derive(Default, Clone)]
pub(super) struct EditorSide {
    pub(super) buffers: Buffers,
    pub(super) terminals: Terminals,
}

type Outcome = Result<Value, Value>;

impl EditorSide {
    /// Answers `frame` through `reply` when it is an `fs/*` or `terminal/*` request (a wait
    /// for a terminal's end is answered from a thread of its own when it comes).
    pub(super) fn answer(&self, frame: &Value, reply: impl FnOnce(Value) + Send + 'static) -> bool {
        let Some(method) = frame["method"].as_str() else {
            return false;
        };
        let id = frame["id"].clone();
        let params = &frame["params"];
        let send = move |outcome: Outcome| {
            reply(match outcome {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
            });
        };
        if method.starts_with("fs/") {
            // An editor that hangs on this file: no answer at all.
            if !params["path"]
                .as_str()
                .is_some_and(|path| path.contains("unanswered"))
            {
                send(self.file(method, params));
            }
            return true;
        }
        if !method.starts_with("terminal/") {
            return false;
        }
        let terminal = params["terminalId"]
            .as_str()
            .and_then(|id| self.terminals.lock().unwrap().get(id).cloned());
        match (method, terminal) {
            ("terminal/create", _) => send(self.create(params)),
            ("terminal/wait_for_exit", Some(terminal)) => {
                std::thread::spawn(move || send(Ok(terminal.wait())));
            }
            ("terminal/output", Some(terminal)) => {
                let exit = terminal.exit.0.lock().unwrap().clone();
                send(Ok(json!({
                    "output": terminal.output_text(),
                    "truncated": false,
                    "exitStatus": exit,
                })));
            }
            ("terminal/kill", Some(terminal)) => {
                let _ = terminal.child.lock().unwrap().kill();
                send(Ok(json!({})));
            }
            ("terminal/release", Some(terminal)) => {
                let _ = terminal.child.lock().unwrap().kill();
                *terminal.released.lock().unwrap() = true;
                send(Ok(json!({})));
            }
            _ => send(Err(json!({"code": -32002, "message": "no such terminal"}))),
        }
        true
    }

    /// A buffer's text or the file's, a write kept in the buffers; a path with `forbidden` in
    /// it is refused as an editor refuses a file outside its project, and a file that is
    /// nowhere is ACP's "resource not found" (one with `unanswered` in it gets no answer).
    fn file(&self, method: &str, params: &Value) -> Outcome {
        let path = params["path"].as_str().unwrap_or_default();
        if path.contains("forbidden") {
            return Err(json!({"code": -32603, "message": "not in this project"}));
        }
        if method == "fs/write_text_file" {
            let content = params["content"].as_str().unwrap_or_default();
            self.buffers
                .lock()
                .unwrap()
                .insert(path.to_owned(), content.to_owned());
            return Ok(Value::Null);
        }
        let held = self.buffers.lock().unwrap().get(path).cloned();
        match held.or_else(|| std::fs::read_to_string(path).ok()) {
            Some(content) => Ok(json!({"content": content})),
            None => Err(json!({"code": -32002, "message": format!("no file {path}")})),
        }
    }

    /// Starts the command with its output (both streams) kept, and a thread that records its
    /// end.
    fn create(&self, params: &Value) -> Outcome {
        let program = params["command"].as_str().unwrap_or_default().to_owned();
        let args: Vec<String> = params["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|arg| arg.as_str().map(str::to_owned))
            .collect();
        let cwd = params["cwd"].as_str().unwrap_or(".").to_owned();
        let mut command = Command::new(&program);
        command
            .args(&args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in params["env"].as_array().into_iter().flatten() {
            if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
                command.env(name, value);
            }
        }
        let mut child = command
            .spawn()
            .map_err(|error| json!({"code": -32603, "message": error.to_string()}))?;
        let streams = [
            child
                .stdout
                .take()
                .map(|out| Box::new(out) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|err| Box::new(err) as Box<dyn Read + Send>),
        ];
        let id = format!("term-{}", self.terminals.lock().unwrap().len() + 1);
        let terminal = Arc::new(Terminal {
            command: std::iter::once(program).chain(args).collect(),
            cwd,
            output: Mutex::default(),
            child: Mutex::new(child),
            exit: (Mutex::new(None), Condvar::new()),
            released: Mutex::new(false),
        });
        let readers: Vec<_> = streams
            .into_iter()
            .flatten()
            .map(|mut stream| {
                let terminal = terminal.clone();
                std::thread::spawn(move || {
                    let mut chunk = [0u8; 4096];
                    while let Ok(read @ 1..) = stream.read(&mut chunk) {
                        terminal
                            .output
                            .lock()
                            .unwrap()
                            .extend_from_slice(&chunk[..read]);
                    }
                })
            })
            .collect();
        let ended = terminal.clone();
        std::thread::spawn(move || {
            for reader in readers {
                let _ = reader.join();
            }
            // Polled, so a kill (which takes the lock) is never kept waiting.
            let status = loop {
                if let Ok(Some(status)) = ended.child.lock().unwrap().try_wait() {
                    break status;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            };
            let signal = std::os::unix::process::ExitStatusExt::signal(&status);
            *ended.exit.0.lock().unwrap() = Some(json!({
                "exitCode": status.code(),
                "signal": signal.map(|number| if number == 9 { "SIGKILL".to_owned() } else { format!("signal {number}") }),
            }));
            ended.exit.1.notify_all();
        });
        self.terminals.lock().unwrap().insert(id.clone(), terminal);
        Ok(json!({"terminalId": id}))
    }
}
