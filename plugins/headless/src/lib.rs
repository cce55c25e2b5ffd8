//! Plugin `headless`: the one-shot terminal runner. It reads its arguments from the host's
//! `cmdline` service, creates an agent through `agents` (a persisted session, or the resumed
//! one), sends it the task as a followup and waits until the agent is idle (without an agent
//! registry it runs the turn through `agent_loop` directly), prints the final answer on stdout
//! (or, with `--output stream-json`, one line per committed session event and a final `result`
//! line), diagnostics on stderr, and ends the host with the turn's exit code: 0 completed, 1
//! error, 2 usage, 3 blocked, 4 max-tokens, 130 after SIGINT (the turn is cancelled first,
//! with cause `user`), 143 after SIGTERM.
//!
//! Model choice: `--model`, then this row's `model`, then DeepSeek when `DEEPSEEK_API_KEY` is
//! set; with none the turn ends `error` with `NO_MODEL`. `--replay FILE` mounts `llm-replay`
//! on FILE, so a recorded case re-runs with no network and no key.

mod args;
mod output;
mod run;
mod settle;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_agents_seam::{AGENT_LOOP_SERVICE, AGENTS_SERVICE, AgentsService};
use dsh_plugin_api::cancel::first_of;
use dsh_plugin_api::io::control::{HOST_SERVICE, HOST_STOPPING, HostControlService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{CMDLINE_SERVICE, CmdlineArgs, lock};
use dsh_protocol::AbortCause;
use dsh_sessions_seam::{SESSION_EVENT, SESSIONS_SERVICE, SessionsService};

use crate::args::{Parsed, USAGE};
use crate::output::{err, out, print_event};
use crate::run::{Current, Runner};

/// Config of `headless`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct HeadlessConfig {
    /// The model route used when `--model` is not given (`PROVIDER/MODEL`).
    pub model: Option<String>,
}

pub struct HeadlessPlugin;

impl Plugin for HeadlessPlugin {
    const NAME: &'static str = "headless";
    // The agents registry and the loop are reached when used, so a reload of either does not
    // take the run down with it.
    const INJECT: &'static [&'static str] = &[CMDLINE_SERVICE, SESSIONS_SERVICE, HOST_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        AGENTS_SERVICE,
        AGENT_LOOP_SERVICE,
        dsh_jobs_seam::JOBS_SERVICE,
        dsh_subagents_seam::SUBAGENTS_SERVICE,
        dsh_trust_seam::TRUST_SERVICE,
    ];
    type Config = HeadlessConfig;

    async fn apply(ctx: Context, config: HeadlessConfig) -> Result<(), PluginError> {
        let cmdline = ctx.inject::<CmdlineArgs>(CMDLINE_SERVICE)?;
        let args: Vec<String> = cmdline.args.iter().map(|arg| arg.to_string()).collect();
        let current: Arc<Mutex<Current>> = Arc::default();
        let printer = current.clone();
        ctx.on_emit(&SESSION_EVENT, move |record| {
            let mut current = lock(&printer);
            if let Some(early) = &mut current.early {
                early.push((record.session.to_string(), record.json.to_string()));
            } else if current.stream_json
                && current.session.as_deref() == Some(record.session.as_str())
            {
                print_event(record.session.as_str(), &record.json);
            }
        })?;
        let runner = Arc::new(Runner {
            sessions: ctx.inject::<SessionsService>(SESSIONS_SERVICE)?,
            host: ctx.inject::<HostControlService>(HOST_SERVICE)?,
            config_model: config.model,
            current: current.clone(),
            ctx: ctx.clone(),
        });
        // A signal cancels the running turn first (the run, racing its turn against the
        // signal, does it), waits for the run to end, and only then lets the host dispose the
        // tree.
        let stopping = runner.clone();
        ctx.on_parallel(&HOST_STOPPING, move |request| {
            let runner = stopping.clone();
            async move {
                let Some(signal) = request.signal.into_option() else {
                    return;
                };
                let cause = if signal == 2 {
                    AbortCause::User
                } else {
                    AbortCause::Disposed
                };
                let done = {
                    let mut current = lock(&runner.current);
                    current.stop = Some(cause);
                    current.stopped.fire();
                    current.done.clone()
                };
                done.wait().await;
                runner.exit(if signal == 2 { 130 } else { 143 });
            }
        })?;
        let done = lock(&current).done.clone();
        // Unloaded before the run ended (a service it needs went away, its row was edited):
        // the one-shot run is over, and the host must not stay up without it. Its turn is
        // cancelled first and given a moment to close its log, as for a signal.
        let (unloaded, ended) = (runner.clone(), done.clone());
        ctx.effect(move || async move {
            let session = {
                let current = lock(&unloaded.current);
                if ended.is_fired() || current.stop.is_some() {
                    return;
                }
                current.session.clone()
            };
            err("dsh: the headless runner was unloaded before its run ended");
            if let Some(session) = session
                && let Ok(Some(agents)) = unloaded.ctx.get::<AgentsService>(AGENTS_SERVICE)
            {
                let cause = Json::encode(&AbortCause::Disposed);
                let _ = agents.cancel(session.as_str().into(), cause, false);
                let idle = agents.when_idle(session.as_str().into());
                drop(agents);
                let _ = first_of(idle, unloaded.ctx.sleep(Duration::from_secs(5))).await;
            }
            unloaded.exit(1);
        })?;
        let task = runner.clone();
        ctx.spawn(async move {
            let code = match args::parse(&args) {
                Ok(Parsed::Help) => {
                    out(USAGE);
                    0
                }
                Ok(Parsed::Run(args)) => task.run(args).await,
                Err(error) => {
                    err(&format!("dsh: {error}\n\n{USAGE}"));
                    2
                }
            };
            done.fire();
            task.exit(code);
        })
    }
}

dsh_plugin_api::export_plugins!(HeadlessPlugin);
