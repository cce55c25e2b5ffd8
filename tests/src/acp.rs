//! Driving `dsh-host --profile acp` as an ACP client does: the real host with stdin and stdout
//! piped, frames sent and awaited by id, the agent's permission questions answered from a
//! script (option kinds, first in first out; `cancelled` once it is empty), and the transcript
//! normalized as the reference's snapshot suite normalizes it (`normalize.ts`): every line JSON,
//! ids renumbered 1, 2, ... by first sight (one map for both directions), the run's working
//! directory `{{cwd}}`, its session ids and any UUID `{{sessionId}}`.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{WAIT, host_bin};

type Shared<T> = Arc<(Mutex<T>, Condvar)>;

/// A running ACP agent and the client side of its connection.
pub struct AcpClient {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    stdout: Shared<Vec<String>>,
    stderr: Shared<Vec<String>>,
    next_id: i64,
    /// Answers to `session/request_permission`, by option kind.
    pub answers: Arc<Mutex<VecDeque<String>>>,
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
        answer_permissions(stdout.clone(), stdin.clone(), answers.clone());
        Self {
            child,
            stdin,
            stdout,
            stderr,
            next_id: 0,
            answers,
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
/// kind.
fn answer_permissions(
    stdout: Shared<Vec<String>>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    answers: Arc<Mutex<VecDeque<String>>>,
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
                if frame["method"] != "session/request_permission" {
                    continue;
                }
                let kind = answers.lock().unwrap().pop_front();
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

/// What a transcript's volatile values are: the working directory (every spelling of it) and
/// the session ids the run issued.
pub struct Volatile {
    pub cwd: Vec<String>,
    pub session_ids: Vec<String>,
}

impl Volatile {
    /// `cwd` and its real path.
    pub fn of(cwd: &Path, session_ids: Vec<String>) -> Self {
        let mut spellings = vec![cwd.display().to_string()];
        if let Ok(real) = cwd.canonicalize() {
            spellings.push(real.display().to_string());
        }
        spellings.sort_by_key(|spelling| std::cmp::Reverse(spelling.len()));
        spellings.dedup();
        Self {
            cwd: spellings,
            session_ids,
        }
    }
}

/// The reference's normalization of a stdout transcript; `Err` names a line that is not JSON.
pub fn normalize_stdout(lines: &[String], volatile: &Volatile) -> Result<Vec<Value>, String> {
    let mut ids: HashMap<String, i64> = HashMap::new();
    let mut frames = Vec::new();
    for line in lines.iter().filter(|line| !line.trim().is_empty()) {
        let mut frame: Value = serde_json::from_str(line)
            .map_err(|error| format!("stdout line is not JSON ({error}): {line}"))?;
        if let Some(id) = frame.get("id").filter(|id| !id.is_null()) {
            let next = i64::try_from(ids.len()).unwrap() + 1;
            let number = *ids.entry(id.to_string()).or_insert(next);
            frame["id"] = json!(number);
        }
        scrub(&mut frame, volatile);
        frames.push(frame);
    }
    Ok(frames)
}

fn scrub(value: &mut Value, volatile: &Volatile) {
    match value {
        Value::String(text) => *text = scrub_text(text, volatile),
        Value::Array(items) => items.iter_mut().for_each(|item| scrub(item, volatile)),
        Value::Object(members) => members.values_mut().for_each(|item| scrub(item, volatile)),
        _ => {}
    }
}

/// Whether `c` may stand beside a path in text.
fn boundary(c: Option<char>) -> bool {
    c.is_none_or(|c| c.is_whitespace() || "<>'\"`()[]{},;:!?=/\\.".contains(c))
}

/// One text with the run's volatile values as the transcript's placeholders, and a spilled
/// result's notice as `normalize.ts` reads it (`{{spillLocator:<name>}}`).
pub fn scrub_line(text: &str, volatile: &Volatile) -> String {
    spilled(&scrub_text(text, volatile))
}

/// A spilled result names a file whose path differs between runs, and its preview's length
/// follows that path's: its first and last 16 characters are kept, the byte count and the
/// path are placeholders.
fn spilled(text: &str) -> String {
    const STORED: &str = " Full formatted result stored at: ";
    const HINT: &str = ". Use read with offset/limit";
    let Some(at) = text.find("\n\n(Omitted ") else {
        return text.to_owned();
    };
    let (preview, notice) = text.split_at(at);
    let (Some(stored), Some(hint)) = (notice.find(STORED), notice.find(HINT)) else {
        return text.to_owned();
    };
    let path = &notice[stored + STORED.len()..hint];
    if path.starts_with("{{spillLocator:") {
        return text.to_owned();
    }
    let file = path.rsplit('/').next().unwrap_or_default();
    let name = file.split_once('-').map_or(file, |(_, name)| name);
    let chars: Vec<char> = preview.chars().collect();
    let head: String = chars.iter().take(16).collect();
    let tail: String = chars[chars.len().saturating_sub(16)..].iter().collect();
    format!(
        "{head}…{tail}\n\n(Omitted {{{{n}}}} bytes.{STORED}{{{{spillLocator:{name}}}}}{}",
        &notice[hint..]
    )
}

fn scrub_text(text: &str, volatile: &Volatile) -> String {
    let mut out = text.to_owned();
    for spelling in &volatile.cwd {
        let mut result = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(spelling.as_str()) {
            let before = match at {
                0 => result.chars().last(),
                _ => rest[..at].chars().last(),
            };
            let after = rest[at + spelling.len()..].chars().next();
            result.push_str(&rest[..at]);
            if boundary(before) && boundary(after) {
                result.push_str("{{cwd}}");
            } else {
                result.push_str(spelling);
            }
            rest = &rest[at + spelling.len()..];
        }
        result.push_str(rest);
        out = result;
    }
    for id in &volatile.session_ids {
        out = out.replace(id.as_str(), "{{sessionId}}");
    }
    replace_uuids(&out)
}

/// Any UUID (8-4-4-4-12 hex digits) as `{{sessionId}}`.
fn replace_uuids(text: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    let is_uuid_at = |start: usize| {
        let mut at = start;
        for (index, len) in SHAPE.iter().enumerate() {
            if index > 0 {
                if bytes.get(at) != Some(&b'-') {
                    return false;
                }
                at += 1;
            }
            for _ in 0..*len {
                if !bytes.get(at).is_some_and(u8::is_ascii_hexdigit) {
                    return false;
                }
                at += 1;
            }
        }
        true
    };
    let mut out = String::new();
    let mut at = 0;
    while at < bytes.len() {
        if text.is_char_boundary(at) && is_uuid_at(at) {
            out.push_str("{{sessionId}}");
            at += 36;
            continue;
        }
        let c = text[at..].chars().next().unwrap();
        out.push(c);
        at += c.len_utf8();
    }
    out
}

/// The logs stored under `home` whose events hold a `turn/end` (every turn closed) or all of
/// them: the top-level session's first, then its children by `createdAt`, then id.
pub fn harvest(home: &Path) -> Vec<(Value, Vec<Value>)> {
    let mut logs = crate::sessions::stored_logs(home);
    logs.sort_by(|(a, _), (b, _)| {
        let top = |header: &Value| header.get("parentSession").is_some();
        (top(a), a["createdAt"].as_i64(), a["id"].as_str()).cmp(&(
            top(b),
            b["createdAt"].as_i64(),
            b["id"].as_str(),
        ))
    });
    logs
}

/// The stored log of session `id` under `home`, if it was written yet.
pub fn stored_events(home: &Path, id: &str) -> Vec<Value> {
    crate::sessions::session_logs(&home.join("sessions"))
        .into_iter()
        .find(|path| {
            path.parent()
                .and_then(Path::file_name)
                .is_some_and(|name| name == id)
        })
        .map(|path| read_lenient(&path))
        .unwrap_or_default()
}

/// A log read while it may be mid-write: complete lines only, the header left out.
fn read_lenient(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits (at most `timeout`) until `check` holds for the stored events of session `id`.
pub fn wait_stored(
    home: &Path,
    id: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(&[Value]) -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        if check(&stored_events(home, id)) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out after {timeout:?} waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The stored child logs under `home` (those with a `parentSession`), by `createdAt`: their
/// ids.
pub fn stored_children(home: &Path) -> Vec<String> {
    harvest(home)
        .into_iter()
        .filter(|(header, _)| header.get("parentSession").is_some())
        .filter_map(|(header, _)| header["id"].as_str().map(str::to_owned))
        .collect()
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
        let init = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_renumber_and_volatile_text_is_scrubbed() {
        let volatile = Volatile {
            cwd: vec!["/tmp/w".to_owned()],
            session_ids: vec!["s-1".to_owned()],
        };
        let lines = vec![
            r#"{"id":0,"result":{"sessionId":"s-1","cwd":"/tmp/w/a","other":"/tmp/wx"}}"#.to_owned(),
            r#"{"id":0,"method":"session/request_permission","params":{"u":"a7c3e1f2-1111-4222-8333-123456789abc"}}"#.to_owned(),
            r#"{"id":1,"result":{}}"#.to_owned(),
        ];
        let frames = normalize_stdout(&lines, &volatile).unwrap();
        assert_eq!(frames[0]["id"], 1);
        assert_eq!(frames[1]["id"], 1);
        assert_eq!(frames[2]["id"], 2);
        assert_eq!(frames[0]["result"]["sessionId"], "{{sessionId}}");
        assert_eq!(frames[0]["result"]["cwd"], "{{cwd}}/a");
        assert_eq!(frames[0]["result"]["other"], "/tmp/wx");
        assert_eq!(frames[1]["params"]["u"], "{{sessionId}}");
        assert!(normalize_stdout(&["log line".to_owned()], &volatile).is_err());
    }

    #[test]
    fn a_spill_notice_keeps_its_shape_not_its_path() {
        let volatile = Volatile {
            cwd: Vec::new(),
            session_ids: Vec::new(),
        };
        let ours = "0123456789abcdefXXXX0123456789abcdef\n\n(Omitted 14 bytes. Full formatted result stored at: /h/spill/session-0/0f6738b2d871-bash.txt. Use read with offset/limit.)";
        let theirs = "0123456789abcdefXX0123456789abcdef\n\n(Omitted 9 bytes. Full formatted result stored at: /tmp/snap/session-5/2ce9d7a31a38-bash.txt. Use read with offset/limit.)";
        assert_eq!(scrub_line(ours, &volatile), scrub_line(theirs, &volatile));
        assert!(scrub_line(ours, &volatile).contains("{{spillLocator:bash.txt}}"));
    }
}
