//! Plugin `tool-run-code`: Code Mode. The model writes one JavaScript program (`run_code`:
//! `code`, the body of an async function, and `description`); each `await tools.<name>(args)`
//! in it is a real call through the tool pipeline (policy, approval, permission rules, guards,
//! the sandbox), made with the `tools` service's `run_code_calls` and logged as
//! `tool/code-dispatch-start` / `tool/code-dispatch` under `<call>:code:<n>`; up to
//! `maxParallelCalls` run at once (`Promise.all`). What the program prints with `console.log`
//! and the value it returns form the result; only that reaches the model.
//!
//! The engine is QuickJS through `rquickjs`: a small, maintained engine embedded from its C
//! sources, with no runtime or thread of its own, whose runtime can be given a memory limit, a
//! stack limit and an interrupt callback (the time limit and the turn's cancellation) and can
//! move between threads (`parallel`), so each slice of a program runs on the host's blocking
//! pool and this plugin owns no thread. It starts in well under a millisecond and a few hundred
//! KiB, so every call gets a fresh one and nothing leaks from one program to the next. Boa,
//! the pure-Rust alternative, has no memory limit and a far larger build.
//!
//! `mode` (`native`, `code`, `both`; the bundle takes it from `DSH_TOOLS_MODE`): `native`
//! registers nothing; `both` adds `run_code` beside the native tools; `code` offers the model
//! `run_code` alone: a restriction hides every inherited tool from the sessions of `scope` (a
//! preset's `preset:<id>`), or, with the global `scope` `""`, from the sessions of each working
//! directory as its first agent appears, while the programs' calls are resolved in the scope
//! chain without the hiding scopes, where the native tools are still there. The registry never
//! masks `run_code` itself, so a child agent keeps it too. Wherever `run_code` is offered, the
//! system prompt declares the tools its programs reach (`sdk`), and the images its calls read
//! reach the model after the run (`images`).

mod engine;
mod hide;
mod images;
mod run;
mod sdk;

use std::sync::Arc;
use std::time::Duration;

use abi_stable::std_types::{RNone, ROption, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::Serialize;
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::prelude::*;
use dsh_protocol::{
    Concurrency, ContentBlock, Guidance, OutcomeSummary, ToolDecl, ToolError, ToolReply,
    ToolSuccess,
};
use dsh_tools_seam::{CallView, TOOLS_SERVICE, Tool, ToolsService, tool_box};
use serde_json::{Value, json};

use crate::engine::Limits;
use crate::run::{Ended, Setup};

const NAME: &str = "run_code";

/// Which tools the model is offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", rename_all = "lowercase")]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub enum Mode {
    /// The native tools only (`run_code` is not registered).
    #[default]
    Native,
    /// `run_code` only; its programs call the native tools.
    Code,
    /// The native tools and `run_code`.
    Both,
}

/// Config of `tool-run-code`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct RunCodeConfig {
    pub mode: Mode,
    /// The tool scope `run_code` (and in `code` mode the hiding restriction) goes into: `""`
    /// the global layer, `preset:<id>` a preset's sessions.
    pub scope: String,
    /// Wall time of one program, its tool calls included (ms).
    pub time_limit_ms: u64,
    /// The engine's heap (bytes).
    pub memory_limit_bytes: usize,
    /// The engine's stack (bytes): deep recursion fails before it.
    pub stack_limit_bytes: usize,
    /// What `console.log` may print, and what the return value may add (bytes each); the rest
    /// is cut with a note.
    pub max_output_bytes: usize,
    /// How many of a program's calls run at once.
    pub max_parallel_calls: usize,
}

impl Default for RunCodeConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Native,
            scope: String::new(),
            time_limit_ms: 300_000,
            memory_limit_bytes: 64 << 20,
            stack_limit_bytes: 1 << 20,
            max_output_bytes: 1 << 20,
            max_parallel_calls: 10,
        }
    }
}

const DESCRIPTION: &str = "Execute a JavaScript program against the available tools. Takes two \
required arguments: `code`, the BODY of an async function (top-level `await` and `return` \
work), and `description`, a short summary of what the program does. Call tools as \
`await tools.name(args)` with the arguments the tool takes natively; a call resolves to the \
tool's structured value and rejects with a ToolCallError when the tool fails or is refused. \
Run independent calls together with Promise.all (up to 10 at once). Only what you print \
(console.log) or return is program output: curate it.";

const GUIDANCE: &str = "Code Mode: to use tools, call `run_code` with a JavaScript program. \
Inside it every tool is an async function of one arguments object, `await tools.<name>({...})`, \
with the same arguments as its schema; `tools.bash(...)` resolves to {exitCode, stdout: {text}, \
stderr: {text}, ...}, `tools.read(...)` to {path, offset, lines: [{number, text}], totalLines}. \
Read many files or run many commands in one program (Promise.all for independent calls), and \
print or return only what you need.";

fn spec(config: &RunCodeConfig) -> ToolDecl {
    let mut decl = ToolDecl::new(
        NAME,
        DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The program: the body of an async JavaScript function."
                },
                "description": {
                    "type": "string",
                    "description": "Clear, concise description of what this program does in active voice, 5-10 words (shown in the UI)."
                }
            },
            "required": ["code", "description"]
        }),
    );
    decl.concurrency = Concurrency::Exclusive;
    // Past the program's own limit, so the program's limit is what a slow run reports.
    decl.timeout_ms = Some(config.time_limit_ms.saturating_add(10_000));
    decl.guidance = Some(Guidance {
        order: 150,
        text: GUIDANCE.to_owned(),
    });
    decl
}

/// The arguments (the registry checked them against the schema).
#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Args {
    code: String,
    description: String,
}

/// The result's value: what the program printed and what it returned.
#[derive(Serialize, Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct RunValue {
    logs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<String>,
}

impl RunValue {
    fn text(&self) -> String {
        let parts: Vec<&str> = self
            .logs
            .iter()
            .map(String::as_str)
            .chain(self.result.as_deref())
            .collect();
        match parts.iter().all(|part| part.is_empty()) {
            true => "(run_code completed with no output)".to_owned(),
            false => parts.join("\n"),
        }
    }
}

struct RunCode {
    ctx: Context,
    tools: Arc<Service<ToolsService>>,
    config: RunCodeConfig,
    hidden: Arc<hide::Hidden>,
    images: Arc<images::Pending>,
}

impl RunCode {
    async fn run(&self, call: CallView, cancel: CancelBox) -> ToolReply {
        let args: Args = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(error) => return ToolReply::error(format!("run_code: invalid arguments: {error}")),
        };
        if args.description.trim().is_empty() {
            return ToolReply::error(
                "run_code: `description` is empty; say in a few words what the program does",
            );
        }
        let scope = self.hidden.sub_scope(&call.scope);
        let chain = scope
            .iter()
            .map(|key| RString::from(key.as_str()))
            .collect();
        let names: Vec<String> = match self.tools.schemas(chain).into_result() {
            Ok(schemas) => schemas
                .decode()
                .unwrap_or_default()
                .into_iter()
                .map(|schema| schema.name)
                .filter(|name| name != NAME)
                .collect(),
            Err(error) => {
                return ToolReply::error(format!("run_code: the tools cannot be listed: {error}"));
            }
        };
        let config = &self.config;
        let setup = Setup {
            call,
            scope,
            names,
            limits: Limits {
                memory_bytes: config.memory_limit_bytes,
                stack_bytes: config.stack_limit_bytes,
                output_bytes: config.max_output_bytes,
            },
            time_limit: Duration::from_millis(config.time_limit_ms),
            max_parallel: config.max_parallel_calls,
            images: self.images.clone(),
        };
        let outcome = run::run(&self.ctx, &self.tools, args.code, setup, &cancel).await;
        let meta = json!({
            "calls": outcome.calls,
            "engineStartMicros": u64::try_from(outcome.start.as_micros()).unwrap_or(u64::MAX),
            "enginePeakBytes": outcome.peak_bytes,
        });
        let mut logs = outcome.logs;
        if outcome.truncated {
            logs.push(format!(
                "[output cut at {} bytes (maxOutputBytes)]",
                config.max_output_bytes
            ));
        }
        let reply = match outcome.ended {
            Ended::Returned(result) => {
                let value = RunValue {
                    logs,
                    result: result.map(|text| cap(text, config.max_output_bytes)),
                };
                ToolReply::Ok(ToolSuccess {
                    content: vec![ContentBlock::text(value.text())],
                    value: serde_json::to_value(&value).unwrap_or(Value::Null),
                    meta: None,
                    concludes_turn: false,
                })
            }
            Ended::Failed(failure) => {
                let captured = match logs.is_empty() {
                    true => String::new(),
                    false => format!("\nCaptured output:\n{}", logs.join("\n")),
                };
                ToolReply::Error(
                    ToolError::new(format!("{failure}{captured}"))
                        .coded("CodeRunFailedError", "CODE_RUN_FAILED"),
                )
            }
        };
        reply.with_meta(meta)
    }
}

/// `text` cut to `limit` bytes (on a character boundary), with a note.
fn cap(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[result cut at {limit} bytes (maxOutputBytes)]",
        &text[..cut]
    )
}

impl Tool for RunCode {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&spec(&self.config))
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let tool = RunCode {
            ctx: self.ctx.clone(),
            tools: self.tools.clone(),
            config: self.config.clone(),
            hidden: self.hidden.clone(),
            images: self.images.clone(),
        };
        async move { Json::encode(&tool.run(call, cancel).await) }.into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }

    /// A value is `{logs, result?}`: the content is the printed lines, then the result.
    fn render(&self, value: Json<Value>) -> ROption<Json<Vec<ContentBlock>>> {
        match value
            .decode()
            .ok()
            .and_then(|value| serde_json::from_value::<RunValue>(value).ok())
        {
            Some(value) => RSome(Json::encode(&vec![ContentBlock::text(value.text())])),
            None => RNone,
        }
    }
}

pub struct RunCodePlugin;

impl Plugin for RunCodePlugin {
    const NAME: &'static str = "tool-run-code";
    const INJECT: &'static [&'static str] = &[TOOLS_SERVICE];
    // Looked up when an agent appears, in global `code` mode: whose working directory to hide.
    const OPTIONAL: &'static [&'static str] = &[dsh_agents_seam::AGENTS_SERVICE];
    type Config = RunCodeConfig;

    async fn apply(ctx: Context, config: RunCodeConfig) -> Result<(), PluginError> {
        if config.mode == Mode::Native {
            return Ok(());
        }
        if config.max_parallel_calls == 0 || config.time_limit_ms == 0 {
            return Err(PluginError::new(
                dsh_plugin_api::ErrorKind::Config,
                "maxParallelCalls and timeLimitMs must be at least 1",
            ));
        }
        let tools = Arc::new(ctx.inject::<ToolsService>(TOOLS_SERVICE)?);
        let hidden = Arc::new(hide::Hidden::default());
        if config.mode == Mode::Code {
            hide::install(&ctx, &tools, &hidden, &config.scope)?;
        }
        sdk::install(&ctx, &tools, &hidden)?;
        let images = Arc::new(images::Pending::default());
        images::install(&ctx, &images)?;
        let tool = RunCode {
            ctx: ctx.clone(),
            tools: tools.clone(),
            config: config.clone(),
            hidden: hidden.clone(),
            images,
        };
        let registration = tools
            .register(
                RString::from(ctx.row_id()),
                RString::from(config.scope.as_str()),
                tool_box(tool),
            )
            .into_result()
            .map_err(|error| PluginError::plugin(format!("run_code: {error}")))?;
        ctx.on_dispose(move || {
            drop(registration);
            hidden.release();
        })
    }
}

dsh_plugin_api::export_plugins!(RunCodePlugin);
