//! Plugin `tool-pty`: tools over persistent shells on terminals. `bash` (the `minimal`
//! preset's, the reference's `dsh-tool-bash-persistent`) runs each command in one
//! interactive shell per session whose working directory, variables and virtualenv last
//! between calls; the six `terminal_*` tools (the reference's `dsh-tool-terminal`) let the
//! model open, type into, read, signal, list and close terminals of its own (a send in the
//! background is a job of the `jobs` registry, see `background`). `tools` chooses
//! which (default: `bash` alone), `scope` the tool layer they register in (default the global
//! one; a preset's rows mount it with `preset:<id>`, where its `bash` shadows `tool-bash`'s for
//! that preset's sessions only). Every shell starts through the sandbox's `sandbox_pty` on the
//! host's terminals (`subprocess_pty`), confined like any command; the plugin owns no thread:
//! a task on the host runtime reads each terminal. A session's shells end with the session
//! (`session/disposed`), all of them with the row.

mod background;
mod screen;
mod shell;
mod terminal;
mod terminals;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{Service, lock};
use dsh_protocol::{ContentBlock, OutcomeSummary, ToolDecl, ToolReply};
use dsh_sandbox_seam::{SANDBOX_PTY_SERVICE, SANDBOX_SERVICE, SandboxPtyService, SandboxService};
use dsh_sessions_seam::SESSION_DISPOSED;
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};

use crate::terminals::Owned;

/// Config of `tool-pty`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct PtyConfig {
    /// The tool layer the tools register in ("" the global one, `preset:<id>` a preset's).
    pub scope: String,
    /// Which tools: `bash` (the persistent shell) and/or `terminal` (the six `terminal_*`).
    pub tools: Vec<String>,
    /// How long a `bash` command may run before it and its shell are stopped (ms).
    pub timeout_ms: u64,
    /// Bytes of a `bash` command's output kept (the tail).
    pub max_output_bytes: usize,
    /// How long `terminal_send` (and `terminal_open`) wait at most (ms).
    pub send_timeout_ms: u64,
    /// Output silence after which `terminal_send` returns (`inferred_idle`, ms).
    pub silence_ms: u64,
    /// Bytes of a `terminal_send` result kept (the tail).
    pub max_result_bytes: usize,
}

impl Default for PtyConfig {
    fn default() -> Self {
        Self {
            scope: String::new(),
            tools: vec!["bash".to_owned()],
            timeout_ms: 120_000,
            max_output_bytes: 64_000,
            send_timeout_ms: 30_000,
            silence_ms: 2_000,
            max_result_bytes: 16_000,
        }
    }
}

/// What the tools share: the row's shells and terminals.
pub(crate) struct Shared {
    pub(crate) ctx: Context,
    pub(crate) sandbox: Service<SandboxPtyService>,
    pub(crate) config: PtyConfig,
    /// Each session's persistent shell.
    pub(crate) shells: shell::Slots,
    /// Open terminals by id.
    pub(crate) terminals: Mutex<BTreeMap<String, Owned>>,
    pub(crate) next_terminal: AtomicU64,
}

impl Shared {
    /// The sandbox mode of `call`'s session now (`None` without the `sandbox` service).
    pub(crate) fn mode_of(&self, call: &CallView) -> Option<String> {
        let sandbox = self
            .ctx
            .get::<SandboxService>(SANDBOX_SERVICE)
            .ok()
            .flatten()?;
        let policy = sandbox
            .policy(call.session.clone(), call.cwd.clone(), RString::new())
            .decode()
            .ok()?;
        Some(policy.mode.as_str().to_owned())
    }

    /// Ends the shells and terminals of `session` (all when `None`). Each shell's last owner
    /// drops it once its reader stops, which hangs its terminal up and kills its group.
    fn end(&self, session: Option<&str>) {
        let shells: Vec<shell::Slot> = {
            let mut slots = lock(&self.shells);
            let ids: Vec<String> = slots
                .keys()
                .filter(|id| session.is_none_or(|session| session == id.as_str()))
                .cloned()
                .collect();
            ids.iter().filter_map(|id| slots.remove(id)).collect()
        };
        for slot in shells {
            slot.abandon(&self.ctx);
        }
        let mut terminals = lock(&self.terminals);
        terminals.retain(|_, owned| {
            let ends = session.is_none_or(|session| session == owned.session);
            if ends {
                owned.terminal.abandon(&self.ctx);
            }
            !ends
        });
    }
}

/// One registered tool: its name picks what it runs.
struct PtyTool {
    shared: Arc<Shared>,
    decl: ToolDecl,
}

impl Tool for PtyTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&self.decl)
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let shared = self.shared.clone();
        let name = self.decl.name.clone();
        async move {
            let reply = match name.as_str() {
                "bash" => shell::run(&shared, &call, cancel).await,
                tool => terminals::run(&shared, tool, &call, cancel).await,
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

    /// A `bash` value is `{"output"}`: the content is that text.
    fn render(&self, value: Json<serde_json::Value>) -> ROption<Json<Vec<ContentBlock>>> {
        let output = value
            .decode()
            .ok()
            .filter(|_| self.decl.name == "bash")
            .and_then(|value| serde_json::from_value::<BashValue>(value).ok())
            .map(|value| value.output);
        match output {
            Some(output) => ROption::RSome(Json::encode(&vec![ContentBlock::text(output)])),
            None => RNone,
        }
    }
}

/// Why a call cannot go on: the tool error's text, for the model.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(pub(crate) String);

/// A `bash` call's value.
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct BashValue {
    output: String,
}

fn config_error(message: String, path: String) -> PluginError {
    PluginError {
        kind: dsh_plugin_api::ErrorKind::Config,
        message: message.into(),
        path: abi_stable::std_types::RSome(path.into()),
    }
}

pub struct PtyPlugin;

impl Plugin for PtyPlugin {
    const NAME: &'static str = "tool-pty";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE, SANDBOX_PTY_SERVICE];
    const OPTIONAL: &'static [&'static str] = &[dsh_jobs_seam::JOBS_SERVICE, SANDBOX_SERVICE];
    type Config = PtyConfig;

    async fn apply(ctx: Context, config: PtyConfig) -> Result<(), PluginError> {
        let mut decls = Vec::new();
        for (index, tool) in config.tools.iter().enumerate() {
            match tool.as_str() {
                "bash" => {
                    let mut decl = ToolDecl::new("bash", shell::DESCRIPTION, shell::parameters());
                    // The pipeline's limit sits above the shell's own, so a long command
                    // ends with this tool's report.
                    decl.timeout_ms = Some(config.timeout_ms + 10_000);
                    decls.push(decl);
                }
                "terminal" => {
                    for (name, description, parameters) in terminals::specs() {
                        let mut decl = ToolDecl::new(name, description, parameters);
                        decl.timeout_ms = Some(config.send_timeout_ms + 10_000);
                        decls.push(decl);
                    }
                }
                other => {
                    return Err(config_error(
                        format!("invalid config: tool `{other}` (expected bash or terminal)"),
                        format!("$.tools[{index}]"),
                    ));
                }
            }
        }
        let tools = ctx.inject::<ToolsService>(TOOLS_SERVICE)?;
        let sandbox = ctx.inject::<SandboxPtyService>(SANDBOX_PTY_SERVICE)?;
        let scope = RString::from(config.scope.as_str());
        let shared = Arc::new(Shared {
            ctx: ctx.clone(),
            sandbox,
            config,
            shells: Mutex::new(HashMap::new()),
            terminals: Mutex::new(BTreeMap::new()),
            next_terminal: AtomicU64::new(1),
        });
        let mut registrations = Vec::new();
        for decl in decls {
            let tool = PtyTool {
                shared: shared.clone(),
                decl,
            };
            let registration = tools
                .register(RString::from(ctx.row_id()), scope.clone(), tool_box(tool))
                .into_result()
                .map_err(|error| PluginError::plugin(error.to_string()))?;
            registrations.push(registration);
        }
        let ending = shared.clone();
        ctx.on_emit(&SESSION_DISPOSED, move |session: &RString| {
            ending.end(Some(session.as_str()));
        })?;
        ctx.on_dispose(move || {
            shared.end(None);
            drop(registrations);
        })
    }
}

dsh_plugin_api::export_plugins!(PtyPlugin);
