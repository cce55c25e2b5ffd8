//! Which servers to run: the row's own `servers`, then each `mcpServers` file the row lists
//! (the user's, `$DSH_HOME/mcp.json` in the bundles), then the workspace's `.mcp.json`; a
//! later source replaces a server of the same name. Entries have the shape Claude Code and the
//! other agents read (`{"command", "args", "env", "cwd"}` or `{"url", "headers"}`, an optional
//! `type`); keys other clients add are ignored. A bad entry is an error naming its file and its
//! server, and only that server is left out. A workspace file is the project's, not the
//! user's: it cannot choose a sandbox mode for its servers, and its HTTP servers are refused
//! unless the row allows them (`projectHttp`): the host reaches an HTTP server unconfined, so
//! a project's entry would otherwise be a way out of a no-network sandbox for whatever can
//! write the workspace (a prompt-injected agent).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dsh_doc_limits::Limits;
use dsh_plugin_api::serde_json::Value;
use dsh_plugin_api::{Deserialize, JsonSchema};

/// One server as a row or a file describes it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ServerEntry {
    /// `stdio`, `http` or `streamable-http` (inferred from `command` or `url` when absent).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The program of a stdio server.
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Variables set for a stdio server (after the sandbox removed the secret-looking ones).
    pub env: BTreeMap<String, String>,
    /// The working directory of a stdio server (default: the workspace).
    pub cwd: Option<String>,
    /// The endpoint of a Streamable HTTP server.
    pub url: Option<String>,
    /// Headers sent with every request to an HTTP server.
    pub headers: BTreeMap<String, String>,
    /// The sandbox mode a stdio server runs in (default: the sandbox's default mode). Honoured
    /// from the row and the user's files only.
    pub sandbox: Option<String>,
    /// Leaves the server out.
    pub disabled: bool,
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
        /// Empty: the sandbox's default mode.
        sandbox: String,
    },
    /// Streamable HTTP, or with `sse` the legacy HTTP+SSE transport (MCP 2024-11-05).
    Http {
        url: String,
        headers: Vec<(String, String)>,
        sse: bool,
    },
}

/// A server ready to start: its name, where it came from and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerSpec {
    pub(crate) name: String,
    /// The file that defined it, or `the row` for the row's own entries.
    pub(crate) source: String,
    pub(crate) transport: Transport,
}

/// A problem with one source or one entry, named by file and server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("{file}: cannot read it: {reason}")]
    Unreadable { file: String, reason: String },
    #[error("{file}: not an mcpServers file: {reason}")]
    Malformed { file: String, reason: String },
    #[error("{file}: server `{server}`: {reason}")]
    Entry {
        file: String,
        server: String,
        reason: String,
    },
}

/// Where servers are read from, in order.
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    pub(crate) row: BTreeMap<String, ServerEntry>,
    /// What errors and logs call the source of `row` (`the row`, or the client's session).
    pub(crate) row_label: String,
    /// Files of the user (trusted).
    pub(crate) files: Vec<PathBuf>,
    /// The workspace's file (the project's; cannot choose a sandbox mode).
    pub(crate) project: Option<PathBuf>,
    /// Whether the workspace's file may name HTTP servers (the row's `projectHttp`).
    pub(crate) project_http: bool,
}

/// What reading every source gave: the servers, and the problems found on the way.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub(crate) servers: BTreeMap<String, ServerSpec>,
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) warnings: Vec<String>,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct McpFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, Value>,
}

impl Sources {
    /// The files whose changes matter, for the watcher.
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().chain(&self.project).cloned().collect()
    }

    /// Reads every source (a missing file is no servers); the project's file only when
    /// `project_trusted` (until then its servers wait, which the warnings say).
    pub(crate) fn load(&self, project_trusted: bool) -> Loaded {
        let mut loaded = Loaded::default();
        let user = Trust::User;
        for (name, entry) in &self.row {
            loaded.add(name, entry.clone(), &self.row_label, user);
        }
        for file in &self.files {
            loaded.read_file(file, user);
        }
        if let Some(project) = self.project.as_ref().filter(|_| !project_trusted)
            && project.exists()
        {
            loaded.warnings.push(format!(
                "{}: the project is not trusted, so its servers wait (trust it in the page, with --trust-project, or under trust.roots in settings.yaml)",
                project.display()
            ));
        }
        if let Some(project) = self.project.as_ref().filter(|_| project_trusted) {
            let trust = Trust::Project {
                http: self.project_http,
            };
            loaded.read_file(project, trust);
        }
        loaded.refuse_clashing_names();
        loaded
    }
}

/// Whose source an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    /// The row or the user's own files: everything an entry says is honoured.
    User,
    /// The workspace's file: no sandbox mode, and HTTP servers only when `http`.
    Project { http: bool },
}

impl Loaded {
    /// Servers whose names differ but whose tools' names would not (`my.server` and
    /// `my_server` both give `mcp__my_server__…`) are all refused, each error naming the others:
    /// which one the user meant cannot be told.
    fn refuse_clashing_names(&mut self) {
        let mut by_tool_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for name in self.servers.keys() {
            by_tool_name
                .entry(crate::tool::sanitize(name))
                .or_default()
                .push(name.clone());
        }
        for names in by_tool_name.into_values().filter(|names| names.len() > 1) {
            for name in &names {
                let Some(spec) = self.servers.remove(name) else {
                    continue;
                };
                let others: Vec<String> = names
                    .iter()
                    .filter(|other| *other != name)
                    .map(|other| format!("`{other}`"))
                    .collect();
                self.errors.push(ConfigError::Entry {
                    file: spec.source,
                    server: name.clone(),
                    reason: format!(
                        "refused: its tools' names would be those of server {} (`.` becomes `_` in a tool's name); rename one",
                        others.join(", ")
                    ),
                });
            }
        }
    }

    fn read_file(&mut self, path: &Path, trust: Trust) {
        let file = path.display().to_string();
        // A workspace's file is anyone's: capped in size, and in nesting before it is parsed.
        let limits = Limits::DOCUMENT;
        let text = match dsh_doc_limits::read_capped(path, limits.max_bytes) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
            Err(error) => {
                self.errors.push(ConfigError::Unreadable {
                    file,
                    reason: error.to_string(),
                });
                return;
            }
        };
        if let Err(error) = dsh_doc_limits::check_json(&text, &file, limits) {
            self.errors.push(ConfigError::Malformed {
                file,
                reason: error.reason(),
            });
            return;
        }
        let parsed: McpFile = match serde_json::from_str(&text) {
            Ok(parsed) => parsed,
            Err(error) => {
                self.errors.push(ConfigError::Malformed {
                    file,
                    reason: error.to_string(),
                });
                return;
            }
        };
        for (name, value) in parsed.mcp_servers {
            match serde_json::from_value::<ServerEntry>(value) {
                Ok(entry) => self.add(&name, entry, &file, trust),
                Err(error) => self.errors.push(ConfigError::Entry {
                    file: file.clone(),
                    server: name,
                    reason: error.to_string(),
                }),
            }
        }
    }

    fn add(&mut self, name: &str, entry: ServerEntry, source: &str, trust: Trust) {
        if entry.disabled {
            self.servers.remove(name);
            return;
        }
        let trusted = trust == Trust::User;
        if !trusted && entry.sandbox.is_some() {
            self.warnings.push(format!(
                "{source}: server `{name}`: `sandbox` is ignored in a project's file (only the row and the user's files choose a server's sandbox mode)"
            ));
        }
        match spec(name, entry, source, trusted) {
            Ok(spec)
                if matches!(spec.transport, Transport::Http { .. })
                    && trust == (Trust::Project { http: false }) =>
            {
                self.warnings.push(format!(
                    "{source}: server `{name}` refused: a project's file cannot add an HTTP server (the host reaches it outside the sandbox); name it in $DSH_HOME/mcp.json, or set `projectHttp: true` in the mcp row's config to allow the project's"
                ));
            }
            Ok(spec) => {
                if let Some(earlier) = self.servers.get(name) {
                    self.warnings.push(format!(
                        "{source}: server `{name}` replaces the one from {}",
                        earlier.source
                    ));
                }
                self.servers.insert(name.to_owned(), spec);
            }
            Err(reason) => self.errors.push(ConfigError::Entry {
                file: source.to_owned(),
                server: name.to_owned(),
                reason: reason.to_string(),
            }),
        }
    }
}

/// What is wrong with one entry (the file and server are named by [`ConfigError::Entry`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum EntryError {
    #[error("a server name must be letters, digits, `_`, `-` or `.`")]
    Name,
    #[error("`url` must be an http:// or https:// URL, not `{0}`")]
    Url(String),
    #[error("give either `command` or `url`, not both")]
    Both,
    #[error("unknown `type` `{0}` (expected stdio, http or sse)")]
    Kind(String),
    #[error("a stdio server needs a `command`")]
    NoCommand,
    #[error("an http server needs a `url`")]
    NoUrl,
    #[error("needs a `command` (stdio) or a `url` (http)")]
    Neither,
}

/// The spec of one entry, or what is wrong with it.
fn spec(
    name: &str,
    entry: ServerEntry,
    source: &str,
    trusted: bool,
) -> Result<ServerSpec, EntryError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(EntryError::Name);
    }
    let kind = entry.kind.as_deref().map(str::to_ascii_lowercase);
    let transport = match (kind.as_deref(), entry.command, entry.url) {
        (Some("stdio") | None, Some(command), None) if !command.trim().is_empty() => {
            Transport::Stdio {
                command,
                args: entry.args,
                env: entry.env.into_iter().collect(),
                cwd: entry.cwd,
                sandbox: match (trusted, entry.sandbox) {
                    (true, Some(mode)) => mode,
                    _ => String::new(),
                },
            }
        }
        (Some("http" | "streamable-http" | "streamablehttp" | "sse") | None, None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(EntryError::Url(url));
            }
            Transport::Http {
                url,
                headers: entry.headers.into_iter().collect(),
                sse: kind.as_deref() == Some("sse"),
            }
        }
        (_, Some(_), Some(_)) => return Err(EntryError::Both),
        (Some(other), _, _)
            if !matches!(
                other,
                "stdio" | "http" | "streamable-http" | "streamablehttp" | "sse"
            ) =>
        {
            return Err(EntryError::Kind(other.to_owned()));
        }
        (Some("stdio"), _, _) => return Err(EntryError::NoCommand),
        (Some(_), _, _) => return Err(EntryError::NoUrl),
        (None, _, _) => return Err(EntryError::Neither),
    };
    Ok(ServerSpec {
        name: name.to_owned(),
        source: source.to_owned(),
        transport,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Loaded {
        let dir = std::env::temp_dir().join(format!("mcp-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{}.json", text.len()));
        std::fs::write(&file, text).unwrap();
        let sources = Sources {
            row: BTreeMap::new(),
            row_label: "the row".to_owned(),
            files: vec![file.clone()],
            project: None,
            project_http: false,
        };
        let loaded = sources.load(true);
        let _ = std::fs::remove_file(file);
        loaded
    }

    #[test]
    fn entries_of_both_kinds_read_and_a_bad_one_is_named_alone() {
        let loaded = load_text(
            r#"{"mcpServers": {
                "fs": {"command": "node", "args": ["x.js"], "env": {"A": "1"}, "alwaysAllow": []},
                "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}},
                "broken": {"args": ["no command"]},
                "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                "odd": {"type": "websocket", "url": "ws://127.0.0.1:1/"}
            }}"#,
        );
        assert_eq!(
            loaded.servers.keys().collect::<Vec<_>>(),
            ["fs", "legacy", "web"],
            "{loaded:?}"
        );
        assert!(matches!(
            loaded.servers["legacy"].transport,
            Transport::Http { sse: true, .. }
        ));
        assert!(matches!(
            loaded.servers["web"].transport,
            Transport::Http { sse: false, .. }
        ));
        assert_eq!(loaded.errors.len(), 2, "{loaded:?}");
        let text = loaded.errors[0].to_string();
        assert!(
            text.contains("server `broken`") && text.contains(".json"),
            "{text}"
        );
        assert!(
            loaded.errors[1]
                .to_string()
                .contains("unknown `type` `websocket`"),
            "{loaded:?}"
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_one_error_naming_it() {
        let loaded = load_text("{\"mcpServers\": {");
        assert!(loaded.servers.is_empty());
        assert!(matches!(loaded.errors[..], [ConfigError::Malformed { .. }]));
    }

    #[test]
    fn a_file_nested_past_the_limit_is_refused_before_parsing() {
        let deep = format!("{{\"mcpServers\": {}", "[".repeat(100_000));
        let loaded = load_text(&deep);
        assert!(loaded.servers.is_empty());
        let text = loaded.errors[0].to_string();
        assert!(
            matches!(loaded.errors[..], [ConfigError::Malformed { .. }])
                && text.contains(".json: not an mcpServers file: line 1 nests deeper than 64"),
            "{text}"
        );
    }

    #[test]
    fn a_project_cannot_choose_a_sandbox_mode() {
        let entry = ServerEntry {
            command: Some("srv".into()),
            sandbox: Some("danger-full-access".into()),
            ..ServerEntry::default()
        };
        let mut loaded = Loaded::default();
        loaded.add(
            "s",
            entry.clone(),
            ".mcp.json",
            Trust::Project { http: false },
        );
        loaded.add("t", entry, "mcp.json", Trust::User);
        let mode = |name: &str| match &loaded.servers[name].transport {
            Transport::Stdio { sandbox, .. } => sandbox.clone(),
            Transport::Http { .. } => unreachable!(),
        };
        assert_eq!(mode("s"), "");
        assert_eq!(mode("t"), "danger-full-access");
        assert_eq!(loaded.warnings.len(), 1);
    }

    #[test]
    fn a_project_adds_http_servers_only_when_the_row_allows_it() {
        let remote = ServerEntry {
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..ServerEntry::default()
        };
        let local = ServerEntry {
            command: Some("srv".into()),
            ..ServerEntry::default()
        };
        let mut loaded = Loaded::default();
        let project = Trust::Project { http: false };
        loaded.add("remote", remote.clone(), ".mcp.json", project);
        loaded.add("local", local, ".mcp.json", project);
        loaded.add("mine", remote.clone(), "mcp.json", Trust::User);
        assert_eq!(
            loaded.servers.keys().collect::<Vec<_>>(),
            ["local", "mine"],
            "{loaded:?}"
        );
        assert_eq!(loaded.warnings.len(), 1, "{loaded:?}");
        let warning = &loaded.warnings[0];
        assert!(
            warning.contains(".mcp.json") && warning.contains("server `remote`"),
            "{warning}"
        );
        loaded.add("remote", remote, ".mcp.json", Trust::Project { http: true });
        assert!(loaded.servers.contains_key("remote"));
    }

    #[test]
    fn servers_equal_once_sanitized_are_refused_naming_each_other() {
        let entry = ServerEntry {
            command: Some("srv".into()),
            ..ServerEntry::default()
        };
        let mut loaded = Loaded::default();
        loaded.add("my.server", entry.clone(), "mcp.json", Trust::User);
        loaded.add(
            "my_server",
            entry.clone(),
            ".mcp.json",
            Trust::Project { http: false },
        );
        loaded.add("other", entry, "mcp.json", Trust::User);
        loaded.refuse_clashing_names();
        assert_eq!(loaded.servers.keys().collect::<Vec<_>>(), ["other"]);
        assert_eq!(loaded.errors.len(), 2, "{loaded:?}");
        let text = loaded.errors[0].to_string();
        assert!(
            text.contains("server `my.server`") && text.contains("`my_server`"),
            "{text}"
        );
    }
}
