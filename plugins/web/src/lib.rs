//! Plugin `web`: the server of `dsh-host --profile web`, a transport of the `clients` service
//! (every API call and every event socket is a connection of it). It reads its arguments from the host's
//! `cmdline` service, draws the launch's secrets, builds the router with every guard, and only
//! then asks the host's `http_server` for a port (3080, or the next free one); it prints one
//! line with the URL that signs a browser in, and opens a browser only for a local desktop
//! launch. Unloading it closes the port and every connection.
//!
//! Routes: `/auth?token=` (sign in), `/` (the app, or the sign-in page without the cookie),
//! `/assets/*` (the app's files), `GET /export?session=ID` (a session's archive, see
//! `download`), `POST /api/<method>` (a method of the client protocol in the
//! reference's envelope) and `GET /api/events` (the event socket, see `socket`). Every
//! response carries a strict Content-Security-Policy; the guards are in `guard`.

mod args;
mod download;
mod guard;
mod page;
mod router;
mod socket;

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RString;
use dsh_clients_seam::{CLIENTS_SERVICE, ClientsService, ConnectOptions, FrameSink, FrameSink_TO};
use dsh_plugin_api::io::control::{HOST_SERVICE, HostControlService};
use dsh_plugin_api::io::http_server::{
    HTTP_SERVER_SERVICE, HttpServerService, ListenOptions, RequestHandler_TO,
};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{CMDLINE_SERVICE, CmdlineArgs, LogLevel};

use crate::args::{DEFAULT_PORT, Parsed, USAGE};
use crate::guard::{Guard, Secrets};
use crate::router::Router;

/// The unary calls' connection has no frames to take: the pages follow on their sockets.
struct NoFrames;

impl FrameSink for NoFrames {
    fn send(&self, _frame: RString) -> bool {
        true
    }
}

/// The smallest `DSH_ACCESS_SECRET` a non-loopback launch accepts.
const MIN_ACCESS_SECRET: usize = 16;

/// Ports after the default tried when it is taken.
const NEXT_PORTS: u16 = 20;

/// Largest call body accepted (a prompt with pasted text; images come later, as attachments).
const MAX_BODY: u64 = 8 * 1024 * 1024;

/// Config of `web`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct WebConfig {
    /// Further `Host` values the server answers to (`name` or `name:port`), for a reverse
    /// proxy or a LAN name. Defence in depth only: the token is what signs a browser in.
    pub trusted_hosts: Vec<String>,
    /// Where the sign-in is kept between launches (`!home web-secret.json` in the bundle,
    /// owner-only): a restart on the same port keeps signed-in pages and the printed link.
    /// Without it every launch draws new secrets.
    pub secret_file: Option<String>,
}

pub struct WebPlugin;

impl Plugin for WebPlugin {
    const NAME: &'static str = "web";
    const INJECT: &'static [&'static str] = &[
        CMDLINE_SERVICE,
        HTTP_SERVER_SERVICE,
        HOST_SERVICE,
        CLIENTS_SERVICE,
    ];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_plugin_api::io::subprocess::SUBPROCESS_SERVICE,
        dsh_sessions_seam::SESSION_ARCHIVE_SERVICE,
    ];
    type Config = WebConfig;

    async fn apply(ctx: Context, config: WebConfig) -> Result<(), PluginError> {
        let cmdline = ctx.inject::<CmdlineArgs>(CMDLINE_SERVICE)?;
        let server = ctx.inject::<HttpServerService>(HTTP_SERVER_SERVICE)?;
        let host = ctx.inject::<HostControlService>(HOST_SERVICE)?;
        let words: Vec<String> = cmdline.args.iter().map(|arg| arg.to_string()).collect();
        let args = match args::parse(&words) {
            Ok(Parsed::Serve(args)) => args,
            Ok(Parsed::Help) => {
                println!("{USAGE}");
                host.exit(0);
                return Ok(());
            }
            Err(error) => {
                eprintln!("dsh: {error}\n\n{USAGE}");
                host.exit(2);
                return Ok(());
            }
        };
        let remote = !args::is_loopback(&args.host);
        let access_secret = std::env::var("DSH_ACCESS_SECRET").ok();
        if remote
            && access_secret
                .as_deref()
                .is_none_or(|secret| secret.chars().count() < MIN_ACCESS_SECRET)
        {
            eprintln!(
                "dsh: --host {} listens beyond this machine: set DSH_ACCESS_SECRET to a secret of at least {MIN_ACCESS_SECRET} characters first (it signs browsers in, with the printed token)",
                args.host
            );
            host.exit(2);
            return Ok(());
        }
        let secrets = match &config.secret_file {
            Some(file) => match Secrets::kept_in(std::path::Path::new(file)) {
                Ok((secrets, _kept)) => secrets,
                Err(error) => {
                    // The sign-in then lasts this launch only; the server still starts.
                    ctx.log(
                        LogLevel::Warn,
                        &format!("the sign-in is not kept between launches: {error}"),
                    );
                    Secrets::generate().map_err(|error| {
                        PluginError::plugin(format!("no OS randomness: {error}"))
                    })?
                }
            },
            None => Secrets::generate()
                .map_err(|error| PluginError::plugin(format!("no OS randomness: {error}")))?,
        };
        let cwd = match &args.cwd {
            Some(dir) if dir.is_dir() => std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
            Some(dir) => {
                eprintln!("dsh: --cwd {}: no such directory", dir.display());
                host.exit(2);
                return Ok(());
            }
            None => std::env::current_dir().unwrap_or_default(),
        }
        .display()
        .to_string();
        // The router is whole, guards and all, before the port is bound; it learns the bound
        // address (for its Host allow-list and cookie name) through the slot below. Every call
        // and every event socket is a connection of the `clients` service.
        let clients = Arc::new(ctx.inject::<ClientsService>(CLIENTS_SERVICE)?);
        let writable = !remote || args.allow_remote_settings;
        let options = ConnectOptions {
            transport: "web".to_owned(),
            profile: "web".to_owned(),
            remote,
            settings_writable: writable,
            cwd: Some(cwd),
            answers: false,
            heartbeat: false,
        };
        let unary = clients.connect(
            Json::encode(&options),
            FrameSink_TO::from_value(NoFrames, TD_Opaque),
        );
        let router = Router::new(
            ctx.clone(),
            clients,
            unary,
            options,
            remote && !args.allow_remote_settings,
        );
        let slot = router.guard_slot();
        let options = ListenOptions {
            host: args.host.as_str().into(),
            port: args.port.unwrap_or(DEFAULT_PORT),
            next_ports: if args.port.is_some() { 0 } else { NEXT_PORTS },
            max_body_bytes: MAX_BODY,
        };
        let token = secrets.token.clone();
        let pending = Arc::new(std::sync::Mutex::new(Some((
            secrets,
            config.trusted_hosts,
            access_secret.filter(|_| remote),
        ))));
        let handler = RequestHandler_TO::from_value(router, TD_Opaque);
        let listening = match server.listen(options, handler).await.into_result() {
            Ok(listening) => listening,
            Err(error) => {
                eprintln!("dsh: {error}");
                host.exit(1);
                return Ok(());
            }
        };
        let address = listening.address().to_string();
        if let Some((secrets, trusted, access)) = dsh_plugin_api::lock(&pending).take() {
            slot.fill(Guard::new(secrets, &address, &trusted, access));
        }
        if args.port.is_none() && !address.ends_with(&format!(":{DEFAULT_PORT}")) {
            eprintln!("dsh: port {DEFAULT_PORT} is taken; serving on {address}");
        }
        let url = format!("http://{address}/auth?token={token}");
        println!("dsh web: open {url}");
        ctx.log(LogLevel::Info, &format!("serving the web app on {address}"));
        if args.open && !remote && desktop_session() {
            open_browser(&ctx, &url);
        }
        ctx.on_dispose(move || drop(listening))
    }
}

/// Whether this is a desktop login a browser can open on (not SSH, not a bare console).
fn desktop_session() -> bool {
    let has = |name: &str| std::env::var_os(name).is_some_and(|value| !value.is_empty());
    (has("DISPLAY") || has("WAYLAND_DISPLAY")) && !has("SSH_CONNECTION") && !has("SSH_TTY")
}

/// Asks the desktop to open `url`; a failure only costs the convenience.
fn open_browser(ctx: &Context, url: &str) {
    use dsh_plugin_api::io::subprocess::{SUBPROCESS_SERVICE, SpawnRequest, SubprocessService};
    let Ok(Some(subprocess)) = ctx.get::<SubprocessService>(SUBPROCESS_SERVICE) else {
        return;
    };
    let request = SpawnRequest {
        program: "xdg-open".into(),
        args: vec![abi_stable::std_types::RString::from(url)].into(),
        ..SpawnRequest::default()
    };
    match subprocess.spawn(request).into_result() {
        // Held until it exits: the opener hands the URL to the desktop and ends.
        Ok(process) => {
            let _ = ctx.spawn(async move {
                let _ = process.wait().await;
            });
        }
        Err(_) => ctx.log(
            LogLevel::Warn,
            "could not open a browser: open the printed URL",
        ),
    }
}

dsh_plugin_api::export_plugins!(WebPlugin);
