//! Plugin `tool-fs`: registers `read`, `write`, `edit`, `glob`, `grep` and `todo_write` with
//! the `tools` service. Bodies are `dsh-tool-fs-core`'s; every file operation of `read`,
//! `write` and `edit` goes through the host's `fs` service (so a sandbox that replaces that row
//! confines them), and each body runs on the host's blocking pool, walks and searches too. Paths resolve against the call's working directory, which
//! is also the workspace root that `write` and `edit` may not leave unless the session runs with
//! full access (`DSH_PERMISSION_MODE=danger-full-access`; `read-only` refuses every mutation).
//! Reads are remembered per session, so an `edit` of a file never read, or changed since, fails
//! with `FS_NOT_OBSERVED` / `FS_STALE_VERSION`. `todo_write` logs `todo/write` in the session.

mod specs;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RNone, ROption, RSome, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_fs_local::{FileSystem, Remote};
use dsh_plugin_api::io::fs::{FS_SERVICE, FsService};
use dsh_plugin_api::lock;
use dsh_plugin_api::prelude::*;
use dsh_session_seam::{SESSION_DISPOSED, append_or_report};
use dsh_tool_fs_core::{
    EditArgs, GlobArgs, GrepArgs, Observations, ReadArgs, SandboxMode, SearchOptions,
    TodoWriteArgs, ToolError, Workspace, WriteArgs, edit, glob, grep, parse_args, read, todo_write,
    write,
};
use dsh_tools_seam::{CallView, CancelBox, Either, TOOLS, Tool, Tool_TO, ToolsService, first_of};
use serde_json::{Value, json};

/// Which tool an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    TodoWrite,
}

const KINDS: [Kind; 6] = [
    Kind::Read,
    Kind::Write,
    Kind::Edit,
    Kind::Glob,
    Kind::Grep,
    Kind::TodoWrite,
];

/// Config of `tool-fs`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct FsConfig {
    /// Tools not to register (by name).
    pub disable: Vec<String>,
}

/// State shared by the six tools of one row.
struct Shared {
    ctx: Context,
    mode: SandboxMode,
    /// The host's `fs` service: every file operation goes through it.
    fs: Arc<dyn FileSystem>,
    /// What each session has read, for the read-before-edit policy.
    observations: Mutex<HashMap<String, Arc<Observations>>>,
}

impl Shared {
    fn observations(&self, session: &str) -> Arc<Observations> {
        lock(&self.observations)
            .entry(session.to_owned())
            .or_insert_with(|| Arc::new(Observations::new()))
            .clone()
    }
}

fn permission_mode() -> SandboxMode {
    match std::env::var("DSH_PERMISSION_MODE").as_deref() {
        Ok("danger-full-access") => SandboxMode::DangerFullAccess,
        Ok("read-only") => SandboxMode::ReadOnly,
        _ => SandboxMode::WorkspaceWrite,
    }
}

struct FsTool {
    kind: Kind,
    shared: Arc<Shared>,
}

fn error_reply(error: &ToolError) -> Value {
    let mut body = json!({ "message": error.message() });
    if let Some(info) = error.info_json() {
        body["name"] = info["name"].clone();
        body["code"] = info["code"].clone();
    }
    json!({ "error": body })
}

fn ok_reply(text: String, meta: Option<Value>) -> Value {
    let mut ok =
        json!({ "value": { "text": text }, "content": [{ "type": "text", "text": text }] });
    if let Some(meta) = meta {
        ok["meta"] = meta;
    }
    json!({ "ok": ok })
}

/// The blocking body of one call: the reply, and for `todo_write` the event to log.
fn run(
    kind: Kind,
    arguments: &Value,
    workspace: &Workspace,
    observations: &Observations,
    stop: Arc<AtomicBool>,
) -> Result<(Value, Option<Value>), ToolError> {
    let options = SearchOptions {
        cancel: Some(stop),
        ..SearchOptions::default()
    };
    Ok(match kind {
        Kind::Read => {
            let output = read(
                &parse_args::<ReadArgs>(arguments)?,
                workspace,
                Some(observations),
            )?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::Write => {
            let output = write(
                &parse_args::<WriteArgs>(arguments)?,
                workspace,
                Some(observations),
            )?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::Edit => {
            let output = edit(
                &parse_args::<EditArgs>(arguments)?,
                workspace,
                Some(observations),
            )?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::Glob => {
            let output = glob(&parse_args::<GlobArgs>(arguments)?, workspace, &options)?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::Grep => {
            let output = grep(&parse_args::<GrepArgs>(arguments)?, workspace, &options)?;
            (ok_reply(output.text, Some(output.meta)), None)
        }
        Kind::TodoWrite => {
            let output = todo_write(&parse_args::<TodoWriteArgs>(arguments)?, false)?;
            (ok_reply(output.text, None), Some(output.event_data))
        }
    })
}

impl Tool for FsTool {
    fn spec(&self) -> RString {
        RString::from(specs::spec(self.kind))
    }

    fn execute(&self, call: CallView, cancel: CancelBox) -> FfiFuture<RString> {
        let (kind, shared) = (self.kind, self.shared.clone());
        async move {
            let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            let workspace = Workspace::new(call.cwd.as_str())
                .with_mode(shared.mode)
                .with_fs(shared.fs.clone());
            let observations = shared.observations(&call.session);
            let stop = Arc::new(AtomicBool::new(false));
            let job_stop = stop.clone();
            let job = shared
                .ctx
                .blocking(move || run(kind, &arguments, &workspace, &observations, job_stop));
            // A search stops at its next entry when the call is cancelled (a walk can be long);
            // a file operation is short and always finishes, so its result stays truthful.
            let ran = match kind {
                Kind::Glob | Kind::Grep => match first_of(job, cancel.cancelled()).await {
                    Either::Left(ran) => ran,
                    Either::Right(()) => {
                        stop.store(true, Ordering::Relaxed);
                        let reply = json!({ "error": { "message": format!("{} was cancelled", specs::name(kind)) } });
                        return RString::from(reply.to_string());
                    }
                },
                _ => job.await,
            };
            let reply = match ran {
                Ok(Ok((reply, event))) => {
                    if let Some(event) = event {
                        // A call outside a session logs nothing.
                        append_or_report(
                            &shared.ctx,
                            "tool-fs",
                            &call.session,
                            "todo/write",
                            &event.to_string(),
                        )
                        .await;
                    }
                    reply
                }
                Ok(Err(error)) => error_reply(&error),
                Err(error) => json!({ "error": { "message": error.to_string() } }),
            };
            RString::from(reply.to_string())
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: RString) -> ROption<RString> {
        RNone
    }

    /// A result's value is `{"text"}`: the content is that text.
    fn render(&self, value: RString) -> ROption<RString> {
        let value: Value = serde_json::from_str(&value).unwrap_or(Value::Null);
        match value["text"].as_str() {
            Some(text) => RSome(RString::from(
                json!([{ "type": "text", "text": text }]).to_string(),
            )),
            None => RNone,
        }
    }
}

pub struct FsPlugin;

impl Plugin for FsPlugin {
    const NAME: &'static str = "tool-fs";
    const INJECT: &'static [&'static str] = &[TOOLS, FS_SERVICE];
    type Config = FsConfig;

    async fn apply(ctx: Context, config: FsConfig) -> Result<(), PluginError> {
        let tools = ctx.inject::<ToolsService>(TOOLS)?;
        for name in &config.disable {
            if !KINDS.iter().any(|kind| specs::name(*kind) == name) {
                return Err(PluginError::new(
                    dsh_plugin_api::ErrorKind::Config,
                    format!(
                        "disable: `{name}` is not one of read, write, edit, glob, grep, todo_write"
                    ),
                ));
            }
        }
        let fs: Arc<dyn FileSystem> = Arc::new(Remote(ctx.inject::<FsService>(FS_SERVICE)?));
        let shared = Arc::new(Shared {
            ctx: ctx.clone(),
            mode: permission_mode(),
            fs,
            observations: Mutex::new(HashMap::new()),
        });
        // A session's reads stop mattering once it is disposed.
        let forget = Arc::downgrade(&shared);
        ctx.on_emit(&SESSION_DISPOSED, move |id: &RString| {
            if let Some(shared) = forget.upgrade() {
                lock(&shared.observations).remove(id.as_str());
            }
        })?;
        let mut held = Vec::new();
        for kind in KINDS {
            if config.disable.iter().any(|name| name == specs::name(kind)) {
                continue;
            }
            let tool = FsTool {
                kind,
                shared: shared.clone(),
            };
            let registration = tools
                .register(
                    RString::from(ctx.row_id()),
                    RString::new(),
                    Tool_TO::from_value(tool, TD_Opaque),
                )
                .into_result()
                .map_err(|error| PluginError::plugin(error.to_string()))?;
            held.push(registration);
        }
        ctx.on_dispose(move || drop(held))
    }
}

dsh_plugin_api::export_plugins!(FsPlugin);
