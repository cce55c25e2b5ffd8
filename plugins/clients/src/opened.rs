//! Sessions made live: `session.create` (a new one) and `session.open` (a stored one opened
//! again), each with what a client may ask of it besides a directory and a model: directories
//! its calls may write (the `sandbox` row's roots per session) and MCP servers of its own,
//! mounted in a tool scope only its agent has (the `mcp` row's `mcp_scopes`) and stopped with
//! it. A server that does not start leaves the session working; the answer's `notes` say which
//! and why.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use abi_stable::std_types::RString;
use dsh_client_protocol::{CreateRequest, Created, McpServerSpec, OpenRequest, RpcErrorCode};
use dsh_plugin_api::Json;
use dsh_protocol::{AgentOptions, check_session_id};
use dsh_sandbox_seam::{SANDBOX_ROOTS_SERVICE, SandboxRootsService};
use dsh_tools_seam::mcp::{MCP_SCOPES_SERVICE, McpScopesService, ServerStatus};

use crate::api::{Api, Failure};

/// Makes each session's scope key unique on this host.
static NEXT_SCOPE: AtomicU64 = AtomicU64::new(1);

fn bad(message: String) -> Failure {
    Failure(RpcErrorCode::BadRequest, message)
}

/// `PROVIDER/MODEL` split; none: no route.
fn route_parts(route: Option<&str>) -> Result<(String, String), Failure> {
    let Some(route) = route else {
        return Ok((String::new(), String::new()));
    };
    crate::models::split_route(route)
        .map(|(provider, model)| (provider.to_owned(), model.to_owned()))
        .ok_or_else(|| bad(format!("model `{route}` is not PROVIDER/MODEL")))
}

/// What a session asks for besides its directory and model.
struct Extras {
    directories: Vec<String>,
    servers: Vec<McpServerSpec>,
}

impl Extras {
    /// Checked before anything starts: absolute directories, a sandbox that gives roots per
    /// session where some are asked, named servers. Answers the tool scope of the servers.
    fn check(&self, api: &Api) -> Result<Option<String>, Failure> {
        if let Some(dir) = self
            .directories
            .iter()
            .find(|dir| !Path::new(dir).is_absolute())
        {
            return Err(bad(format!(
                "additionalDirectories: must be absolute paths: {dir}"
            )));
        }
        if !self.directories.is_empty()
            && !matches!(
                api.ctx.get::<SandboxRootsService>(SANDBOX_ROOTS_SERVICE),
                Ok(Some(_))
            )
        {
            return Err(bad(
                "additionalDirectories: no `sandbox` row provides writable roots per session here"
                    .to_owned(),
            ));
        }
        if let Some(at) = self
            .servers
            .iter()
            .position(|server| server.name().trim().is_empty())
        {
            return Err(bad(format!("mcpServers[{at}]: a server needs a `name`")));
        }
        Ok((!self.servers.is_empty()).then(|| {
            format!(
                "session-mcp:{}-{}",
                std::process::id(),
                NEXT_SCOPE.fetch_add(1, Ordering::Relaxed)
            )
        }))
    }

    /// Gives agent `agent` (working in `cwd`) its roots and starts its servers in `scope`;
    /// answers what the person is told of the servers that did not start.
    async fn apply(
        self,
        api: &Api,
        agent: &str,
        cwd: &str,
        scope: Option<String>,
    ) -> Result<Vec<String>, Failure> {
        if !self.directories.is_empty()
            && let Ok(Some(roots)) = api.ctx.get::<SandboxRootsService>(SANDBOX_ROOTS_SERVICE)
        {
            let list = self
                .directories
                .iter()
                .map(|dir| RString::from(dir.as_str()))
                .collect();
            roots
                .set_roots(agent.into(), list)
                .into_result()
                .map_err(|error| bad(format!("additionalDirectories: {error}")))?;
        }
        let Some(scope) = scope else {
            return Ok(Vec::new());
        };
        Ok(mount(api, &scope, agent, cwd, self.servers).await)
    }
}

/// Mounts `servers` in `scope` for agent `agent` working in `cwd`; answers what the person is
/// told about those that did not start (nothing when all did).
async fn mount(
    api: &Api,
    scope: &str,
    agent: &str,
    cwd: &str,
    servers: Vec<McpServerSpec>,
) -> Vec<String> {
    let names: Vec<String> = servers.iter().map(|s| format!("`{}`", s.name())).collect();
    let scopes = match api.ctx.get::<McpScopesService>(MCP_SCOPES_SERVICE) {
        Ok(Some(scopes)) => scopes,
        _ => {
            return vec![format!(
                "The MCP servers {} were not started: no `mcp` row is mounted (its `mcp_scopes` service is missing).",
                names.join(", ")
            )];
        }
    };
    let mounting = scopes.mount(
        scope.into(),
        agent.into(),
        cwd.into(),
        Json::encode(&servers),
    );
    drop(scopes);
    let statuses: Vec<ServerStatus> = match mounting.await.into_result() {
        Ok(statuses) => match statuses.decode() {
            Ok(statuses) => statuses,
            Err(error) => return vec![format!("The MCP servers' statuses do not read: {error}")],
        },
        Err(error) => {
            return vec![format!(
                "The MCP servers {} were not started: {error}",
                names.join(", ")
            )];
        }
    };
    statuses
        .into_iter()
        .filter_map(|status| {
            let why = status.error?;
            Some(format!("MCP server `{}` did not start: {why}", status.name))
        })
        .collect()
}

impl Api {
    pub(crate) async fn create(
        &self,
        caller: &crate::connection::Caller,
        request: CreateRequest,
    ) -> Result<Created, Failure> {
        let route = request.model.or_else(|| self.default_model());
        let (provider, model) = route_parts(route.as_deref())?;
        let cwd = request.cwd.unwrap_or_else(|| caller.cwd.clone());
        let extras = Extras {
            directories: request.additional_directories,
            servers: request.mcp_servers,
        };
        let options = AgentOptions {
            cwd,
            provider,
            model,
            agent_preset: request.agent_preset,
            ..AgentOptions::default()
        };
        self.make_live(options, extras).await
    }

    /// Starts the agent `options` describe (a new session, or a stored one when it resumes
    /// one) with `extras`, checked first.
    async fn make_live(
        &self,
        mut options: AgentOptions,
        extras: Extras,
    ) -> Result<Created, Failure> {
        let scope = extras.check(self)?;
        options.scope = scope.iter().cloned().collect();
        let cwd = options.cwd.clone();
        let id = match options.resume.is_some() {
            // Opening names a session: one not stored, or live already, is the caller's.
            true => self
                .agents()?
                .create(Json::encode(&options))
                .await
                .into_result()
                .map(RString::into_string)
                .map_err(Failure::from)?,
            false => self.start(options).await?,
        };
        let notes = extras.apply(self, &id, &cwd, scope).await?;
        Ok(Created {
            session_id: id,
            notes,
        })
    }

    /// `session.open`: the stored session resumed by its agent, with the route asked for, else
    /// the one it resumes with as any client's first request would resume it.
    pub(crate) async fn open_stored(&self, request: OpenRequest) -> Result<Created, Failure> {
        check_session_id(&request.session_id)
            .map_err(|error| bad(format!("sessionId: {error}")))?;
        let (provider, model) = match request.model {
            Some(route) => route_parts(Some(&route))?,
            None => self.resume_route(&request.session_id).await,
        };
        let cwd = match request.cwd {
            Some(cwd) => cwd,
            None => self
                .stored()
                .await?
                .into_iter()
                .find(|summary| summary.id == request.session_id)
                .and_then(|summary| summary.cwd)
                .unwrap_or_else(|| self.host_cwd.clone()),
        };
        let extras = Extras {
            directories: request.additional_directories,
            servers: request.mcp_servers,
        };
        let options = AgentOptions {
            cwd,
            resume: Some(request.session_id),
            provider,
            model,
            ..AgentOptions::default()
        };
        self.make_live(options, extras).await
    }
}
