//! The servers a client brings for one session (`mcp_scopes`): an ACP editor's `mcpServers`,
//! each set run in the tool scope the caller names and puts in that session's agent's scope
//! chain, so only that session and its children are offered its tools. A set is the client's
//! own configuration, trusted as the user's files are (an HTTP server is allowed), and works in
//! the session's directory. It stops when its owner agent is disposed, when the caller
//! unmounts it, or when the plugin unloads.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abi_stable::std_types::{RResult, RString};
use async_ffi::FutureExt;
use dsh_plugin_api::{Json, LogLevel, SeamError, SeamErrorKind, lock};
use dsh_tools_seam::mcp::{McpScopes, McpServerSpec, Mounted, ServerStatus};

use crate::ServerEntry;
use crate::config::Sources;
use crate::manager::Manager;
use crate::server::Shared;

/// One mounted set and the agent that owns it.
struct Set {
    owner: String,
    manager: Arc<Manager>,
}

/// Every mounted set, by scope.
pub(crate) struct Scoped {
    /// The services and settings each set's servers share (the global set's).
    base: Shared,
    /// How long a mount waits for its servers' first attempts.
    bound: Duration,
    sets: Mutex<HashMap<String, Set>>,
}

/// A set just made: its manager, the servers' names in the order given, and the entries'
/// problems by server name.
struct Started {
    manager: Arc<Manager>,
    names: Vec<String>,
    problems: BTreeMap<String, String>,
}

/// Why a mount is refused.
#[derive(Debug, thiserror::Error)]
enum MountError {
    #[error("mcp_scopes: `scope` is empty")]
    NoScope,
    #[error("mcp_scopes: `owner` is empty")]
    NoOwner,
    #[error("mcp_scopes: `cwd` must be an absolute path: {0}")]
    Cwd(String),
    #[error("mcp_scopes: `servers` do not read: {0}")]
    Servers(String),
    #[error("mcp_scopes: two servers are named `{0}`")]
    Twice(String),
    #[error("mcp_scopes: scope `{0}` has its servers already")]
    Mounted(String),
}

impl From<MountError> for SeamError {
    fn from(error: MountError) -> Self {
        let kind = match error {
            MountError::Mounted(_) => SeamErrorKind::Conflict,
            _ => SeamErrorKind::Invalid,
        };
        SeamError::new(kind, error.to_string())
    }
}

/// An entry of the `mcpServers` shape for `server`.
fn entry(server: McpServerSpec) -> (String, ServerEntry) {
    match server {
        McpServerSpec::Stdio {
            name,
            command,
            args,
            env,
        } => (
            name,
            ServerEntry {
                kind: Some("stdio".to_owned()),
                command: Some(command),
                args,
                env: env.into_iter().collect(),
                ..ServerEntry::default()
            },
        ),
        McpServerSpec::Http { name, url, headers } => (name, remote("http", url, headers)),
        McpServerSpec::Sse { name, url, headers } => (name, remote("sse", url, headers)),
    }
}

/// The entry of a server reached at `url` over transport `kind`.
fn remote(kind: &str, url: String, headers: Vec<(String, String)>) -> ServerEntry {
    ServerEntry {
        kind: Some(kind.to_owned()),
        url: Some(url),
        headers: headers.into_iter().collect(),
        ..ServerEntry::default()
    }
}

impl Scoped {
    pub(crate) fn new(base: Shared, bound: Duration) -> Arc<Self> {
        Arc::new(Self {
            base,
            bound,
            sets: Mutex::default(),
        })
    }

    /// Makes the set of `scope` (its servers start on the reconcile that follows).
    fn start(
        &self,
        scope: &str,
        owner: &str,
        cwd: &str,
        servers: Vec<McpServerSpec>,
    ) -> Result<Started, MountError> {
        if scope.is_empty() {
            return Err(MountError::NoScope);
        }
        if owner.is_empty() {
            return Err(MountError::NoOwner);
        }
        if !Path::new(cwd).is_absolute() {
            return Err(MountError::Cwd(cwd.to_owned()));
        }
        let mut row = BTreeMap::new();
        let mut names = Vec::new();
        for server in servers {
            let (name, entry) = entry(server);
            if row.insert(name.clone(), entry).is_some() {
                return Err(MountError::Twice(name));
            }
            names.push(name);
        }
        let sources = Sources {
            row,
            row_label: format!("the client's session (scope {scope})"),
            files: Vec::new(),
            project: None,
            project_http: false,
        };
        // The entries' problems, for the answer (the manager logs them too).
        let problems: BTreeMap<String, String> = sources
            .load(false)
            .errors
            .into_iter()
            .filter_map(|error| match error {
                crate::config::ConfigError::Entry { server, reason, .. } => Some((server, reason)),
                _ => None,
            })
            .collect();
        let mut shared = self.base.clone();
        shared.workspace = cwd.to_owned();
        shared.scope = scope.to_owned();
        let manager = Manager::new(Arc::new(shared), sources);
        let mut sets = lock(&self.sets);
        if sets.contains_key(scope) {
            return Err(MountError::Mounted(scope.to_owned()));
        }
        sets.insert(
            scope.to_owned(),
            Set {
                owner: owner.to_owned(),
                manager: manager.clone(),
            },
        );
        Ok(Started {
            manager,
            names,
            problems,
        })
    }

    async fn mount(
        self: Arc<Self>,
        scope: String,
        owner: String,
        cwd: String,
        servers: Vec<McpServerSpec>,
    ) -> Result<Vec<ServerStatus>, SeamError> {
        let Started {
            manager,
            names,
            mut problems,
        } = self.start(&scope, &owner, &cwd, servers)?;
        manager.reconcile_and_wait(self.bound).await;
        let running = manager.servers();
        let statuses = names
            .into_iter()
            .map(|name| {
                if let Some(reason) = problems.remove(&name) {
                    return ServerStatus {
                        name,
                        error: Some(reason),
                        tools: Vec::new(),
                    };
                }
                match running.iter().find(|server| server.name == name) {
                    Some(server) => ServerStatus {
                        error: server.connection().err().map(|why| why.to_string()),
                        tools: server.tool_names(),
                        name,
                    },
                    None => ServerStatus {
                        name,
                        error: Some("it was stopped before it started".to_owned()),
                        tools: Vec::new(),
                    },
                }
            })
            .collect();
        Ok(statuses)
    }

    /// Stops the set of `scope`; false when it has none.
    fn stop(&self, scope: &str, why: &str) -> bool {
        let Some(set) = lock(&self.sets).remove(scope) else {
            return false;
        };
        let names = set.manager.close();
        if !names.is_empty() {
            self.base.ctx.log(
                LogLevel::Info,
                &format!(
                    "mcp: {why}: stopped the servers `{}` of scope {scope}",
                    names.join("`, `")
                ),
            );
        }
        true
    }

    /// Agent `agent` was disposed: the sets it owns stop.
    pub(crate) fn disposed(&self, agent: &str) {
        let owned: Vec<String> = lock(&self.sets)
            .iter()
            .filter(|(_, set)| set.owner == agent)
            .map(|(scope, _)| scope.clone())
            .collect();
        for scope in owned {
            self.stop(&scope, &format!("agent {agent} was disposed"));
        }
    }

    /// Stops every set and waits until their connections closed (the plugin unloads).
    pub(crate) async fn stop_all(&self) {
        let sets: Vec<Set> = lock(&self.sets).drain().map(|(_, set)| set).collect();
        for set in sets {
            set.manager.stop_all().await;
        }
    }
}

/// The `mcp_scopes` service object.
pub(crate) struct Handle(pub(crate) Arc<Scoped>);

impl McpScopes for Handle {
    fn mount(
        &self,
        scope: RString,
        owner: RString,
        cwd: RString,
        servers: Json<Vec<McpServerSpec>>,
    ) -> Mounted {
        let scoped = self.0.clone();
        let servers = servers.decode();
        async move {
            let servers = match servers {
                Ok(servers) => servers,
                Err(error) => return RResult::RErr(MountError::Servers(error.to_string()).into()),
            };
            let (scope, owner, cwd) = (scope.into_string(), owner.into_string(), cwd.into_string());
            match scoped.mount(scope, owner, cwd, servers).await {
                Ok(statuses) => RResult::ROk(Json::encode(&statuses)),
                Err(error) => RResult::RErr(error),
            }
        }
        .into_ffi()
    }

    fn unmount(&self, scope: RString) -> RResult<(), SeamError> {
        match self.0.stop(scope.as_str(), "unmounted") {
            true => RResult::ROk(()),
            false => RResult::RErr(SeamError::new(
                SeamErrorKind::NotFound,
                format!("mcp_scopes: scope `{scope}` has no servers"),
            )),
        }
    }
}
