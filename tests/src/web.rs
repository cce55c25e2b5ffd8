//! The web profile for a test: starting `dsh-host --profile web` and reading the one line it
//! prints (the sign-in URL, whose address and token the test then talks to); a signed-in
//! client of its API and event socket ([`Web`]), started against the fake DeepSeek server; and
//! reading the chat items the socket's update frames carry (a turn's end, a card still waiting
//! for its answer); where the browser scenarios' driver and Chromium are.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::fake_deepseek::FakeDeepSeek;
use crate::http::{Socket, envelope, send, websocket};
use crate::{HostProcess, TestDir, WAIT, workspace_root};

/// A running web profile.
pub struct WebHost {
    pub host: HostProcess,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// The launch's token (also the bearer token of scripts).
    pub token: String,
}

/// A patch layer that points the DeepSeek adapter at `server_url` and inserts `rows` (YAML
/// list items, indented for `- insert:`).
pub fn fake_model_layer(server_url: &str, rows: &str) -> String {
    let mut layer = format!("- id: llm-deepseek\n  config:\n    baseURL: {server_url}\n");
    if !rows.is_empty() {
        layer.push_str(&format!("- insert:\n{rows}"));
    }
    layer
}

impl WebHost {
    /// `dsh-host [--patch LAYER] --profile web -- --no-open --port 0 ARGS` in `dir`'s home,
    /// with `envs`; `layer` empty: no patch.
    pub fn start(dir: &TestDir, layer: &str, args: &[&str], envs: &[(&str, &str)]) -> Self {
        Self::start_on(dir, layer, "0", args, envs)
    }

    /// [`WebHost::start`] on `port` (`0`: any free one), as a restart on the same port needs.
    pub fn start_on(
        dir: &TestDir,
        layer: &str,
        port: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Self {
        let patch = (!layer.is_empty()).then(|| dir.write("web.patch.yml", layer));
        let patch = patch
            .as_ref()
            .map(|path| path.to_string_lossy().into_owned());
        let mut all: Vec<&str> = Vec::new();
        if let Some(patch) = &patch {
            all.extend(["--patch", patch.as_str()]);
        }
        all.extend(["--profile", "web", "--", "--no-open", "--port", port]);
        all.extend(args);
        let host = HostProcess::start_with_env(&dir.home(), &all, envs);
        let line = host.wait_stdout("dsh web: open http://", WAIT);
        let url = line.trim_start_matches("dsh web: open http://").trim();
        let (address, query) = url.split_once("/auth?").expect("a sign-in URL");
        let token = query.trim_start_matches("token=").to_owned();
        assert_eq!(token.len(), 64, "a 256-bit token in hex: {line}");
        Self {
            host,
            address: address.to_owned(),
            token,
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> &str {
        self.address.rsplit_once(':').map_or("", |(_, port)| port)
    }

    /// The sign-in URL.
    pub fn url(&self) -> String {
        format!("http://{}/auth?token={}", self.address, self.token)
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

/// A web profile's API as a script uses it: every call and the event socket carry the launch's
/// bearer token.
pub struct Web {
    pub host: HostProcess,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// `Bearer <token>`.
    pub bearer: String,
}

impl From<WebHost> for Web {
    fn from(web: WebHost) -> Self {
        Self {
            bearer: web.bearer(),
            host: web.host,
            address: web.address,
        }
    }
}

/// The web profile against `server`, the `work` folder made in `dir`.
pub fn start(server: &FakeDeepSeek, dir: &TestDir) -> Web {
    start_with(server, dir, "")
}

/// The web profile against `server`, with `rows` (YAML list items) inserted.
pub fn start_with(server: &FakeDeepSeek, dir: &TestDir, rows: &str) -> Web {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    Web::from(WebHost::start(
        dir,
        &fake_model_layer(&server.url(), rows),
        &[],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ))
}

/// The web profile against `server` working in `dir/work`, with the rest of `dir` protected:
/// a folder beside the workspace is outside the writable roots, though the temp dir holding it
/// is writable.
pub fn start_in_workspace(server: &FakeDeepSeek, dir: &TestDir) -> Web {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n- id: sandbox\n  config:\n    protected: [{}]\n",
        server.url(),
        dir.join("").display()
    );
    let work = dir.join("work");
    Web::from(WebHost::start(
        dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", "sk-test")],
    ))
}

impl Web {
    /// The launch's sign-in URL (as [`WebHost::url`]), for a browser the test drives.
    pub fn sign_in_url(&self) -> String {
        let token = self.bearer.trim_start_matches("Bearer ");
        format!("http://{}/auth?token={token}", self.address)
    }

    /// Calls `method` with `payload`; it must succeed, and its value is answered.
    pub fn call(&self, method: &str, payload: &Value) -> Value {
        let response = self.post(method, payload);
        assert_eq!(response.status, 200, "{response:?}");
        let body = response.json();
        assert_eq!(body["result"]["ok"], true, "{method}: {body}");
        body["result"]["value"].clone()
    }

    /// The whole answer of a call that may fail: `{ok, value | error}`.
    pub fn try_call(&self, method: &str, payload: &Value) -> Value {
        self.post(method, payload).json()["result"].clone()
    }

    fn post(&self, method: &str, payload: &Value) -> crate::http::Response {
        send(
            &self.address,
            "POST",
            &format!("/api/{method}"),
            &[
                ("Authorization", &self.bearer),
                ("Content-Type", "application/json"),
            ],
            &envelope(method, payload),
        )
    }

    /// Prompts `session` with `text`: the call's value.
    pub fn prompt(&self, session: &str, text: &str) -> Value {
        self.call(
            "session.prompt",
            &json!({"sessionId": session, "text": text}),
        )
    }

    /// A new session of the default route.
    pub fn new_session(&self) -> String {
        self.call("session.create", &json!({}))["sessionId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// A new session, and an event socket subscribed to it.
    pub fn followed_session(&self) -> (String, Socket) {
        let session = self.new_session();
        let mut socket = self.events();
        socket.send(&json!({"type": "subscribe", "sessionId": session}));
        socket.until(50, |frame| frame["type"] == "session/subscribed");
        (session, socket)
    }

    /// The event socket, from this origin.
    pub fn events(&self) -> Socket {
        let origin = format!("http://{}", self.address);
        websocket(
            &self.address,
            "/api/events",
            &[("Authorization", &self.bearer), ("Origin", &origin)],
        )
        .expect("the event socket")
    }
}

/// A policy row (indented for `- insert:`) that asks before every call: `hooks-probe` answering
/// `ask` on tools/pre-execute.
pub const ASKING_POLICY: &str = "    - id: policy\n      name: hooks-probe\n      config:\n        preExecute:\n          kind: ask\n          reason: the policy asks\n";

/// Whether `frame` is the update that ends a turn.
pub fn turn_ended(frame: &Value) -> bool {
    frame["type"] == "session/update"
        && frame["ops"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|op| op["item"]["kind"] == "turn-end")
}

/// The first card of `kind` (`approval`, `question`) among `frames` that has no outcome yet.
pub fn undecided_card(frames: &[Value], kind: &str) -> Option<Value> {
    frames
        .iter()
        .flat_map(|frame| frame["ops"].as_array().cloned().unwrap_or_default())
        .map(|op| op["item"].clone())
        .find(|item| item["kind"] == kind && item.get("outcome").is_none())
}

/// The driver and the browser, or why they are not there.
pub fn browser() -> Result<(PathBuf, PathBuf), String> {
    if let Ok(reason) = std::env::var("DSH_BROWSER_SKIP") {
        return Err(reason);
    }
    let scripts = workspace_root().join("tests/web");
    if !scripts.join("node_modules/playwright-core").is_dir() {
        return Err("tests/web has no node_modules (cargo xtask test installs them)".to_owned());
    }
    let chromium = std::env::var_os("DSH_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.is_file() {
        return Err(format!(
            "no browser at {} (cargo xtask test installs Debian's chromium)",
            chromium.display()
        ));
    }
    Ok((scripts, chromium))
}
