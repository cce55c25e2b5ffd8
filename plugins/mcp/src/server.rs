//! One configured server, supervised: connect (start the process or reach the URL, the
//! handshake, the catalog), register its tools, follow its list changes, and when it dies,
//! start it again after a delay that doubles up to a ceiling (and starts over once a
//! connection lasted a minute). Its tools stay registered while it is down and answer why;
//! they go only when the server is removed from the configuration or the plugin unloads.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abi_stable::std_types::RString;
use dsh_plugin_api::cancel::{CancelFlag, Either, first_of};
use dsh_plugin_api::io::http::{HTTP_SERVICE, HttpService};
use dsh_plugin_api::{Context, LogLevel, Service, lock};
use dsh_sandbox_seam::SandboxPipedService;
use dsh_tools_seam::{RegistrationBox, ToolsService, tool_box};
use tokio::sync::mpsc;

use crate::client::{self, Catalog};
use crate::config::{ServerSpec, Transport as Reach};
use crate::error::{ConnectError, Unavailable};
use crate::protocol::{PromptInfo, ResourceInfo, Root, ToolInfo};
use crate::rpc::{self, Answers, Changed, Connection};
use crate::tool::{McpTool, tool_names};
use crate::transport::{Inbox, Transport};
use crate::{http, legacy_sse, stdio};

/// A connection that lasted this long resets the restart delay.
const STABLE: Duration = Duration::from_secs(60);

/// What every server of one set shares: the services, the row's settings, and where the set
/// works and whose sessions see its tools.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) ctx: Context,
    pub(crate) tools: Service<ToolsService>,
    pub(crate) sandbox: Service<SandboxPipedService>,
    /// The directory stdio servers work in, the sandbox's workspace and the root offered.
    pub(crate) workspace: String,
    /// The tool scope the servers' tools are registered in (empty: global, every session).
    pub(crate) scope: String,
    pub(crate) roots: bool,
    pub(crate) startup_timeout_ms: u64,
    pub(crate) tool_timeout_ms: Option<u64>,
    pub(crate) restart_delay_ms: u64,
    pub(crate) max_restart_delay_ms: u64,
}

/// Where a server stands.
enum Live {
    Starting,
    Up(Arc<Connection>),
    Down { reason: String, retry: Instant },
    Stopped,
}

pub(crate) struct Server {
    pub(crate) name: String,
    live: Mutex<Live>,
    /// Fired to stop the supervisor (the server was removed, or the plugin unloads).
    pub(crate) stop: Arc<CancelFlag>,
    /// Fired once the first attempt to connect ended, either way.
    pub(crate) first: Arc<CancelFlag>,
    registered: Mutex<BTreeMap<String, (ToolInfo, RegistrationBox)>>,
    /// The server's latest tool list, kept so that a tool the registry refused (its name still
    /// held by the server this one replaces) is registered on the next sync.
    catalog: Mutex<Vec<ToolInfo>>,
    /// Kept for later use (a resource or prompt picker); logged when they change.
    resources: Mutex<Vec<ResourceInfo>>,
    prompts: Mutex<Vec<PromptInfo>>,
}

impl Server {
    pub(crate) fn new(name: &str) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            live: Mutex::new(Live::Starting),
            stop: CancelFlag::new(),
            first: CancelFlag::new(),
            registered: Mutex::default(),
            catalog: Mutex::default(),
            resources: Mutex::default(),
            prompts: Mutex::default(),
        })
    }

    /// The live connection, or why there is none, for the model.
    pub(crate) fn connection(&self) -> Result<Arc<Connection>, Unavailable> {
        let name = self.name.clone();
        match &*lock(&self.live) {
            Live::Up(connection) => match connection.closed() {
                None => Ok(connection.clone()),
                Some(why) => Err(Unavailable::Restarting { name, why }),
            },
            Live::Starting => Err(Unavailable::Starting { name }),
            Live::Down { reason, retry } => Err(Unavailable::Down {
                name,
                reason: reason.clone(),
                wait: retry
                    .saturating_duration_since(Instant::now())
                    .as_secs_f64(),
            }),
            Live::Stopped => Err(Unavailable::Stopped { name }),
        }
    }

    /// Stops the supervisor and drops the tools at once, not when the connection has closed
    /// (which may take the kill grace): a replacement started right after registers the same
    /// names, which the registry would refuse while these hold them.
    pub(crate) fn retire(&self) {
        self.stop.fire();
        // Under the lock `sync_tools` registers in, so that one running now either finishes
        // before this clears or sees the stop and registers nothing.
        lock(&self.registered).clear();
    }

    /// Registers what the latest list names and the registry refused before (a name another
    /// server held then); answers how many it registered.
    pub(crate) fn resync(self: &Arc<Self>, shared: &Shared) -> usize {
        let tools = lock(&self.catalog).clone();
        let (wanted, _) = tool_names(&self.name, tools.clone());
        let missing = {
            let registered = lock(&self.registered);
            wanted.keys().any(|name| !registered.contains_key(name))
        };
        if !missing {
            return 0;
        }
        self.register(shared, wanted).0
    }

    /// Makes the registry hold exactly `tools` (a list the server just sent): unchanged tools
    /// keep their registration.
    fn sync_tools(self: &Arc<Self>, shared: &Shared, tools: Vec<ToolInfo>) -> (usize, usize) {
        *lock(&self.catalog) = tools.clone();
        let (wanted, clashes) = tool_names(&self.name, tools);
        for clash in clashes {
            shared.ctx.log(LogLevel::Warn, &clash);
        }
        self.register(shared, wanted)
    }

    /// Makes the registry hold exactly `wanted`, by registered name; answers how many were
    /// added and removed.
    fn register(
        self: &Arc<Self>,
        shared: &Shared,
        wanted: BTreeMap<String, ToolInfo>,
    ) -> (usize, usize) {
        let mut registered = lock(&self.registered);
        if self.stop.is_fired() {
            registered.clear();
            return (0, 0);
        }
        let before = registered.len();
        registered.retain(|name, (info, _)| wanted.get(name) == Some(info));
        let kept = registered.len();
        for (name, info) in wanted {
            if registered.contains_key(&name) {
                continue;
            }
            let tool = McpTool {
                name: name.clone(),
                server: self.clone(),
                info: info.clone(),
                timeout_ms: shared.tool_timeout_ms,
                ctx: shared.ctx.clone(),
            };
            let registration = shared.tools.register(
                RString::from(shared.ctx.row_id()),
                RString::from(shared.scope.as_str()),
                tool_box(tool),
            );
            match registration.into_result() {
                Ok(registration) => {
                    registered.insert(name, (info, registration));
                }
                Err(error) => shared.ctx.log(
                    LogLevel::Warn,
                    &format!("mcp `{}`: tool `{name}` not registered: {error}", self.name),
                ),
            }
        }
        (registered.len() - kept, before - kept)
    }

    /// The names of the registered tools.
    pub(crate) fn tool_names(&self) -> Vec<String> {
        lock(&self.registered).keys().cloned().collect()
    }

    /// Closes the live connection now (the plugin unloads; its tasks may not run again).
    pub(crate) async fn shutdown(&self) {
        let live = std::mem::replace(&mut *lock(&self.live), Live::Stopped);
        if let Live::Up(connection) = live {
            connection.close().await;
        }
        lock(&self.registered).clear();
    }

    fn set(&self, live: Live) {
        *lock(&self.live) = live;
    }
}

/// Runs `server` until it is stopped; then its tools go and its connection closes.
pub(crate) async fn supervise(shared: Arc<Shared>, spec: ServerSpec, server: Arc<Server>) {
    let mut delay = shared.restart_delay_ms;
    let mut current: Option<Arc<Connection>> = None;
    while !server.stop.is_fired() {
        let started = Instant::now();
        let reason = match connect(&shared, &spec, &server).await {
            Ok((connection, notes)) => {
                current = Some(connection.clone());
                server.first.fire();
                serve(&shared, &server, &connection, notes).await;
                if started.elapsed() >= STABLE {
                    delay = shared.restart_delay_ms;
                }
                connection
                    .closed()
                    .unwrap_or_else(|| "the connection ended".to_owned())
            }
            Err(error) => error.to_string(),
        };
        if server.stop.is_fired() {
            server.first.fire();
            break;
        }
        let retry = Instant::now() + Duration::from_millis(delay);
        shared.ctx.log(
            LogLevel::Warn,
            &format!(
                "mcp `{}` ({}): {reason}; restarting in {} ms",
                spec.name, spec.source, delay
            ),
        );
        // Down before the first attempt is said to be over, so whoever waited for it reads
        // why it failed (a client told its server did not start).
        server.set(Live::Down { reason, retry });
        server.first.fire();
        server
            .stop
            .until(shared.ctx.sleep(Duration::from_millis(delay)))
            .await;
        delay = delay.saturating_mul(2).min(shared.max_restart_delay_ms);
    }
    server.set(Live::Stopped);
    if let Some(connection) = current {
        connection.close().await;
    }
    lock(&server.registered).clear();
}

/// The transport of `spec`: its process started, or its endpoint's client made.
fn open(
    shared: &Shared,
    spec: &ServerSpec,
    inbox: Inbox,
) -> Result<Box<dyn Transport>, ConnectError> {
    let ctx = &shared.ctx;
    Ok(match &spec.transport {
        Reach::Stdio {
            command,
            args,
            env,
            cwd,
            sandbox,
        } => {
            let cwd = match cwd {
                Some(dir) => std::path::Path::new(&shared.workspace)
                    .join(dir)
                    .display()
                    .to_string(),
                None => shared.workspace.clone(),
            };
            let launch = stdio::Launch {
                server: &spec.name,
                command,
                args,
                env,
                cwd: &cwd,
                workspace: &shared.workspace,
                sandbox_mode: sandbox,
            };
            let (stdio, pid) =
                stdio::start(ctx, &shared.sandbox, &launch, inbox).map_err(|error| {
                    ConnectError::Start {
                        command: command.clone(),
                        error,
                    }
                })?;
            ctx.log(
                LogLevel::Info,
                &format!("mcp `{}`: started `{command}` (pid {pid})", spec.name),
            );
            Box::new(stdio)
        }
        Reach::Http { url, headers, sse } => {
            let client = ctx
                .get::<HttpService>(HTTP_SERVICE)
                .ok()
                .flatten()
                .ok_or(ConnectError::NoHttp)?;
            if *sse {
                Box::new(legacy_sse::start(ctx, client, url, headers, inbox))
            } else {
                Box::new(http::start(ctx, client, url, headers, inbox))
            }
        }
    })
}

/// One attempt: the transport, the handshake and the catalog, within the startup timeout.
async fn connect(
    shared: &Arc<Shared>,
    spec: &ServerSpec,
    server: &Arc<Server>,
) -> Result<(Arc<Connection>, mpsc::UnboundedReceiver<Changed>), ConnectError> {
    let ctx = &shared.ctx;
    let (inbox, events) = mpsc::unbounded_channel();
    let transport = open(shared, spec, inbox)?;
    let connection = Connection::new(transport);
    let (notes_in, notes) = mpsc::unbounded_channel();
    let answers = Answers {
        root: shared.roots.then(|| Root {
            uri: format!("file://{}", shared.workspace),
            name: "workspace".to_owned(),
        }),
    };
    ctx.spawn(rpc::run(
        ctx.clone(),
        connection.clone(),
        events,
        notes_in,
        answers,
    ))
    .map_err(ConnectError::Reader)?;
    let setup = async {
        let init = client::initialize(&connection, shared.roots).await?;
        let catalog = client::catalog(&connection, &init).await?;
        Ok::<_, client::ClientError>((init, catalog))
    };
    let timeout = shared
        .ctx
        .sleep(Duration::from_millis(shared.startup_timeout_ms));
    let (init, catalog) = match first_of(setup, timeout).await {
        Either::Left(Ok(done)) => done,
        Either::Left(Err(error)) => {
            connection.close().await;
            return Err(ConnectError::Setup(error));
        }
        Either::Right(()) => {
            connection.close().await;
            return Err(ConnectError::Handshake(shared.startup_timeout_ms));
        }
    };
    let Catalog {
        tools,
        resources,
        prompts,
    } = catalog;
    let count = tools.len();
    server.sync_tools(shared, tools);
    let peer = init
        .server_info
        .map(|info| format!("{} {}", info.name, info.version))
        .unwrap_or_else(|| "a server".to_owned());
    ctx.log(
        LogLevel::Info,
        &format!(
            "mcp `{}`: connected to {peer} (MCP {}): {count} tools [{}], {} resources, {} prompts",
            spec.name,
            init.protocol_version,
            server.tool_names().join(", "),
            resources.len(),
            prompts.len()
        ),
    );
    log_catalog(ctx, &spec.name, &resources, &prompts);
    *lock(&server.resources) = resources;
    *lock(&server.prompts) = prompts;
    server.set(Live::Up(connection.clone()));
    Ok((connection, notes))
}

/// What a server offers besides tools, kept for later use: said at debug level.
fn log_catalog(ctx: &Context, name: &str, resources: &[ResourceInfo], prompts: &[PromptInfo]) {
    let resources: Vec<String> = resources
        .iter()
        .map(|resource| match &resource.mime_type {
            Some(kind) => format!("{} <{}> ({kind})", resource.name, resource.uri),
            None => format!("{} <{}>", resource.name, resource.uri),
        })
        .collect();
    let prompts: Vec<String> = prompts
        .iter()
        .map(|prompt| match &prompt.description {
            Some(about) => format!("{}: {about}", prompt.name),
            None => prompt.name.clone(),
        })
        .collect();
    ctx.log(
        LogLevel::Debug,
        &format!(
            "mcp `{name}`: resources [{}]; prompts [{}]",
            resources.join("; "),
            prompts.join("; ")
        ),
    );
}

/// Follows the server's list changes until the connection closes or the server is stopped.
async fn serve(
    shared: &Arc<Shared>,
    server: &Arc<Server>,
    connection: &Arc<Connection>,
    mut notes: mpsc::UnboundedReceiver<Changed>,
) {
    let ctx = &shared.ctx;
    let name = &server.name;
    loop {
        let note = match first_of(notes.recv(), server.stop.wait()).await {
            Either::Left(Some(note)) => note,
            Either::Left(None) | Either::Right(()) => return,
        };
        let outcome = match note {
            Changed::Tools => client::list::<ToolInfo>(connection, "tools/list")
                .await
                .map(|tools| {
                    let (added, removed) = server.sync_tools(shared, tools);
                    format!(
                        "tools changed: {} now [{}] ({added} added, {removed} removed)",
                        server.tool_names().len(),
                        server.tool_names().join(", ")
                    )
                }),
            Changed::Resources => client::list::<ResourceInfo>(connection, "resources/list")
                .await
                .map(|resources| {
                    let names: Vec<String> = resources.iter().map(|r| r.name.clone()).collect();
                    *lock(&server.resources) = resources;
                    format!(
                        "resources changed: {} now [{}]",
                        names.len(),
                        names.join(", ")
                    )
                }),
            Changed::Prompts => client::list::<PromptInfo>(connection, "prompts/list")
                .await
                .map(|prompts| {
                    let names: Vec<String> = prompts.iter().map(|p| p.name.clone()).collect();
                    *lock(&server.prompts) = prompts;
                    format!(
                        "prompts changed: {} now [{}]",
                        names.len(),
                        names.join(", ")
                    )
                }),
        };
        match outcome {
            Ok(said) => ctx.log(LogLevel::Info, &format!("mcp `{name}`: {said}")),
            Err(error) => ctx.log(
                LogLevel::Warn,
                &format!("mcp `{name}`: re-reading a changed list failed: {error}"),
            ),
        }
    }
}
