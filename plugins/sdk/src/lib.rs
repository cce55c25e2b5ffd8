//! Plugin `sdk`: the SDK runtime of `dsh-host --profile sdk`, newline-delimited JSON-RPC 2.0
//! on stdio with stdout carrying frames only. It speaks the reference's SDK protocol: requests
//! `initialize{cwd, provider, model, maxTokens?}` → `{serverInfo}`, `session/prompt{sessionId,
//! contentBlocks}` → `{messageId}` (an unknown id creates an agent and a session with that id)
//! and `shutdown` → `{}`; notifications `session.event` (every committed event of every
//! session), `session.status`, `subagent.started` and `subagent.finished`.
//!
//! Beyond the reference: a line that is not JSON is answered `-32700` and the connection lives,
//! an unknown method `-32601` naming it, bad params `-32602` naming the field, a second prompt
//! on a running session `-32001` (`agent-busy`); the end of stdin cancels every running turn
//! (each closes its log `aborted`) and ends the host with 0, SIGINT and SIGTERM do the same
//! with 130 and 143. `--replay FILE` mounts `llm-replay`, so a recorded case re-runs keyless.
//! Methods the runtime does not own go to one fallback (`methods::clients_fallback`), where the
//! client protocol's service will take them over.

mod args;
mod door;
mod follow;
#[doc(hidden)]
pub mod fuzzing;
mod methods;
mod server;

use std::io::Write;
use std::sync::{Arc, Mutex};

use dsh_agents_seam::{AGENT_REQUEST, AGENTS_SERVICE};
use dsh_plugin_api::io::control::{HOST_SERVICE, HOST_STOPPING, HostControlService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{CMDLINE_SERVICE, CmdlineArgs, lock};
use dsh_protocol::{AbortCause, GenerateRequest};

use crate::args::{Parsed, USAGE};
use crate::follow::{Book, Follow};
use crate::server::{Flow, Server};
use dsh_json_rpc::wire::{MAX_LINE, Out, read_line};

/// Config of `sdk`.
#[derive(Deserialize, JsonSchema)]
#[serde(
    crate = "dsh_plugin_api::serde",
    default,
    deny_unknown_fields,
    rename_all = "camelCase"
)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct SdkConfig {
    /// `subagent.finished` reports a child that ended `max-tokens` as `ok` (the reference's
    /// SDK composition does).
    pub max_tokens_as_success: bool,
}

impl Default for SdkConfig {
    fn default() -> Self {
        Self {
            max_tokens_as_success: true,
        }
    }
}

fn err(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

pub struct SdkPlugin;

impl Plugin for SdkPlugin {
    const NAME: &'static str = "sdk";
    // The agents registry and the model seam are reached when used, so a reload of either
    // does not take the runtime down with it.
    const INJECT: &'static [&'static str] = &[CMDLINE_SERVICE, HOST_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        AGENTS_SERVICE,
        dsh_llm_seam::LLM_SERVICE,
        dsh_clients_seam::CLIENTS_SERVICE,
    ];
    type Config = SdkConfig;

    async fn apply(ctx: Context, config: SdkConfig) -> Result<(), PluginError> {
        let cmdline = ctx.inject::<CmdlineArgs>(CMDLINE_SERVICE)?;
        let argv: Vec<String> = cmdline.args.iter().map(|arg| arg.to_string()).collect();
        let args = match args::parse(&argv) {
            Ok(Parsed::Serve(args)) => args,
            Ok(Parsed::Help) => {
                err(USAGE);
                let host = ctx.inject::<HostControlService>(HOST_SERVICE)?;
                host.exit(0);
                return Ok(());
            }
            Err(error) => {
                err(&format!("dsh: {error}\n\n{USAGE}"));
                let host = ctx.inject::<HostControlService>(HOST_SERVICE)?;
                host.exit(2);
                return Ok(());
            }
        };
        let mut book = Book::default();
        book.max_tokens_as_success = config.max_tokens_as_success;
        let follow = Follow {
            book: Arc::new(Mutex::new(book)),
            out: Arc::new(Out::new(Box::new(std::io::stdout()))),
        };
        follow.listen(&ctx)?;
        cap_output(&ctx, &follow)?;
        let server = Arc::new(Server {
            ctx: ctx.clone(),
            host: ctx.inject::<HostControlService>(HOST_SERVICE)?,
            follow,
            args,
            state: Mutex::default(),
            door: door::Door::default(),
        });
        // A signal cancels every running turn and waits for their logs to close before the
        // host disposes the tree.
        let stopping = server.clone();
        ctx.on_parallel(&HOST_STOPPING, move |request| {
            let server = stopping.clone();
            async move {
                let Some(signal) = request.signal.into_option() else {
                    return;
                };
                let (cause, code) = match signal {
                    2 => (AbortCause::User, 130),
                    _ => (AbortCause::Disposed, 143),
                };
                server.stop(cause).await;
                server.exit(code);
            }
        })?;
        let serving = server.clone();
        ctx.spawn(async move {
            let code = serve(&serving).await;
            serving.exit(code);
        })
    }
}

/// Reads stdin until `shutdown` or its end; answers the exit code.
async fn serve(server: &Server) -> i32 {
    if let Some(log) = &server.args.replay
        && let Err(error) = server.replay(log).await
    {
        err(&format!("dsh: {error}"));
        return 2;
    }
    server.door_open().await;
    loop {
        // One line at a time off the runtime's threads; stdin's own buffer keeps what follows.
        let read = server
            .ctx
            .blocking(|| read_line(&mut std::io::stdin().lock(), MAX_LINE))
            .await;
        let line = match read {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => break,
            Ok(Err(error)) => {
                err(&format!("dsh: stdin: {error}"));
                break;
            }
            Err(error) => {
                err(&format!("dsh: stdin: {error}"));
                break;
            }
        };
        if server.line(line).await == Flow::Exit {
            return 0;
        }
    }
    // The client went away: what it started is cancelled and its logs closed.
    server.stop(AbortCause::Disposed).await;
    0
}

/// `initialize.maxTokens` caps every model request of the SDK's sessions and their children.
fn cap_output(ctx: &Context, follow: &Follow) -> Result<(), PluginError> {
    let book = follow.book.clone();
    ctx.on_waterfall(&AGENT_REQUEST, move |next| {
        let book = book.clone();
        async move {
            let session = next.payload().session.to_string();
            let shaped = next.run().await?;
            let cap = {
                let book = lock(&book);
                book.max_tokens.filter(|_| book.is_ours(&session))
            };
            let Some(cap) = cap else {
                return Ok(shaped);
            };
            let mut request: GenerateRequest = shaped
                .decode()
                .map_err(|error| PluginError::plugin(format!("agent/request: {error}")))?;
            let capped = request.config.max_tokens.map_or(cap, |own| own.min(cap));
            request.config.max_tokens = Some(capped);
            Ok(Json::encode(&request))
        }
    })
}

dsh_plugin_api::export_plugins!(SdkPlugin);
