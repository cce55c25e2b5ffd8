//! Plugin `web`: the server of `dsh-host --profile web`. It reads its arguments from the host's
//! `cmdline` service, draws the launch's secrets, builds the router with every guard, and only
//! then asks the host's `http_server` for a port (3080, or the next free one); it prints one
//! line with the URL that signs a browser in, and opens a browser only for a local desktop
//! launch. Unloading it closes the port and every connection.
//!
//! Routes: `/auth?token=` (sign in), `/` (the app, or the sign-in page without the cookie),
//! `/assets/*` (the app's files) and `POST /api/<method>` (the unary API, see `api`). Every
//! response carries a strict Content-Security-Policy; the guards are in `guard`.

mod api;
mod approvals;
mod args;
mod demo;
mod files;
mod fold;
mod fold_cache;
mod guard;
mod jobs;
mod live;
mod manage;
mod models;
mod page;
mod questions;
mod router;
mod sessions;
mod settings;
mod socket;
mod store_follow;
#[cfg(test)]
mod test_support;
mod trajectory;
mod trust;
mod views;
mod waiting;

use dsh_protocol::kinds;
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use dsh_plugin_api::io::control::{HOST_SERVICE, HostControlService};
use dsh_plugin_api::io::http_server::{
    HTTP_SERVER_SERVICE, HttpServerService, ListenOptions, RequestHandler_TO,
};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{CMDLINE_SERVICE, CmdlineArgs, LogLevel};

use dsh_agents_seam::{
    AGENT_INBOX_CLAIMED, AGENT_INBOX_DISCARDED, AGENT_INBOX_INSERTED, AGENT_STATUS, AGENTS_SERVICE,
    AgentsService,
};
use dsh_client_protocol::ServerFrame;
use dsh_compaction_seam::{COMPACTION_SERVICE, CompactionService};
use dsh_protocol::{AgentNoticeData, AgentStatus, PermissionPresetEvent, SessionSummary};
use dsh_sessions_seam::{SESSION_CREATED, SESSION_EVENT};

use crate::args::{DEFAULT_PORT, Parsed, USAGE};
use crate::guard::{Guard, Secrets};
use crate::live::Hub;
use crate::router::Router;

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
    /// The model route new sessions use when none is chosen (`PROVIDER/MODEL`).
    pub model: Option<String>,
    /// Where the offline demo writes its recorded log and runs (`!home demo` in the bundle);
    /// without it the demo is not offered.
    pub demo_dir: Option<String>,
    /// The settings document the page writes (`!home settings.yaml` in the bundle), which the
    /// host lays over the profile and watches.
    pub settings_file: Option<String>,
    /// Where the sign-in is kept between launches (`!home web-secret.json` in the bundle,
    /// owner-only): a restart on the same port keeps signed-in pages and the printed link.
    /// Without it every launch draws new secrets.
    pub secret_file: Option<String>,
}

pub struct WebPlugin;

impl Plugin for WebPlugin {
    const NAME: &'static str = "web";
    const INJECT: &'static [&'static str] = &[CMDLINE_SERVICE, HTTP_SERVER_SERVICE, HOST_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_agents_seam::AGENTS_SERVICE,
        dsh_commands_seam::COMMANDS_SERVICE,
        dsh_credentials_seam::CREDENTIALS_SERVICE,
        dsh_llm_seam::LLM_SERVICE,
        dsh_sessions_seam::SESSION_PERSISTENCE_SERVICE,
        dsh_sessions_seam::SESSIONS_SERVICE,
        dsh_trust_seam::TRUST_SERVICE,
        dsh_compaction_seam::COMPACTION_SERVICE,
        dsh_jobs_seam::JOBS_SERVICE,
        dsh_plugin_api::io::subprocess::SUBPROCESS_SERVICE,
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
        // address (for its Host allow-list and cookie name) through the slot below.
        let hub = Arc::new(Hub::new(ctx.clone()));
        follow_the_host(&ctx, &hub)?;
        store_follow::follow_the_store(&ctx, &hub)?;
        let pending = Arc::new(approvals::Pending::default());
        approvals::answer_asks(&ctx, hub.clone(), pending.clone())?;
        let questions = Arc::new(questions::Pending::default());
        questions::answer_questions(&ctx, hub.clone(), questions.clone())?;
        let router = Router::new(
            api::Api {
                ctx: ctx.clone(),
                hub: hub.clone(),
                prompted: std::sync::Mutex::default(),
                pending,
                questions,
                boot_id: secrets.boot_id.clone(),
                cwd,
                remote,
                configured_model: config.model.clone(),
                demo_dir: config.demo_dir.as_ref().map(std::path::PathBuf::from),
                demo_mounted: tokio::sync::Mutex::new(false),
                settings_file: config.settings_file.as_ref().map(std::path::PathBuf::from),
                credentials_writable: !remote || args.allow_remote_settings,
                files: Arc::default(),
                folds: fold_cache::FoldCache::default(),
                presets: dsh_sessions_seam::LatestOf::default(),
            },
            hub,
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

/// Feeds the hub: every committed event (for the sessions clients follow), every session that
/// appears and every agent that starts or stops running (for every client's list).
/// Sends `session`'s token meter to the pages that follow it, as a `session/projection`.
fn push_meter(ctx: &Context, hub: &Arc<Hub>, session: &str) {
    let (ctx, hub, session) = (ctx.clone(), hub.clone(), session.to_owned());
    // Off the event's own dispatch: the meter reads the session's log.
    let _ = ctx.clone().spawn(async move {
        let Ok(Some(compaction)) = ctx.get::<CompactionService>(COMPACTION_SERVICE) else {
            return;
        };
        let Ok(Some(meter)) = compaction.meter(RString::from(session.as_str())).decode() else {
            return;
        };
        let value = serde_json::to_value(meter).unwrap_or_default();
        hub.to_followers(
            &session,
            &ServerFrame::Projection {
                session_id: session.clone(),
                key: "context".to_owned(),
                value,
            },
        );
    });
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// `host/session-added` for a session that just appeared (created, or back from the trash):
/// what the list knows of it before its log is read; the page lists again for the rest.
pub(crate) fn session_added(id: String, live: bool) -> ServerFrame {
    let now = now_ms();
    ServerFrame::SessionAdded {
        session: SessionSummary {
            id,
            cwd: None,
            created_at: now,
            updated_at: now,
            active_at: None,
            title: None,
            live,
            waiting: false,
            archived: false,
            subagent_of: None,
            fork_of: None,
            broken: None,
        },
    }
}

/// A `session/projection` of key `controls`: one of the page's controls (`model`, `preset`)
/// and the session's value for it.
pub(crate) fn controls(session: &str, control: &str, value: &str) -> ServerFrame {
    ServerFrame::Projection {
        session_id: session.to_owned(),
        key: "controls".to_owned(),
        value: serde_json::json!({ control: value }),
    }
}

fn follow_the_host(ctx: &Context, hub: &Arc<Hub>) -> Result<(), PluginError> {
    let (events, meters) = (hub.clone(), ctx.clone());
    ctx.on_emit(&SESSION_EVENT, move |record| {
        events.committed(record);
        // Every page's list marks a session that waits for a person, followed or not.
        let waiting = match record.kind.as_str() {
            kinds::APPROVAL_ASKED | kinds::QUESTION_ASKED => Some(true),
            kinds::APPROVAL_DECIDED | kinds::QUESTION_ANSWERED | kinds::TURN_END => Some(false),
            _ => None,
        };
        if let Some(waiting) = waiting {
            events.broadcast(&ServerFrame::SessionWaiting {
                session_id: record.session.to_string(),
                waiting,
            });
        }
        // The meter moves with each answer (the provider's count) and each compaction; it is
        // worked out only for a session some page follows.
        if matches!(
            record.kind.as_str(),
            kinds::ASSISTANT_MESSAGE | kinds::COMPACTION_END | kinds::TURN_END
        ) && events.is_followed(record.session.as_str())
        {
            push_meter(&meters, &events, record.session.as_str());
        }
        // The page's controls follow the session, whoever changed it (a command, another tab,
        // the API): a preset as it is logged, the model once a command has run.
        if let Some(Ok(preset)) = record.decode::<PermissionPresetEvent>() {
            events.to_followers(
                record.session.as_str(),
                &controls(record.session.as_str(), "preset", &preset.preset),
            );
        }
        if record.kind.as_str() == kinds::COMMAND_DONE
            && events.is_followed(record.session.as_str())
            && let Some(route) = models::current_route(&meters, record.session.as_str())
        {
            events.to_followers(
                record.session.as_str(),
                &controls(record.session.as_str(), "model", &route),
            );
        }
    })?;
    let created = hub.clone();
    ctx.on_emit(&SESSION_CREATED, move |id| {
        created.broadcast(&session_added(id.to_string(), true));
    })?;
    for event in [
        &AGENT_INBOX_INSERTED,
        &AGENT_INBOX_CLAIMED,
        &AGENT_INBOX_DISCARDED,
    ] {
        let (queue, agents) = (hub.clone(), ctx.clone());
        ctx.on_emit(event, move |notice| {
            let Ok(Some(service)) = agents.get::<AgentsService>(AGENTS_SERVICE) else {
                return;
            };
            if let Ok(listing) = service.inbox(notice.agent.clone()).into_result()
                && let Ok(listing) = listing.decode()
            {
                queue.to_followers(
                    notice.agent.as_str(),
                    &ServerFrame::Queue {
                        session_id: notice.agent.to_string(),
                        queue: listing,
                    },
                );
            }
        })?;
    }
    crate::jobs::follow(ctx, hub)?;
    let status = hub.clone();
    ctx.on_emit(&AGENT_STATUS, move |notice| {
        if let Ok(AgentNoticeData::Status { status: state }) = notice.data.decode() {
            status.broadcast(&ServerFrame::SessionStatus {
                session_id: notice.agent.to_string(),
                running: state == AgentStatus::Running,
            });
        }
    })?;
    Ok(())
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
