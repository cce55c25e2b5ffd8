//! Plugin `headless`: the one-shot terminal runner. It reads its arguments from the host's
//! `cmdline` service, creates an agent through `agents` (a persisted session, or the resumed
//! one), sends it the task as a followup and waits until the agent is idle (without an agent
//! registry it runs the turn through `agent_loop` directly), prints the final answer on stdout (or, with `--output stream-json`, one line
//! per committed session event and a final `result` line), diagnostics on stderr, and ends the
//! host with the turn's exit code: 0 completed, 1 error, 2 usage, 3 blocked, 4 max-tokens,
//! 130 after SIGINT (the turn is cancelled first, with cause `user`), 143 after SIGTERM.
//!
//! Model choice: `--model`, then this row's `model`, then DeepSeek when `DEEPSEEK_API_KEY` is
//! set; with none the turn ends `error` with `NO_MODEL`. `--replay FILE` mounts `llm-replay`
//! on FILE, so a recorded case re-runs with no network and no key.

mod args;

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RSome, RString, RVec};
use dsh_agent_seam::{AGENT_LOOP, AGENTS, AgentLoopService, AgentsService, TurnRequest};
use dsh_plugin_api::io::control::{HOST_CONTROL, HOST_STOPPING, HostControlService};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{CmdlineArgs, Service, lock};
use dsh_session_seam::{CreateSession, SESSION_EVENT, SESSIONS, SessionsService};
use dsh_tools_seam::{CancelFlag, first_of};
use serde_json::{Value, json};

use crate::args::{Args, Output, Parsed, USAGE};

/// Config of `headless`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct HeadlessConfig {
    /// The model route used when `--model` is not given (`PROVIDER/MODEL`).
    pub model: Option<String>,
}

fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

fn err(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

/// One `session_event` line of the stream-json output.
fn print_event(session: &str, json: &str) {
    let event: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    out(&json!({"type": "session_event", "sessionId": session, "event": event}).to_string());
}

/// The run in progress, for the stop listener and the event printer.
#[derive(Default)]
struct Current {
    /// The session whose events are printed (stream-json) and whose turn a signal cancels.
    session: Option<String>,
    stream_json: bool,
    /// Fired when the run has printed its result.
    done: Option<Arc<CancelFlag>>,
    /// With stream-json, the events committed before the run knew its session id.
    early: Option<Vec<(String, String)>>,
    /// A signal arrived: the cause its turn is (or would be) cancelled with.
    stop: Option<&'static str>,
}

struct Runner {
    ctx: Context,
    sessions: Service<SessionsService>,
    host: Service<HostControlService>,
    config_model: Option<String>,
    current: Arc<Mutex<Current>>,
}

/// The model route, in the documented order of preference.
fn choose_model(args: &Args, config: Option<&str>) -> Result<(String, String), String> {
    if let Some(route) = &args.model {
        return Ok(route.clone());
    }
    if args.replay.is_some() {
        return Ok(("replay".to_owned(), "replay".to_owned()));
    }
    if let Some(route) = config {
        return args::split_route(route).map_err(|error| format!("row config `model`: {error}"));
    }
    if std::env::var_os("DEEPSEEK_API_KEY").is_some_and(|key| !key.is_empty()) {
        return Ok((
            "deepseek-official".to_owned(),
            "deepseek-v4-flash".to_owned(),
        ));
    }
    Ok((String::new(), String::new()))
}

/// The exit code of a turn's end reason.
fn exit_code(reason: &Value) -> i32 {
    match reason["kind"].as_str() {
        Some("completed") => 0,
        Some("blocked") => 3,
        Some("max-tokens") => 4,
        Some("aborted") if reason["reason"]["kind"] == "user" => 130,
        _ => 1,
    }
}

/// Ends the early buffering of a run when it is dropped.
struct StopBuffering(Arc<Mutex<Current>>);

impl Drop for StopBuffering {
    fn drop(&mut self) {
        lock(&self.0).early = None;
    }
}

/// What the turn runs with.
struct Route {
    cwd: String,
    provider: String,
    model: String,
}

impl Runner {
    /// A new agent (or the resumed one) through the registry; answers its id.
    async fn start_agent(
        &self,
        agents: &AgentsService,
        args: &Args,
        route: &Route,
    ) -> Result<String, String> {
        let mut options =
            json!({"cwd": route.cwd, "provider": route.provider, "model": route.model});
        if let Some(id) = &args.resume {
            options["resume"] = json!(id);
        }
        agents
            .create(options.to_string().into())
            .await
            .into_result()
            .map(RString::into_string)
            .map_err(RString::into_string)
    }

    /// A session without an agent registry; answers its id.
    async fn open_session(&self, args: &Args, route: &Route) -> Result<String, String> {
        let session = match &args.resume {
            Some(id) => self.sessions.open(id.as_str().into()).await,
            None => {
                self.sessions
                    .create(CreateSession {
                        cwd: RSome(route.cwd.as_str().into()),
                        ..CreateSession::default()
                    })
                    .await
            }
        };
        session
            .into_result()
            .map(|session| session.id().into_string())
            .map_err(|error| error.to_string())
    }

    /// Cancels the run's turn; false when there is nothing to cancel yet.
    fn cancel(&self, session: &str, cause: &str) -> bool {
        match self.ctx.get::<AgentsService>(AGENTS) {
            Ok(Some(agents)) => agents
                .cancel(session.into(), cause.into(), false)
                .into_result()
                .is_ok(),
            _ => match self.ctx.get::<AgentLoopService>(AGENT_LOOP) {
                Ok(Some(driver)) => driver.cancel(session.into(), RString::from(cause)),
                _ => false,
            },
        }
    }

    async fn run(&self, args: Args) -> i32 {
        if args.output == Output::StreamJson {
            lock(&self.current).early = Some(Vec::new());
        }
        // However the run ends, nothing is buffered after it.
        let _stop_buffering = StopBuffering(self.current.clone());
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        let cwd = match cwd.canonicalize() {
            Ok(dir) if dir.is_dir() => dir,
            _ => {
                err(&format!("dsh: --cwd {}: not a directory", cwd.display()));
                return 2;
            }
        };
        if let Some(log) = &args.replay {
            if !log.is_file() {
                err(&format!("dsh: --replay {}: no such file", log.display()));
                return 2;
            }
            let log = log.canonicalize().unwrap_or_else(|_| log.clone());
            if let Err(error) = self.ctx.mount("llm-replay", &json!({"log": log})) {
                err(&format!("dsh: --replay: {error}"));
                return 1;
            }
            // The mount is scheduled, not done: wait until the replay listens.
            let mut ready = false;
            for _ in 0..500 {
                if matches!(self.ctx.get::<RString>("llm_replay"), Ok(Some(_))) {
                    ready = true;
                    break;
                }
                self.ctx.sleep(std::time::Duration::from_millis(10)).await;
            }
            if !ready {
                err("dsh: --replay: the llm-replay plugin did not start within 5 s");
                return 1;
            }
        }
        let (provider, model) = match choose_model(&args, self.config_model.as_deref()) {
            Ok(route) => route,
            Err(error) => {
                err(&format!("dsh: {error}"));
                return 2;
            }
        };
        let route = Route {
            cwd: cwd.to_string_lossy().into_owned(),
            provider,
            model,
        };
        let agents = match self.ctx.get::<AgentsService>(AGENTS) {
            Ok(Some(agents)) => Some(agents),
            _ => None,
        };
        let started = match &agents {
            Some(agents) => self.start_agent(agents, &args, &route).await,
            None => self.open_session(&args, &route).await,
        };
        let id = match started {
            Ok(id) => id,
            Err(error) => {
                err(&format!("dsh: {error}"));
                return 1;
            }
        };
        {
            let mut current = lock(&self.current);
            // What the run logged before it knew its session (a plugin may stage context when
            // the agent's session starts) is printed first, under the printer's lock, so the
            // stream keeps the log's order.
            for (session, json) in current.early.take().unwrap_or_default() {
                if session == id {
                    print_event(&session, &json);
                }
            }
            if let Some(cause) = current.stop {
                // A signal came before the turn started: nothing to cancel, nothing to run.
                err(&format!(
                    "dsh: stopped before the turn started; session {id}"
                ));
                return if cause == "user" { 130 } else { 143 };
            }
            current.session = Some(id.clone());
            current.stream_json = args.output == Output::StreamJson;
        }
        let outcome = match agents {
            // The task is a followup: queued on next-turn (logged), it wakes the idle agent,
            // whose driver runs the turn that claims it.
            Some(agents) => {
                let message = json!({
                    "content": [{"type": "text", "text": args.task}],
                    "source": {"kind": "user"},
                    "role": "user",
                });
                let sent = agents
                    .followup(id.as_str().into(), message.to_string().into())
                    .into_result();
                if let Err(error) = sent {
                    err(&format!("dsh: {error}"));
                    return 1;
                }
                // The registry is not held while waiting: if its row unloads, the wait ends.
                let idle = agents.when_idle(id.as_str().into());
                drop(agents);
                match idle.await.into_result() {
                    Ok(outcome) => outcome,
                    Err(error) => {
                        err(&format!("dsh: {error}"));
                        return 1;
                    }
                }
            }
            // Without an agent registry the turn takes the task directly.
            None => {
                let Ok(Some(driver)) = self.ctx.get::<AgentLoopService>(AGENT_LOOP) else {
                    err("dsh: neither an `agents` nor an `agent_loop` service is mounted");
                    return 1;
                };
                driver
                    .run_turn(TurnRequest {
                        session: id.as_str().into(),
                        input: args.task.as_str().into(),
                        provider: route.provider.as_str().into(),
                        model: route.model.as_str().into(),
                        cwd: route.cwd.as_str().into(),
                        scope: RVec::new(),
                    })
                    .await
            }
        };
        let outcome: Value = serde_json::from_str(&outcome).unwrap_or(Value::Null);
        lock(&self.current).stream_json = false;
        let reason = &outcome["reason"];
        if reason["kind"] == "error" {
            let code = reason["error"]["code"].as_str().unwrap_or("ERROR");
            let message = reason["error"]["message"]
                .as_str()
                .unwrap_or("the turn failed");
            err(&format!("dsh: {code}: {message}"));
        }
        let output = outcome["output"].as_str().unwrap_or_default();
        match args.output {
            Output::Text => {
                if !output.is_empty() {
                    out(output);
                }
            }
            Output::StreamJson => out(
                &json!({"type": "result", "sessionId": id, "output": output, "usage": outcome["usage"]})
                    .to_string(),
            ),
        }
        err(&format!("dsh: session {id}"));
        exit_code(reason)
    }
}

pub struct HeadlessPlugin;

impl Plugin for HeadlessPlugin {
    const NAME: &'static str = "headless";
    // The agents registry and the loop are reached when used, so a reload of either does not
    // take the run down with it.
    const INJECT: &'static [&'static str] = &["cmdline", SESSIONS, HOST_CONTROL];
    const OPTIONAL: &'static [&'static str] = &[AGENTS, AGENT_LOOP];
    type Config = HeadlessConfig;

    async fn apply(ctx: Context, config: HeadlessConfig) -> Result<(), PluginError> {
        let cmdline = ctx.inject::<CmdlineArgs>("cmdline")?;
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
            sessions: ctx.inject::<SessionsService>(SESSIONS)?,
            host: ctx.inject::<HostControlService>(HOST_CONTROL)?,
            config_model: config.model,
            current: current.clone(),
            ctx: ctx.clone(),
        });
        // A signal cancels the running turn first, waits for it to close its log, and only
        // then lets the host dispose the tree.
        let stopping = runner.clone();
        ctx.on_parallel(&HOST_STOPPING, move |request| {
            let runner = stopping.clone();
            async move {
                let Some(signal) = request.signal.into_option() else {
                    return;
                };
                let cause = if signal == 2 { "user" } else { "disposed" };
                let done = {
                    let mut current = lock(&runner.current);
                    current.stop = Some(cause);
                    current.done.clone()
                };
                // The turn may not be registered yet (its session is being created): ask again
                // until it is cancelled or the run is over, within the shutdown grace.
                for _ in 0..450 {
                    if done.as_ref().is_some_and(|done| done.is_fired()) {
                        break;
                    }
                    let session = lock(&runner.current).session.clone();
                    if let Some(session) = session
                        && runner.cancel(&session, cause)
                    {
                        break;
                    }
                    runner.ctx.sleep(std::time::Duration::from_millis(10)).await;
                }
                if let Some(done) = done {
                    done.wait().await;
                }
                runner.host.exit(if signal == 2 { 130 } else { 143 });
            }
        })?;
        let done = CancelFlag::new();
        lock(&current).done = Some(done.clone());
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
                && let Ok(Some(agents)) = unloaded.ctx.get::<AgentsService>(AGENTS)
            {
                let _ = agents.cancel(session.as_str().into(), "disposed".into(), false);
                let idle = agents.when_idle(session.as_str().into());
                drop(agents);
                let _ = first_of(idle, unloaded.ctx.sleep(std::time::Duration::from_secs(5))).await;
            }
            unloaded.host.exit(1);
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
            task.host.exit(code);
        })
    }
}

dsh_plugin_api::export_plugins!(HeadlessPlugin);
