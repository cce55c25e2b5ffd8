//! Plugin `client-socket`: the client protocol on a Unix socket, `dsh-clients-<pid>.sock` in
//! the row's `dir` (`!home run` in the bundles), so a second process (the terminal UI, a
//! script, a second terminal) attaches to the sessions of a running host: it lists them,
//! subscribes to one, prompts, answers its approvals. Each accepted stream is a connection of
//! the `clients` service speaking newline-delimited JSON-RPC 2.0: requests are the protocol's
//! methods, and the frames the client follows arrive as `frame` notifications. `dsh-host
//! status` lists the sockets.
//!
//! Owner-only: the folder is made 0700 and the socket 0600, so only the user who started the
//! host reaches its sessions. Unloading the row closes the listener and every connection and removes
//! the socket file.

mod stream;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_clients_seam::{CLIENTS_SERVICE, ClientsService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{LogLevel, Service};

/// Config of `client-socket`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct SocketConfig {
    /// The folder the socket is made in (`!home run` in the bundles).
    pub dir: Option<String>,
    /// The most clients attached at once (32 when absent); one more is told so and closed.
    pub max_clients: Option<usize>,
}

pub struct SocketPlugin;

impl Plugin for SocketPlugin {
    const NAME: &'static str = "client-socket";
    const INJECT: &'static [&'static str] = &[CLIENTS_SERVICE];
    type Config = SocketConfig;

    async fn apply(ctx: Context, config: SocketConfig) -> Result<(), PluginError> {
        let clients = Arc::new(ctx.inject::<ClientsService>(CLIENTS_SERVICE)?);
        let dir = config.dir.map(PathBuf::from).ok_or_else(|| {
            PluginError::plugin("config `dir`: the socket's folder is required (`!home run`)")
        })?;
        let path = dir.join(format!("dsh-clients-{}.sock", std::process::id()));
        let listener = bind(&dir, &path)
            .map_err(|error| PluginError::plugin(format!("{}: {error}", path.display())))?;
        ctx.log(
            LogLevel::Info,
            &format!("clients attach on {}", path.display()),
        );
        let stopping = Arc::new(AtomicBool::new(false));
        let max = config.max_clients.unwrap_or(32).max(1);
        let server = Server {
            ctx: ctx.clone(),
            clients,
            stopping: stopping.clone(),
            slots: Arc::new(std::sync::Mutex::new(max)),
        };
        ctx.spawn(accept_loop(server, listener))?;
        ctx.on_dispose(move || {
            stopping.store(true, Ordering::SeqCst);
            // Wakes the blocked accept so it sees the flag, then takes the file away.
            let _ = std::os::unix::net::UnixStream::connect(&path);
            let _ = std::fs::remove_file(&path);
        })
    }
}

/// Binds `path` in an owner-only `dir`, replacing a socket left by a host that died.
fn bind(dir: &Path, path: &Path) -> std::io::Result<UnixListener> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

#[derive(Clone)]
pub(crate) struct Server {
    pub(crate) ctx: Context,
    pub(crate) clients: Arc<Service<ClientsService>>,
    pub(crate) stopping: Arc<AtomicBool>,
    /// Free client slots.
    pub(crate) slots: Arc<std::sync::Mutex<usize>>,
}

async fn accept_loop(server: Server, listener: UnixListener) {
    let listener = Arc::new(listener);
    loop {
        let accepting = listener.clone();
        let accepted = server.ctx.blocking(move || accepting.accept()).await;
        if server.stopping.load(Ordering::SeqCst) {
            return;
        }
        let stream = match accepted {
            Ok(Ok((stream, _))) => stream,
            Ok(Err(error)) => {
                server
                    .ctx
                    .log(LogLevel::Warn, &format!("client socket: accept: {error}"));
                let _ = server
                    .ctx
                    .sleep(std::time::Duration::from_millis(100))
                    .await;
                continue;
            }
            Err(_) => return,
        };
        {
            let mut free = dsh_plugin_api::lock(&server.slots);
            if *free == 0 {
                drop(free);
                stream::refuse_busy(stream);
                continue;
            }
            *free -= 1;
        }
        let _ = server.ctx.spawn(stream::serve(server.clone(), stream));
    }
}

dsh_plugin_api::export_plugins!(SocketPlugin);
