//! Plugin `tool-bash`: registers the `bash` tool with the `tools` service. Each call runs
//! `bash -c <command>` in a process group of its own through the `sandbox` service,
//! in `workdir` (relative to the call's working directory), with the inherited `DSH_*`
//! variables stripped and the managed ones set. Output keeps the last 64,000 bytes of each
//! stream; a timeout or a cancellation terminates the whole group (SIGTERM, SIGKILL after the
//! grace period). The result text follows the reference's shell rendering, `[exit code: N]`
//! last. The process starts through the `sandbox` service, confined by the session's policy
//! (or refused when it cannot be): the tool waits for that service and is not offered without
//! it. Running commands as the user is the sandbox's `danger-full-access` mode, not a bypass.
//! With `run_in_background` the command becomes a job of the `jobs` registry (see
//! `background`) and the call answers at once; without that registry the call says so. A
//! foreground command of a full-access session whose client runs its commands runs in the
//! client's terminal instead (`client_terminal`).

mod background;
mod client_terminal;
mod output;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RNone, ROption, RSome, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_jobs_seam::{JOBS_SERVICE, JobsService};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::io::subprocess::{EnvVar, OutputStream, SpawnRequest};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{SeamError, Serialize, Service, lock};
use dsh_protocol::{
    Concurrency, ContentBlock, Guidance, OutcomeSummary, SandboxMode, ToolDecl, ToolReply,
    ToolSuccess,
};
use dsh_sandbox_seam::{SANDBOX_SERVICE, SandboxService};
use dsh_tools_core::{
    DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SHELL_TIMEOUT_MS, ExitStatus, MAX_SHELL_TIMEOUT_MS, ShellRun,
    clamp_timeout_ms, limit_reached, render_shell_result,
};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};
use serde_json::{Value, json};

use crate::output::Tail;

/// Config of `tool-bash`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct BashConfig {
    /// Timeout of a call that gives none (ms).
    pub timeout_ms: u64,
    /// Bytes kept of each stream (the tail).
    pub max_output_bytes: usize,
    /// How long a terminated group gets between SIGTERM and SIGKILL (ms).
    pub kill_grace_ms: u64,
}

impl Default for BashConfig {
    fn default() -> Self {
        Self {
            timeout_ms: DEFAULT_SHELL_TIMEOUT_MS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            kill_grace_ms: 3_000,
        }
    }
}

const DESCRIPTION: &str = "Run a shell command with bash in a fresh process (no state is kept between calls). \
Use `workdir` instead of `cd`. Output is the tail of stdout, then stderr under a [stderr] line; \
a non-zero exit is reported as [exit code: N]. Long commands are stopped after timeoutMs.";

fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, run with bash -c."},
            "description": {"type": "string", "description": "What the command does, in 5-10 words."},
            "timeoutMs": {"type": "number", "description": "Stop the command after this many milliseconds (default 120000, at most 600000)."},
            "workdir": {"type": "string", "description": "Directory to run in, relative to the working directory."},
            "run_in_background": {"type": "boolean", "description": "Start the command as a background job and answer at once with its id; read it with job_output, stop it with job_kill; you are told when it ends."},
            "sandbox_permissions": {"type": "string", "enum": ["read-only", "workspace-write", "danger-full-access"], "description": "Run this one command in a wider sandbox mode than the session's (the narrowest that suffices); the user is asked first."},
            "justification": {"type": "string", "description": "Why the command needs the wider mode, for the person asked to approve it."}
        },
        "required": ["command", "description"],
        "additionalProperties": false
    })
}

struct Bash {
    ctx: Context,
    jobs: Arc<background::Running>,
    sandbox: Service<SandboxService>,
    config: Arc<BashConfig>,
}

/// The arguments of a call, as the parameters declare them.
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Arguments {
    command: String,
    #[serde(default, rename = "timeoutMs")]
    timeout_ms: Option<f64>,
    #[serde(default)]
    workdir: Option<String>,
    #[serde(default)]
    run_in_background: Option<bool>,
}

/// The canonical value of a run, which `render` turns back into content. `stdout` and
/// `stderr` are what a Code Mode program reads (`(await tools.bash(..)).stdout.text`), shaped
/// as the reference's bash value.
#[derive(Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "camelCase")]
struct RunValue {
    exit_code: Option<i32>,
    timed_out: bool,
    output: String,
    #[serde(default)]
    stdout: Stream,
    #[serde(default)]
    stderr: Stream,
}

/// One output stream of a run: its kept text and whether the cap cut it.
#[derive(Default, Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Stream {
    text: String,
    truncated: bool,
}

/// Why a call produced no run, in words for the model.
#[derive(Debug, thiserror::Error)]
enum BashError {
    #[error("arguments are not valid: {0}")]
    Arguments(serde_json::Error),
    #[error("{0}")]
    Timeout(String),
    #[error("workdir {0} is not a directory")]
    Workdir(String),
    /// The sandbox refused to start the command (no backend, a spawn that failed).
    #[error("{0}")]
    Refused(SeamError),
    #[error("bash: {0}")]
    Wait(String),
    #[error("the command was cancelled; its process group was terminated")]
    Cancelled,
    #[error(
        "run_in_background needs the background job registry (a `jobs` row), and none is loaded; run the command in the foreground"
    )]
    NoJobs,
    #[error("the background job did not start: {0}")]
    Job(SeamError),
}

/// The system-prompt guidance of `bash`.
const GUIDANCE: &str = "Every bash call starts a fresh shell, so pass workdir instead of cd and repeat any environment a command needs. A failed command ends its result with [exit code: N]: read it and find out why before you go on.";

impl Tool for Bash {
    fn spec(&self) -> Json<ToolDecl> {
        let mut decl = ToolDecl::new("bash", DESCRIPTION, parameters());
        decl.concurrency = Concurrency::Parallel;
        // The pipeline's limit is a backstop above bash's own (`timeoutMs`, at most 600 s, then
        // the group's kill grace), so a long command ends with bash's own report.
        decl.timeout_ms = Some(MAX_SHELL_TIMEOUT_MS + self.config.kill_grace_ms + 5_000);
        decl.guidance = Some(Guidance {
            order: 105,
            text: GUIDANCE.to_owned(),
        });
        Json::encode(&decl)
    }

    /// A run's value carries its rendered output: the content is that text.
    fn render(&self, value: Json<Value>) -> ROption<Json<Vec<ContentBlock>>> {
        let value = value
            .decode()
            .ok()
            .and_then(|value| serde_json::from_value::<RunValue>(value).ok());
        match value {
            Some(run) => RSome(Json::encode(&vec![ContentBlock::text(run.output)])),
            None => RNone,
        }
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let ctx = self.ctx.clone();
        let sandbox = self.sandbox.clone();
        let jobs = self.jobs.clone();
        let config = self.config.clone();
        async move {
            let reply = match run(&ctx, &jobs, &sandbox, &config, &call, cancel).await {
                Ok(reply) => reply,
                Err(error) => ToolReply::error(error.to_string()),
            };
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}

/// How a run ended: the process exited by itself, or it was stopped.
enum End<T> {
    Finished(T),
    TimedOut,
    Cancelled,
}

/// Runs one call; an error is a message for the model.
async fn run(
    ctx: &Context,
    jobs: &Arc<background::Running>,
    sandbox: &SandboxService,
    config: &BashConfig,
    call: &CallView,
    cancel: CancelBox,
) -> Result<ToolReply, BashError> {
    let arguments: Arguments =
        serde_json::from_str(&call.arguments).map_err(BashError::Arguments)?;
    let timeout_ms = clamp_timeout_ms(
        arguments.timeout_ms,
        config.timeout_ms,
        MAX_SHELL_TIMEOUT_MS,
    )
    .map_err(|error| BashError::Timeout(error.to_string()))?;
    let cwd = match &arguments.workdir {
        Some(workdir) => Path::new(call.cwd.as_str()).join(workdir),
        None => Path::new(call.cwd.as_str()).to_path_buf(),
    };
    if !cwd.is_dir() {
        return Err(BashError::Workdir(cwd.display().to_string()));
    }
    let command = arguments.command;
    let command_text = command.clone();
    let mut env = vec![EnvVar {
        name: "DSH_SHELL".into(),
        value: "1".into(),
    }];
    if !call.session.is_empty() {
        env.push(EnvVar {
            name: "DSH_SESSION_ID".into(),
            value: call.session.clone(),
        });
    }
    if let Ok(home) = std::env::var("DSH_HOME") {
        env.push(EnvVar {
            name: "DSH_HOME".into(),
            value: home.into(),
        });
    }
    if arguments.run_in_background != Some(true) {
        let asked = client_terminal::Command {
            command: &command,
            cwd: &cwd,
            env: &env,
            timeout_ms,
        };
        if let Some(run) = client_terminal::run(ctx, sandbox, config, call, asked, &cancel).await {
            return run.map(|run| reply(&run));
        }
    }
    let request = SpawnRequest {
        program: "bash".into(),
        args: RVec::from(vec![RString::from("-c"), RString::from(command.as_str())]),
        cwd: RSome(RString::from(cwd.to_string_lossy().as_ref())),
        env: RVec::from(env),
        remove_env: RVec::from(vec![RString::from("DSH_*")]),
        stdin: RNone,
    };
    let registry = match arguments.run_in_background {
        Some(true) => Some(
            ctx.get::<JobsService>(JOBS_SERVICE)
                .ok()
                .flatten()
                .ok_or(BashError::NoJobs)?,
        ),
        _ => None,
    };
    let process = sandbox
        .spawn(
            call.session.clone(),
            call.cwd.clone(),
            call.call_id.clone(),
            request,
        )
        .into_result()
        .map_err(BashError::Refused)?;
    if let Some(registry) = registry {
        let id = background::start(
            ctx,
            registry,
            jobs,
            call.session.as_str(),
            &command_text,
            process,
        )
        .map_err(BashError::Job)?;
        return Ok(ToolReply::text(format!("started background job {id}")));
    }
    let stdout = Arc::new(std::sync::Mutex::new(Tail::new(config.max_output_bytes)));
    let stderr = Arc::new(std::sync::Mutex::new(Tail::new(config.max_output_bytes)));
    let reading = {
        let (stdout, stderr) = (stdout.clone(), stderr.clone());
        let process = &process;
        // Output, then the exit: both inside the deadline, since a command that closes its
        // pipes early (`cmd > log 2>&1`) can still run for a long time.
        async move {
            while let RSome(chunk) = process.next_output().await {
                let tail = match chunk.stream {
                    OutputStream::Stdout => &stdout,
                    OutputStream::Stderr => &stderr,
                };
                lock(tail).push(&chunk.bytes);
            }
            process.wait().await
        }
    };
    let deadline = ctx.sleep(Duration::from_millis(timeout_ms));
    let end = match first_of(reading, first_of(cancel.cancelled(), deadline)).await {
        Either::Left(status) => End::Finished(status),
        Either::Right(Either::Left(())) => End::Cancelled,
        Either::Right(Either::Right(())) => End::TimedOut,
    };
    let (status, timed_out, cancelled) = match end {
        End::Finished(status) => (status, false, false),
        End::TimedOut => (process.terminate(config.kill_grace_ms).await, true, false),
        End::Cancelled => (process.terminate(config.kill_grace_ms).await, false, true),
    };
    let status = status
        .into_result()
        .map_err(|error| BashError::Wait(error.to_string()))?;
    if cancelled {
        return Err(BashError::Cancelled);
    }
    let exit = match (status.code.into_option(), status.signal.into_option()) {
        (Some(code), _) => ExitStatus::Code(code),
        (None, Some(signal)) => ExitStatus::Signal(signal_name(signal)),
        (None, None) => ExitStatus::Code(-1),
    };
    let stderr = lock(&stderr).collect();
    // A write the sandbox stopped fails with EROFS: say so, and how to ask for more. The
    // policy is asked for only then.
    let sandbox_denied = stderr
        .rendered()
        .contains("Read-only file system")
        .then(|| policy_mode(sandbox, call))
        .flatten()
        .filter(|mode| *mode != SandboxMode::DangerFullAccess)
        .map(|mode| mode.as_str().to_owned());
    // Only a confined command runs into the sandbox's limits.
    let limit = limit_reached(&exit, &stderr.text, timed_out).filter(|_| confined(sandbox, call));
    let run = ShellRun {
        limit_reached: limit,
        stdout: lock(&stdout).collect(),
        stderr,
        exit: exit.clone(),
        timed_out,
        timeout_ms,
        escalation_available: sandbox_denied.is_some(),
        sandbox_denied,
    };
    Ok(reply(&run))
}

/// The call's answer: the shell rendering for the model, the streams for the page.
fn reply(run: &ShellRun) -> ToolReply {
    let text = render_shell_result(run);
    let value = RunValue {
        exit_code: match run.exit {
            ExitStatus::Code(code) => Some(code),
            ExitStatus::Signal(_) => None,
        },
        timed_out: run.timed_out,
        output: text.clone(),
        stdout: Stream {
            text: run.stdout.text.clone(),
            truncated: run.stdout.truncated,
        },
        stderr: Stream {
            text: run.stderr.text.clone(),
            truncated: run.stderr.truncated,
        },
    };
    ToolReply::Ok(ToolSuccess {
        value: serde_json::to_value(&value).unwrap_or_default(),
        content: vec![ContentBlock::text(text)],
        meta: None,
        concludes_turn: false,
    })
}

fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".to_owned(),
        2 => "SIGINT".to_owned(),
        9 => "SIGKILL".to_owned(),
        6 => "SIGABRT".to_owned(),
        11 => "SIGSEGV".to_owned(),
        13 => "SIGPIPE".to_owned(),
        15 => "SIGTERM".to_owned(),
        // The sandbox's CPU and file size limits (see `limit_reached`).
        24 => "SIGXCPU".to_owned(),
        25 => "SIGXFSZ".to_owned(),
        other => format!("signal {other}"),
    }
}

pub struct BashPlugin;

impl Plugin for BashPlugin {
    const NAME: &'static str = "tool-bash";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, SANDBOX_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[
        dsh_jobs_seam::JOBS_SERVICE,
        dsh_plugin_api::io::client_terminal::CLIENT_TERMINAL_SERVICE,
    ];
    type Config = BashConfig;

    async fn apply(ctx: Context, config: BashConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let sandbox = ctx.inject::<SandboxService>(SANDBOX_SERVICE)?;
        let jobs = Arc::new(background::Running::default());
        let bash = Bash {
            ctx: ctx.clone(),
            jobs: jobs.clone(),
            sandbox,
            config: Arc::new(config),
        };
        let register = |tool: dsh_tools_seam::ToolBox| {
            tools
                .register(RString::from(ctx.row_id()), RString::new(), tool)
                .into_result()
                .map_err(|error| PluginError::plugin(error.to_string()))
        };
        let registration = register(tool_box(bash))?;
        ctx.on_dispose(move || {
            background::kill_all(&jobs);
            drop(registration);
        })
    }
}

/// The sandbox mode `call`'s commands run under; `None` when its policy does not read.
fn policy_mode(sandbox: &SandboxService, call: &CallView) -> Option<SandboxMode> {
    sandbox
        .policy(call.session.clone(), call.cwd.clone(), call.call_id.clone())
        .decode()
        .ok()
        .map(|policy| policy.mode)
}

/// Whether `call`'s commands run confined (its policy is not full access).
fn confined(sandbox: &SandboxService, call: &CallView) -> bool {
    policy_mode(sandbox, call).is_some_and(|mode| mode != SandboxMode::DangerFullAccess)
}

dsh_plugin_api::export_plugins!(BashPlugin);
