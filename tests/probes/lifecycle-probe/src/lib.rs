//! Test plugins that make the runtime's rules visible on stdout, one export per rule:
//! disposer order and concurrency, recursive dispose, contained panics (apply, listener,
//! disposer), the five dispatch modes, a waterfall stress run, a mode clash, and a stale context
//! after a reload.
//! The integration tests run them through the real `dsh-host` and read what they print.

use std::io::Write;
use std::sync::{Arc, Mutex};

use dsh_plugin_api::prelude::*;
use dsh_plugin_api::serde_json;

mod modes;
mod stress;
pub use modes::*;
pub use stress::*;

pub(crate) fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// `probe/ping`: an emit event with a string payload.
pub const PING: EmitEvent<RString> = EmitEvent::new("probe/ping");
/// The same name declared as a waterfall, to clash with `PING`.
pub const PING_AS_WATERFALL: WaterfallEvent<RString, RString> = WaterfallEvent::new("probe/ping");

/// Disposers A, B (async) and C (sync), registered in that order. At unload C starts first,
/// then B, then A; B can only finish after A has started, so a sequential unload would hang.
pub struct Disposers;

impl Plugin for Disposers {
    const NAME: &'static str = "disposers";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let a_started = Arc::new(Rendezvous::default());
        let signal = a_started.clone();
        ctx.effect(move || async move {
            say("A start");
            signal.open();
            say("A done");
        })?;
        let wait = a_started.clone();
        ctx.effect(move || async move {
            say("B start");
            wait.wait().await;
            say("B done");
        })?;
        ctx.on_dispose(|| say("C sync"))?;
        say("disposers registered");
        Ok(())
    }
}

/// A one-shot gate built on a waker only (no reactor needed in the plugin).
#[derive(Default)]
pub struct Rendezvous {
    state: Mutex<(bool, Vec<std::task::Waker>)>,
}

impl Rendezvous {
    pub fn open(&self) {
        let wakers = match self.state.lock() {
            Ok(mut state) => {
                state.0 = true;
                std::mem::take(&mut state.1)
            }
            Err(_) => Vec::new(),
        };
        wakers.into_iter().for_each(std::task::Waker::wake);
    }

    pub async fn wait(&self) {
        std::future::poll_fn(|cx| match self.state.lock() {
            Ok(state) if state.0 => std::task::Poll::Ready(()),
            Ok(mut state) => {
                state.1.push(cx.waker().clone());
                std::task::Poll::Pending
            }
            Err(_) => std::task::Poll::Ready(()),
        })
        .await
    }
}

/// Config of `tree`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct TreeConfig {
    /// Levels of children below this one.
    pub depth: u32,
}

impl Default for TreeConfig {
    fn default() -> Self {
        Self { depth: 2 }
    }
}

/// Mounts a child `tree` with `depth - 1`; each level's disposer prints `disposed level N`.
pub struct Tree;

impl Plugin for Tree {
    const NAME: &'static str = "tree";
    type Config = TreeConfig;

    async fn apply(ctx: Context, config: TreeConfig) -> Result<(), PluginError> {
        let depth = config.depth;
        ctx.on_dispose(move || say(&format!("disposed level {depth}")))?;
        if depth > 0 {
            ctx.mount(
                "lifecycle-probe/tree",
                &serde_json::json!({ "depth": depth - 1 }),
            )?;
        }
        say(&format!("applied level {depth}"));
        Ok(())
    }
}

/// Panics in `apply`: the fiber is FAILED, the host lives on.
pub struct PanicApply;

impl Plugin for PanicApply {
    const NAME: &'static str = "panic-apply";
    type Config = NoConfig;

    async fn apply(_ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        if std::hint::black_box(true) {
            panic!("apply exploded on purpose");
        }
        Ok(())
    }
}

/// Two `probe/ping` listeners, the first panics; dispatching still reaches the second.
pub struct PanicListener;

impl Plugin for PanicListener {
    const NAME: &'static str = "panic-listener";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.on_emit(&PING, |payload: &RString| {
            if payload.as_str() == "ping" {
                panic!("listener exploded on purpose");
            }
        })?;
        ctx.on_emit(&PING, |payload: &RString| {
            say(&format!("second listener got {payload}"))
        })?;
        ctx.emit(&PING, &RString::from("ping"))?;
        Ok(())
    }
}

/// A disposer that panics next to one that does not: the unload completes, both are started.
pub struct PanicDispose;

impl Plugin for PanicDispose {
    const NAME: &'static str = "panic-dispose";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.on_dispose(|| say("other disposer ran"))?;
        ctx.on_dispose(|| panic!("disposer exploded on purpose"))?;
        Ok(())
    }
}

/// Declares `probe/ping` as a waterfall: refused when it is already an emit event.
pub struct ModeClash;

impl Plugin for ModeClash {
    const NAME: &'static str = "mode-clash";
    const INJECT: &'static [&'static str] = &["probe-ready"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.on_waterfall(
            &PING_AS_WATERFALL,
            |next: Next<RString, RString>| async move {
                let payload = next.payload();
                Ok((*payload).clone())
            },
        )
    }
}

/// Provides `probe-ready` after registering a `probe/ping` emit listener, so `mode-clash` runs
/// strictly after the event is declared.
pub struct PingDeclarer;

impl Plugin for PingDeclarer {
    const NAME: &'static str = "ping-declarer";
    const PROVIDES: &'static [&'static str] = &["probe-ready"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.on_emit(&PING, |_payload: &RString| {})?;
        ctx.provide("probe-ready", RString::from("yes"))
    }
}

static STALE: Mutex<Option<Context>> = Mutex::new(None);

/// Injects `greeter` and keeps its context; when applied again (after its provider was
/// replaced) it tries to register through the old one and prints the refusal.
pub struct Stale;

impl Plugin for Stale {
    const NAME: &'static str = "stale";
    const INJECT: &'static [&'static str] = &["greeter"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let previous = STALE
            .lock()
            .ok()
            .and_then(|mut slot| slot.replace(ctx.clone()));
        match previous {
            Some(old) => match old.on_emit(&PING, |_payload: &RString| {}) {
                Ok(()) => say("stale context accepted a registration"),
                Err(error) => say(&format!("stale context refused: {error}")),
            },
            None => say("stale: first apply"),
        }
        Ok(())
    }
}

/// Requires a service nobody provides; shows PENDING with the missing name.
pub struct NeedsNothingThere;

impl Plugin for NeedsNothingThere {
    const NAME: &'static str = "needs-missing";
    const INJECT: &'static [&'static str] = &["no-such-service"];
    type Config = NoConfig;

    async fn apply(_ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        Ok(())
    }
}

/// Prints the application arguments the host passed through the `cmdline` service.
pub struct CmdlineEcho;

impl Plugin for CmdlineEcho {
    const NAME: &'static str = "cmdline-echo";
    const INJECT: &'static [&'static str] = &["cmdline"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let cmdline = ctx.inject::<dsh_plugin_api::CmdlineArgs>("cmdline")?;
        let args: Vec<String> = cmdline.args.iter().map(|arg| format!("[{arg}]")).collect();
        say(&format!("app args: {}", args.join(" ")));
        Ok(())
    }
}

/// Looks `cmdline` up without declaring it: a debug build refuses, and the refusal is printed.
pub struct PeekUndeclared;

impl Plugin for PeekUndeclared {
    const NAME: &'static str = "peek-undeclared";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        say(&peek(&ctx, "peek-undeclared"));
        Ok(())
    }
}

/// Looks `cmdline` up having declared it in `OPTIONAL`: answered.
pub struct PeekOptional;

impl Plugin for PeekOptional {
    const NAME: &'static str = "peek-optional";
    const OPTIONAL: &'static [&'static str] = &["cmdline"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        say(&peek(&ctx, "peek-optional"));
        Ok(())
    }
}

fn peek(ctx: &Context, name: &str) -> String {
    match ctx.get::<dsh_plugin_api::CmdlineArgs>("cmdline") {
        Ok(Some(_)) => format!("{name}: answered"),
        Ok(None) => format!("{name}: absent"),
        Err(error) => format!("{name}: refused: {error}"),
    }
}

static ECHO_APPLIES: Mutex<u32> = Mutex::new(0);

/// Injects `greeter`; each apply registers a `probe/ping` listener, spawns a task, mounts a
/// child, then pings once. A listener left behind by an earlier apply would answer a later
/// ping with an older number: the line `echo N got ping M` with N != M is a double delivery.
pub struct EchoListener;

impl Plugin for EchoListener {
    const NAME: &'static str = "echo-listener";
    const INJECT: &'static [&'static str] = &["greeter"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let round = ECHO_APPLIES
            .lock()
            .map(|mut count| {
                *count += 1;
                *count
            })
            .unwrap_or(0);
        ctx.on_emit(&PING, move |payload: &RString| {
            say(&format!("echo {round} got ping {payload}"))
        })?;
        let sleeper = ctx.clone();
        ctx.spawn(async move {
            loop {
                sleeper.sleep(std::time::Duration::from_secs(3600)).await;
            }
        })?;
        ctx.mount("lifecycle-probe/tree", &serde_json::json!({ "depth": 0 }))?;
        ctx.emit(&PING, &RString::from(round.to_string()))?;
        Ok(())
    }
}

/// A disposer that never finishes: shutdown names the fiber after the grace period.
pub struct StuckDisposer;

impl Plugin for StuckDisposer {
    const NAME: &'static str = "stuck-disposer";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.on_emit(&PING, |_payload: &RString| {})?;
        ctx.effect(std::future::pending::<()>)?;
        say("stuck disposer registered");
        Ok(())
    }
}

/// `probe/ping` with a `u64` payload: refused where it is declared with a string.
pub const PING_AS_NUMBER: EmitEvent<u64> = EmitEvent::new("probe/ping");

/// Registers `probe/ping` with the wrong payload type.
pub struct LayoutClash;

impl Plugin for LayoutClash {
    const NAME: &'static str = "layout-clash";
    const INJECT: &'static [&'static str] = &["probe-ready"];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.on_emit(&PING_AS_NUMBER, |_payload: &u64| {})
    }
}

/// Config of `http-get`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct HttpGetConfig {
    pub url: String,
}

/// Fetches `url` through the host's `http` service and prints the status and the body.
pub struct HttpGet;

impl Plugin for HttpGet {
    const NAME: &'static str = "http-get";
    const INJECT: &'static [&'static str] = &["http"];
    type Config = HttpGetConfig;

    async fn apply(ctx: Context, config: HttpGetConfig) -> Result<(), PluginError> {
        use dsh_plugin_api::io::http::{HttpRequest, HttpService};
        let http = ctx.inject::<HttpService>("http")?;
        let request = HttpRequest {
            method: "GET".into(),
            url: config.url.as_str().into(),
            headers: Default::default(),
            body: Default::default(),
            head_timeout_ms: 10_000,
        };
        let response = http
            .send(request)
            .await
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .body
            .next_chunk(10_000)
            .await
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?
            .into_option()
        {
            body.extend_from_slice(&chunk);
        }
        say(&format!(
            "http {} {}",
            response.status,
            String::from_utf8_lossy(&body)
        ));
        Ok(())
    }
}

/// Config of `run`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct RunConfig {
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Terminate the process group this long after the start instead of waiting for the exit.
    #[serde(default)]
    pub terminate_after_ms: Option<u64>,
}

/// Runs a process through the host's `subprocess` service and prints its output and exit.
pub struct Run;

impl Plugin for Run {
    const NAME: &'static str = "run";
    const INJECT: &'static [&'static str] = &["subprocess"];
    type Config = RunConfig;

    async fn apply(ctx: Context, config: RunConfig) -> Result<(), PluginError> {
        use dsh_plugin_api::io::subprocess::{OutputStream, SpawnRequest, SubprocessService};
        let launcher = ctx.inject::<SubprocessService>("subprocess")?;
        let request = SpawnRequest {
            program: config.program.as_str().into(),
            args: config
                .args
                .iter()
                .map(|arg| RString::from(arg.as_str()))
                .collect(),
            ..SpawnRequest::default()
        };
        let process = launcher
            .spawn(request)
            .into_result()
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        say(&format!("run pid {}", process.pid()));
        let status = match config.terminate_after_ms {
            Some(after) => {
                ctx.sleep(std::time::Duration::from_millis(after)).await;
                process.terminate(500).await
            }
            None => {
                while let dsh_plugin_api::ROption::RSome(chunk) = process.next_output().await {
                    let stream = if chunk.stream == OutputStream::Stdout {
                        "stdout"
                    } else {
                        "stderr"
                    };
                    say(&format!(
                        "run {stream}: {}",
                        String::from_utf8_lossy(&chunk.bytes).trim_end()
                    ));
                }
                process.wait().await
            }
        }
        .into_result()
        .map_err(|error| PluginError::plugin(error.to_string()))?;
        say(&format!(
            "run exit code {:?} signal {:?}",
            status.code.into_option(),
            status.signal.into_option()
        ));
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(
    Run,
    HttpGet,
    StuckDisposer,
    LayoutClash,
    CmdlineEcho,
    EchoListener,
    Disposers,
    Tree,
    PanicApply,
    PanicListener,
    PanicDispose,
    ModeClash,
    PingDeclarer,
    Modes,
    WaterfallStress,
    WaterfallKeeper,
    Stale,
    NeedsNothingThere,
    PeekUndeclared,
    PeekOptional,
);
