//! Starting `dsh-host --profile web` for a test and reading the one line it prints: the
//! sign-in URL, whose address and token the test then talks to.

use crate::{HostProcess, TestDir, WAIT};

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
        let patch = (!layer.is_empty()).then(|| dir.write("web.patch.yml", layer));
        let patch = patch
            .as_ref()
            .map(|path| path.to_string_lossy().into_owned());
        let mut all: Vec<&str> = Vec::new();
        if let Some(patch) = &patch {
            all.extend(["--patch", patch.as_str()]);
        }
        all.extend(["--profile", "web", "--", "--no-open", "--port", "0"]);
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

    /// The sign-in URL.
    pub fn url(&self) -> String {
        format!("http://{}/auth?token={}", self.address, self.token)
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}
